#!/usr/bin/env bash
# Boot, reach and stop the real-kernel test VM (molecule/vm, docs/testing.md).
#
#   tools/vm.sh start RUN_DIR   build the image if needed (tools/vm-image.sh), boot a fresh
#                               copy-on-write disk on top of it, wait for SSH; writes
#                               RUN_DIR/instance.json (address, port, key) and ssh_config
#                               (and the port of its test mirror, served from the image's
#                               mirror/ on 127.0.0.1: molecule/airgap_host/mirror.sh)
#   tools/vm.sh stop RUN_DIR    power the VM off, remove its disk, stop the mirror
#
# qemu runs with software emulation (-accel tcg; KVM is exposed on the build hosts but hangs),
# user-mode networking only, and SSH forwarded to a free port on 127.0.0.1. The kernel and
# initramfs are passed to qemu directly (no boot loader in the image): a reboot from inside
# the guest resets the machine and boots the same kernel again, which is what host_prep's
# reboot needs. The guest's console goes to RUN_DIR/console.log.
#
# Variables: GPUSHARE_VM_MEMORY (MiB, default 1536), GPUSHARE_VM_CPUS (default 1),
# GPUSHARE_VM_BOOT_TIMEOUT (seconds until SSH answers, default 1200: 90 s on an idle
# machine, several minutes when other work takes the cores), and those of vm-image.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf 'vm: %s\n' "$*" >&2; }
mirror_sh="${here}/../molecule/airgap_host/mirror.sh"

usage() { log "usage: $0 start|stop RUN_DIR"; exit 2; }
[[ $# -eq 2 ]] || usage
action="$1"
run_dir="$2"

ssh_opts() {
  printf '%s\n' -F "${run_dir}/ssh_config" gpushare-vm
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

stop() {
  if [[ -f ${run_dir}/qemu.pid ]]; then
    local pid
    pid="$(cat "${run_dir}/qemu.pid")"
    if kill -0 "${pid}" 2>/dev/null; then
      # The VM is disposable: no clean shutdown needed, its disk is thrown away.
      kill "${pid}" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "${pid}" 2>/dev/null || break; sleep 0.2; done
      kill -9 "${pid}" 2>/dev/null || true
    fi
    rm -f "${run_dir}/qemu.pid"
  fi
  rm -f "${run_dir}/disk.qcow2"
  bash "${mirror_sh}" stop "${run_dir}/mirror" 2>/dev/null
}

start() {
  if ! command -v qemu-system-x86_64 >/dev/null 2>&1 || ! command -v qemu-img >/dev/null 2>&1; then
    log "qemu is missing; install it with: apt-get install qemu-system-x86 qemu-utils"; exit 1
  fi
  local image t0 t_image port
  t0=$(date +%s)
  image="$(bash "${here}/vm-image.sh")"
  t_image=$(( $(date +%s) - t0 ))
  mkdir -p "${run_dir}"
  stop
  # The image's test mirror (vm-image.sh), for the guest at http://10.0.2.2:<mirror port>.
  bash "${mirror_sh}" start "${image}/mirror" "${run_dir}/mirror" 2>/dev/null
  port="$(free_port)"
  qemu-img create -q -f qcow2 -F raw -b "${image}/disk.img" "${run_dir}/disk.qcow2"
  : >"${run_dir}/console.log"
  # One vCPU by default: make test runs the VM beside other work on two host cores, and a
  # second vCPU whose thread the host deschedules leaves the first spinning in the guest
  # kernel (IPIs, TLB shootdowns, spinlocks) with no paravirtual help under TCG. The same
  # scenario beside the integration suite: qemu 1244 CPU s with two vCPUs, 886 s with one
  # (docs/testing.md, "The real-kernel VM").
  qemu-system-x86_64 \
    -name gpushare-vm \
    -machine q35 -accel tcg,thread=multi -cpu max \
    -smp "${GPUSHARE_VM_CPUS:-1}" -m "${GPUSHARE_VM_MEMORY:-1536}" \
    -kernel "${image}/vmlinuz" -initrd "${image}/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 quiet net.ifnames=0 systemd.show_status=false" \
    -drive "file=${run_dir}/disk.qcow2,if=virtio,format=qcow2,cache=unsafe,discard=unmap" \
    -netdev "user,id=net0,hostfwd=tcp:127.0.0.1:${port}-:22" -device virtio-net-pci,netdev=net0 \
    -device virtio-rng-pci \
    -display none -serial "file:${run_dir}/console.log" -monitor none \
    -daemonize -pidfile "${run_dir}/qemu.pid"

  cat >"${run_dir}/ssh_config" <<EOF
Host gpushare-vm
  HostName 127.0.0.1
  Port ${port}
  User root
  IdentityFile ${image}/id_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  ConnectTimeout 10
  ServerAliveInterval 15
EOF
  cat >"${run_dir}/instance.json" <<EOF
{"address": "127.0.0.1", "port": ${port}, "user": "root", "identity_file": "${image}/id_ed25519", "image": "${image}", "mirror_port": $(cat "${run_dir}/mirror/port")}
EOF

  local t1 timeout
  t1=$(date +%s)
  timeout="${GPUSHARE_VM_BOOT_TIMEOUT:-1200}"
  # shellcheck disable=SC2046
  until ssh $(ssh_opts) -o BatchMode=yes true 2>/dev/null; do
    if ! kill -0 "$(cat "${run_dir}/qemu.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
      log "qemu exited during boot; console:"; tail -n 40 "${run_dir}/console.log" >&2; exit 1
    fi
    if (( $(date +%s) - t1 > timeout )); then
      log "no SSH after ${timeout} s; console:"; tail -n 40 "${run_dir}/console.log" >&2; stop; exit 1
    fi
    sleep 3
  done
  log "image ${t_image} s, boot to SSH $(( $(date +%s) - t1 )) s, port ${port} ($(basename "${image}"))"
}

case "${action}" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
