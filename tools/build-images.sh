#!/usr/bin/env bash
# Build the systemd container images the Molecule scenarios run on.
#
# Each image is a debootstrap root filesystem with systemd (as /sbin/init), python3 and the
# few packages Ansible and testinfra need, imported into podman as
# localhost/gpushare-molecule-<name>:latest. Rootfs and package caches live in build/images/.
# An image whose label gpushare.inputs matches the hash of this script and its settings is
# kept as it is, so a re-run is a fast no-op; change the script or a variable to rebuild.
#
# Variables:
#   GPUSHARE_IMAGES        space-separated list of images: debian12 (default), ubuntu2204,
#                          ubuntu2404. Ubuntu needs a reachable Ubuntu mirror and the
#                          ubuntu-keyring file.
#   GPUSHARE_DEBIAN_MIRROR default http://deb.debian.org/debian
#   GPUSHARE_UBUNTU_MIRROR default http://archive.ubuntu.com/ubuntu
#   GPUSHARE_IMAGE_REBUILD set to 1 to rebuild even when the image is current.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${repo_root}/build/images"
images="${GPUSHARE_IMAGES:-debian12}"
debian_mirror="${GPUSHARE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ubuntu_mirror="${GPUSHARE_UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}"
ubuntu_keyring="${GPUSHARE_UBUNTU_KEYRING:-/usr/share/keyrings/ubuntu-archive-keyring.gpg}"

# What Ansible modules (apt needs python3-apt), testinfra and the roles' probes use.
packages="systemd,systemd-sysv,dbus,python3,python3-apt,sudo,procps,iproute2,ca-certificates,gnupg,kmod,iptables"

log() { printf 'build-images: %s\n' "$*" >&2; }

if [[ ${EUID} -ne 0 ]]; then
  log "must run as root (debootstrap and rootful podman); try: sudo make images"
  exit 1
fi
for tool in debootstrap podman; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    log "${tool} is missing; install it with: apt-get install podman runc debootstrap"
    exit 1
  fi
done
export CONTAINERS_CONF="${CONTAINERS_CONF:-${repo_root}/molecule/_shared/containers.conf}"

mirror_reachable() {
  # A Release file answers when the suite exists on the mirror; time out quickly offline.
  python3 - "$1" "$2" <<'PY'
import sys, urllib.request
url = f"{sys.argv[1].rstrip('/')}/dists/{sys.argv[2]}/Release"
try:
    urllib.request.urlopen(url, timeout=10).close()
except Exception as exc:  # any failure means we cannot build from it
    print(f"{url}: {exc}", file=sys.stderr)
    sys.exit(1)
PY
}

build_one() {
  local name="$1" suite mirror components keyring_opt=()
  case "${name}" in
    debian12) suite=bookworm; mirror="${debian_mirror}"; components=main ;;
    ubuntu2204) suite=jammy; mirror="${ubuntu_mirror}"; components=main,universe ;;
    ubuntu2404) suite=noble; mirror="${ubuntu_mirror}"; components=main,universe ;;
    *) log "unknown image '${name}' (known: debian12 ubuntu2204 ubuntu2404)"; return 1 ;;
  esac
  if [[ ${name} == ubuntu* ]]; then
    if [[ ! -r ${ubuntu_keyring} ]]; then
      log "${name}: Ubuntu archive keyring ${ubuntu_keyring} not found (set GPUSHARE_UBUNTU_KEYRING)"
      return 1
    fi
    keyring_opt=(--keyring="${ubuntu_keyring}")
  fi

  local tag="localhost/gpushare-molecule-${name}:latest"
  local inputs
  inputs="$(
    {
      cat "${BASH_SOURCE[0]}"
      printf '%s\n' "${name}" "${suite}" "${mirror}" "${components}" "${packages}"
    } | sha256sum | cut -c1-16
  )"
  if [[ ${GPUSHARE_IMAGE_REBUILD:-0} != 1 ]] && podman image exists "${tag}"; then
    local current
    current="$(podman image inspect --format '{{ index .Config.Labels "gpushare.inputs" }}' "${tag}" 2>/dev/null || true)"
    if [[ ${current} == "${inputs}" ]]; then
      log "${tag} is current (inputs ${inputs}); nothing to do"
      return 0
    fi
    log "${tag} was built from other inputs (${current:-none}); rebuilding"
  fi

  if ! mirror_reachable "${mirror}" "${suite}"; then
    log "${name}: mirror ${mirror} does not serve ${suite}; set GPUSHARE_$( [[ ${name} == ubuntu* ]] && echo UBUNTU || echo DEBIAN )_MIRROR to a reachable one"
    return 1
  fi

  local rootfs="${build_dir}/${name}/rootfs" cache="${build_dir}/${name}/debs"
  mkdir -p "${cache}"
  rm -rf "${rootfs}"
  log "${name}: debootstrap ${suite} from ${mirror}"
  debootstrap --variant=minbase --components="${components}" --include="${packages}" \
    --cache-dir="${cache}" "${keyring_opt[@]}" "${suite}" "${rootfs}" "${mirror}" >"${build_dir}/${name}/debootstrap.log" 2>&1 || {
      log "${name}: debootstrap failed, see ${build_dir}/${name}/debootstrap.log"; tail -n 20 "${build_dir}/${name}/debootstrap.log" >&2; return 1; }

  # Container-friendly systemd: no consoles or hardware units, and an empty machine-id that
  # systemd fills at boot. The apt lists stay: check mode cannot refresh them, and roles
  # refresh them themselves once they are older than their cache_valid_time.
  local unit
  for unit in getty.target console-getty.service systemd-udevd.service systemd-udev-trigger.service \
      systemd-modules-load.service sys-kernel-config.mount sys-kernel-debug.mount \
      systemd-remount-fs.service systemd-logind.service; do
    ln -sfn /dev/null "${rootfs}/etc/systemd/system/${unit}"
  done
  : >"${rootfs}/etc/machine-id"
  rm -f "${rootfs}/etc/hostname"
  printf 'APT::Install-Recommends "false";\n' >"${rootfs}/etc/apt/apt.conf.d/90gpushare-no-recommends"
  if [[ ${name} == debian12 ]]; then
    printf 'deb %s %s main\ndeb %s %s-updates main\n' "${mirror}" "${suite}" "${mirror}" "${suite}" \
      >"${rootfs}/etc/apt/sources.list"
  fi
  chroot "${rootfs}" apt-get update -qq >>"${build_dir}/${name}/debootstrap.log" 2>&1 || {
    log "${name}: apt-get update in the new root failed, see ${build_dir}/${name}/debootstrap.log"; return 1; }
  rm -f "${rootfs}"/var/cache/apt/*.bin "${rootfs}"/var/cache/apt/archives/*.deb

  log "${name}: importing as ${tag}"
  tar -C "${rootfs}" --numeric-owner -c . | podman import --quiet \
    --change 'CMD ["/sbin/init"]' \
    --change 'STOPSIGNAL SIGRTMIN+3' \
    --change 'ENV container=podman' \
    --change "LABEL gpushare.inputs=${inputs}" \
    - "${tag}" >/dev/null
  rm -rf "${rootfs}"
  log "${name}: built ${tag}"
}

status=0
for image in ${images}; do
  build_one "${image}" || status=1
done
exit "${status}"
