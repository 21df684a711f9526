#!/usr/bin/env bash
# Build the disk image of the real-kernel test VM (molecule/vm, docs/testing.md).
#
# A Debian 12 root filesystem from debootstrap with Debian's own kernel (linux-image-amd64)
# and its initramfs, systemd, OpenSSH and the packages host_prep installs, written into an
# ext4 disk image with `mkfs.ext4 -d` (no loop device, no mount). tools/vm.sh boots it with
# the kernel and initramfs taken from the image, under qemu software emulation.
#
# The result is cached outside the repository, in a directory named by the hash of this
# script and its settings; a re-run with the same inputs is a no-op. The directory holds:
#   disk.img        the root filesystem (ext4, raw, sparse), never written by a run
#   vmlinuz, initrd.img   the kernel and initramfs qemu boots (copied out of the image)
#   id_ed25519[.pub]      the key root logs in with over SSH
#   inputs          what the hash was computed from
# and prints that directory on stdout.
#
# Variables:
#   GPUSHARE_VM_CACHE      cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/gpushare/vm)
#   GPUSHARE_DEBIAN_MIRROR default http://deb.debian.org/debian
#   GPUSHARE_VM_REBUILD    set to 1 to rebuild even when a current image exists
set -euo pipefail

cache_root="${GPUSHARE_VM_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/gpushare/vm}"
mirror="${GPUSHARE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite=bookworm
disk_size=3G
swap_mib=128

# Boot and login: kernel, initramfs, udev, systemd, sshd. Ansible: python3 (python3-apt for
# the apt module). host_prep's own packages (vars/Debian.yml base list, chrony, ufw,
# mokutil, python3-debian) are installed here so a converge needs no download: the VM is
# there for the kernel steps, the package steps are covered by the container scenarios.
# The packages host_prep installs on Debian (vars/Debian.yml, tasks/gpu.yml): in the image,
# and in the test mirror the converge refreshes its lists from.
role_packages="ca-certificates curl gpg conntrack socat ethtool iproute2 chrony ufw mokutil python3-debian"
packages="linux-image-amd64,initramfs-tools,systemd,systemd-sysv,udev,dbus,openssh-server,\
python3,python3-apt,sudo,procps,iproute2,kmod,e2fsprogs,iptables,nftables,\
ca-certificates,curl,gpg,conntrack,socat,ethtool,chrony,ufw,mokutil,python3-debian"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf 'vm-image: %s\n' "$*" >&2; }

inputs="$(
  {
    cat "${BASH_SOURCE[0]}" "${here}/../molecule/airgap_host/mirror.sh"
    printf '%s\n' "${suite}" "${mirror}" "${packages}" "${role_packages}" "${disk_size}" "${swap_mib}"
  } | sha256sum | cut -c1-16
)"
out="${cache_root}/debian12-${inputs}"

if [[ ${GPUSHARE_VM_REBUILD:-0} != 1 && -f ${out}/complete ]]; then
  log "image ${out} is current (inputs ${inputs}); nothing to do"
  printf '%s\n' "${out}"
  exit 0
fi

if [[ ${EUID} -ne 0 ]]; then
  log "must run as root (debootstrap); try: sudo $0"
  exit 1
fi
for tool in debootstrap mkfs.ext4 ssh-keygen dpkg-scanpackages gpg; do
  command -v "${tool}" >/dev/null 2>&1 || {
    log "${tool} is missing; install it with: apt-get install debootstrap e2fsprogs openssh-client dpkg-dev gpg"; exit 1; }
done

start=$(date +%s)
work="${cache_root}/.build-${inputs}"
rootfs="${work}/rootfs"
rm -rf "${work}" "${out}"
mkdir -p "${work}" "${cache_root}/debs"
trap 'rm -rf "${work}"' EXIT

log "debootstrap ${suite} from ${mirror} (log: ${work}/debootstrap.log)"
if ! debootstrap --variant=minbase --include="${packages}" --cache-dir="${cache_root}/debs" \
    "${suite}" "${rootfs}" "${mirror}" >"${work}/debootstrap.log" 2>&1; then
  log "debootstrap failed:"
  tail -n 30 "${work}/debootstrap.log" >&2
  exit 1
fi

# Root filesystem on the virtio disk, and a swap file host_prep has to turn off for good.
cat >"${rootfs}/etc/fstab" <<'EOF'
/dev/vda / ext4 defaults,errors=remount-ro 0 1
/swapfile none swap sw 0 0
EOF
dd if=/dev/zero of="${rootfs}/swapfile" bs=1M count="${swap_mib}" status=none
chmod 0600 "${rootfs}/swapfile"
chroot "${rootfs}" mkswap /swapfile >/dev/null

# The initramfs the converge rebuilds (nouveau blacklisted) holds only the modules this VM
# uses: Debian's MODULES=most copies every driver module and compresses them, over twenty
# minutes under software emulation; MODULES=dep keeps the rebuild real, on the running
# kernel's own modules. (The initramfs qemu boots was built here with MODULES=most: dep
# cannot tell a chroot's devices from the build host's.)
printf 'MODULES=dep\n' >"${rootfs}/etc/initramfs-tools/conf.d/gpushare-vm.conf"

printf 'gpushare-vm\n' >"${rootfs}/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 gpushare-vm\n' >"${rootfs}/etc/hosts"
: >"${rootfs}/etc/machine-id"
# The stock source: host_prep points it at the test mirror (gpushare_mirrors.apt.debian).
printf 'deb http://deb.debian.org/debian %s main\n' "${suite}" >"${rootfs}/etc/apt/sources.list"

# The test mirror: a signed apt repository of the packages host_prep installs, served by
# tools/vm.sh on the controller's 127.0.0.1, which the guest reaches as 10.0.2.2. The
# packages are installed in the image already; the converge still refreshes the lists and
# checks them, against a small index instead of the whole archive's (whose refresh takes
# minutes under software emulation).
mkdir -p "${work}/out" "${work}/role-debs"
for package in ${role_packages}; do
  found=0
  for deb in "${cache_root}/debs/${package}_"*.deb; do
    [[ -f ${deb} ]] || continue
    cp "${deb}" "${work}/role-debs/"
    found=1
  done
  (( found )) || { log "no ${package}_*.deb in ${cache_root}/debs after debootstrap"; exit 1; }
done
bash "${here}/../molecule/airgap_host/mirror.sh" debian "${work}/out/mirror" "${work}/role-debs"
install -m 0644 "${work}/out/mirror/mirror.asc" "${rootfs}/etc/apt/trusted.gpg.d/gpushare-vm-mirror.asc"

# qemu user-mode networking: DHCP from 10.0.2.2, DNS at 10.0.2.3.
cat >"${rootfs}/etc/systemd/network/10-gpushare-vm.network" <<'EOF'
[Match]
Name=en* eth*

[Network]
DHCP=ipv4
EOF
ln -sfn /lib/systemd/system/systemd-networkd.service \
  "${rootfs}/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
printf 'nameserver 10.0.2.3\n' >"${rootfs}/etc/resolv.conf"

# Timers and units that only cost boot time under software emulation.
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
    fstrim.timer systemd-networkd-wait-online.service; do
  ln -sfn /dev/null "${rootfs}/etc/systemd/system/${unit}"
done

# SSH: root with this image's key only.
ssh-keygen -q -t ed25519 -N '' -C gpushare-vm -f "${work}/id_ed25519"
install -d -m 0700 "${rootfs}/root/.ssh"
install -m 0600 "${work}/id_ed25519.pub" "${rootfs}/root/.ssh/authorized_keys"
printf 'PasswordAuthentication no\nUseDNS no\n' >"${rootfs}/etc/ssh/sshd_config.d/90-gpushare-vm.conf"

rm -f "${rootfs}"/var/cache/apt/*.bin "${rootfs}"/var/cache/apt/archives/*.deb

kernel="$(find "${rootfs}/boot" -maxdepth 1 -name 'vmlinuz-*' | sort | tail -n 1)"
initrd="$(find "${rootfs}/boot" -maxdepth 1 -name 'initrd.img-*' | sort | tail -n 1)"
if [[ -z ${kernel} || -z ${initrd} ]]; then
  log "no kernel or initramfs in ${rootfs}/boot"; exit 1
fi

cp "${kernel}" "${work}/out/vmlinuz"
cp "${initrd}" "${work}/out/initrd.img"
mv "${work}/id_ed25519" "${work}/id_ed25519.pub" "${work}/out/"
truncate -s "${disk_size}" "${work}/out/disk.img"
mkfs.ext4 -q -F -L gpushare-vm -d "${rootfs}" "${work}/out/disk.img"
{
  printf 'inputs %s\nsuite %s\nmirror %s\nkernel %s\n' "${inputs}" "${suite}" "${mirror}" "$(basename "${kernel}")"
  printf 'packages %s\n' "${packages}"
} >"${work}/out/inputs"
touch "${work}/out/complete"
mv "${work}/out" "${out}"
log "built ${out} in $(( $(date +%s) - start )) s ($(basename "${kernel}"))"
printf '%s\n' "${out}"
