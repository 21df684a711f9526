#!/usr/bin/env bash
# The local apt mirror of the airgap_host Molecule scenario: real Debian 12 packages in
# signed apt repositories, served on 127.0.0.1 only.
#
#   mirror.sh build CACHE WWW STATUS "DISTRIBUTION PACKAGES" "DOCKER-LAYOUT PACKAGES" K8S_PATH
#       Downloads (into CACHE, reused while the inputs stay the same) the named packages plus
#       every dependency the image lacks: the image's dpkg status file STATUS tells apt what
#       is installed already. Then writes WWW, signed with a throw-away key:
#         WWW/debian/             dists/bookworm/main        the distribution's packages
#                                 dists/bookworm-updates     empty (its packages are in
#                                                            bookworm), for the stock sources
#         WWW/linux/debian/       dists/bookworm/stable      the layout of Docker's repository
#                                                            (key at linux/debian/gpg)
#         WWW/K8S_PATH/           flat repository, empty     the layout of pkgs.k8s.io
#                                                            (key at K8S_PATH/Release.key)
#         WWW/mirror.asc          the signing key
#       The second package set only holds what the first one does not, so the test can tell
#       which repository each package came from.
#   mirror.sh debian WWW DEBS   Only WWW/debian and WWW/mirror.asc, from the .deb files in
#                               the folder DEBS (nothing downloaded): the real-kernel VM's
#                               mirror (tools/vm-image.sh).
#   mirror.sh start WWW RUN     Serves WWW on 127.0.0.1 on a free port; writes RUN/port,
#                               RUN/pid and the request log RUN/access.log.
#   mirror.sh stop RUN          Stops the server started by `start`.
#
# Variables: GPUSHARE_DEBIAN_MIRROR (default http://deb.debian.org/debian), where the
# packages are downloaded from on the controller.
set -euo pipefail

debian_mirror="${GPUSHARE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite=bookworm

log() { printf 'airgap mirror: %s\n' "$*" >&2; }

# apt on the controller, with its own sources, lists and cache, answering for the image:
# its dpkg status is the image's, so only what the image lacks is resolved and downloaded.
apt_opts() {
  local cache="$1" status="$2"
  printf '%s\n' \
    -o "Dir::Etc::SourceList=${cache}/apt/sources.list" \
    -o "Dir::Etc::SourceParts=${cache}/apt/empty" \
    -o "Dir::Etc::Preferences=${cache}/apt/empty/none" \
    -o "Dir::Etc::PreferencesParts=${cache}/apt/empty" \
    -o "Dir::State=${cache}/apt/state" \
    -o "Dir::State::Lists=${cache}/apt/lists" \
    -o "Dir::State::status=${status}" \
    -o "Dir::Cache=${cache}/apt/cache" \
    -o "APT::Install-Recommends=false" \
    -o "APT::Architecture=amd64" \
    -o "Debug::NoLocking=true" \
    -o "APT::Sandbox::User=root"
}

# Package names and versions `apt-get install` would add to the image.
resolve() {
  local -a opts
  mapfile -t opts < <(apt_opts "$1" "$2")
  shift 2
  apt-get "${opts[@]}" -qq -s install "$@" | awk '$1 == "Inst" { gsub(/[()]/, "", $3); print $2 "=" $3 }' | sort
}

download() {
  local cache="$1" status="$2" dir="$3"
  shift 3
  local -a opts
  mapfile -t opts < <(apt_opts "${cache}" "${status}")
  mkdir -p "${dir}"
  [[ $# -eq 0 ]] || (cd "${dir}" && apt-get "${opts[@]}" -qq download "$@")
}

# Release file of an apt repository: checksums of every index below DIR.
write_release() {
  local dir="$1"
  shift
  {
    printf '%s\n' "$@"
    printf 'Date: %s\n' "$(LC_ALL=C date -Ru)"
    printf 'SHA256:\n'
    (cd "${dir}" && find . -type f \( -name Packages -o -name Packages.gz \) -printf '%P\n' | sort |
      while read -r index; do
        printf ' %s %s %s\n' "$(sha256sum "${index}" | cut -d' ' -f1)" "$(stat -c %s "${index}")" "${index}"
      done)
  } >"${dir}/Release"
}

# Packages index of the .deb files under DIR/pool, written to DIR/INDEX_DIR.
write_packages() {
  local dir="$1" index_dir="$2"
  mkdir -p "${dir}/${index_dir}"
  (cd "${dir}" && dpkg-scanpackages --multiversion pool /dev/null 2>/dev/null) >"${dir}/${index_dir}/Packages"
  gzip -9nkf "${dir}/${index_dir}/Packages"
}

build() {
  local cache="$1" www="$2" status="$3" dist_packages="$4" docker_packages="$5" k8s_path="$6"
  local key tool
  for tool in apt-get dpkg-scanpackages gpg gpgconf gzip; do
    if ! command -v "${tool}" >/dev/null 2>&1; then
      log "${tool} is missing; install it with: apt-get install apt dpkg-dev gpg gzip"
      exit 1
    fi
  done
  key="$({ printf '%s\n' "${debian_mirror}" "${dist_packages}" "${docker_packages}"; cat "${status}" "${BASH_SOURCE[0]}"; } |
    sha256sum | cut -c1-16)"

  if [[ "$(cat "${cache}/inputs" 2>/dev/null || true)" != "${key}" ]]; then
    log "downloading from ${debian_mirror} (inputs ${key})"
    rm -rf "${cache}"
    mkdir -p "${cache}/apt/empty" "${cache}/apt/state" "${cache}/apt/lists/partial" "${cache}/apt/cache/archives/partial"
    printf 'deb %s %s main\ndeb %s %s-updates main\n' "${debian_mirror}" "${suite}" "${debian_mirror}" "${suite}" \
      >"${cache}/apt/sources.list"
    local -a opts first both
    mapfile -t opts < <(apt_opts "${cache}" "${status}")
    apt-get "${opts[@]}" -qq update
    # shellcheck disable=SC2086  # the package lists are word lists
    mapfile -t first < <(resolve "${cache}" "${status}" ${dist_packages})
    # shellcheck disable=SC2086
    mapfile -t both < <(resolve "${cache}" "${status}" ${dist_packages} ${docker_packages})
    if [[ ${#first[@]} -eq 0 ]]; then
      log "apt resolved nothing to install for: ${dist_packages}"
      exit 1
    fi
    download "${cache}" "${status}" "${cache}/debs/debian" "${first[@]}"
    mapfile -t both < <(comm -13 <(printf '%s\n' "${first[@]}") <(printf '%s\n' "${both[@]}"))
    download "${cache}" "${status}" "${cache}/debs/docker" "${both[@]}"
    printf '%s\n' "${key}" >"${cache}/inputs"
  else
    log "packages in ${cache} are current (inputs ${key})"
  fi

  rm -rf "${www}"
  local docker="${www}/linux/debian" k8s="${www}/${k8s_path}"
  debian_layout "${www}" "${cache}/debs/debian"
  mkdir -p "${docker}/pool" "${k8s}"
  if compgen -G "${cache}/debs/docker/*.deb" >/dev/null; then
    cp -l "${cache}"/debs/docker/*.deb "${docker}/pool/" 2>/dev/null || cp "${cache}"/debs/docker/*.deb "${docker}/pool/"
  fi
  write_packages "${docker}" "dists/${suite}/stable/binary-amd64"
  # pkgs.k8s.io has no packages this machine could use; the repository stays empty but is
  # signed, so apt still proves the role's definition of it reaches the mirror.
  : >"${k8s}/Packages"
  gzip -9nkf "${k8s}/Packages"
  write_release "${docker}/dists/${suite}" "Origin: gpushare test mirror" "Label: Docker layout" "Suite: ${suite}" \
    "Codename: ${suite}" "Architectures: amd64" "Components: stable"
  write_release "${k8s}" "Origin: gpushare test mirror" "Label: Kubernetes layout" "Architectures: amd64"
  sign "${www}" "${www}/debian/dists/${suite}/Release" "${www}/debian/dists/${suite}-updates/Release" \
    "${docker}/dists/${suite}/Release" "${k8s}/Release"
  cp "${www}/mirror.asc" "${docker}/gpg"
  cp "${www}/mirror.asc" "${k8s}/Release.key"
  log "$(find "${www}" -name '*.deb' | wc -l) packages in ${www}"
}

# WWW/debian: the .deb files of DEBS in the layout of the Debian archive (bookworm main, and
# bookworm-updates served empty), Release files written, not signed yet.
debian_layout() {
  local www="$1" debs="$2"
  local debian="${www}/debian"
  mkdir -p "${debian}/pool"
  cp -l "${debs}"/*.deb "${debian}/pool/" 2>/dev/null || cp "${debs}"/*.deb "${debian}/pool/"
  write_packages "${debian}" "dists/${suite}/main/binary-amd64"
  # The image's stock sources also name the updates suite; the packages taken from it are in
  # the main suite above, so it is served empty (and signed) to keep `apt-get update` clean.
  mkdir -p "${debian}/dists/${suite}-updates/main/binary-amd64"
  : >"${debian}/dists/${suite}-updates/main/binary-amd64/Packages"
  gzip -9nkf "${debian}/dists/${suite}-updates/main/binary-amd64/Packages"
  write_release "${debian}/dists/${suite}" "Origin: gpushare test mirror" "Label: Debian layout" "Suite: stable" \
    "Codename: ${suite}" "Architectures: amd64" "Components: main"
  write_release "${debian}/dists/${suite}-updates" "Origin: gpushare test mirror" "Label: Debian layout" \
    "Suite: stable-updates" "Codename: ${suite}-updates" "Architectures: amd64" "Components: main"
}

# Signs each Release file (InRelease and Release.gpg) with a throw-away key, exported to
# WWW/mirror.asc.
sign() {
  local www="$1"
  shift
  # A fresh signing key every run, in a GnuPG home that is removed with its agent.
  local gnupg
  gnupg="$(mktemp -d /tmp/gpushare-mirror-gnupg.XXXXXX)"
  (
    export GNUPGHOME="${gnupg}"
    trap 'gpgconf --kill all >/dev/null 2>&1 || true; rm -rf "${GNUPGHOME}"' EXIT
    gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
      --quick-gen-key 'gpushare.cluster test mirror <mirror@localhost>' ed25519 sign 2d
    gpg --batch --quiet --armor --export >"${www}/mirror.asc"
    local release
    for release in "$@"; do
      gpg --batch --quiet --yes --clearsign -o "${release%/Release}/InRelease" "${release}"
      gpg --batch --quiet --yes --armor --detach-sign -o "${release}.gpg" "${release}"
    done
  )
}

# mirror.sh debian WWW DEBS: only the Debian-layout repository of DEBS, signed.
debian() {
  local www="$1" debs="$2" tool
  for tool in dpkg-scanpackages gpg gpgconf gzip; do
    command -v "${tool}" >/dev/null 2>&1 || { log "${tool} is missing; install it with: apt-get install dpkg-dev gpg gzip"; exit 1; }
  done
  rm -rf "${www}"
  debian_layout "${www}" "${debs}"
  sign "${www}" "${www}/debian/dists/${suite}/Release" "${www}/debian/dists/${suite}-updates/Release"
  log "$(find "${www}" -name '*.deb' | wc -l) packages in ${www}/debian"
}

start() {
  local www="$1" run="$2"
  mkdir -p "${run}"
  stop "${run}"
  : >"${run}/access.log"
  # Port 0: the kernel picks a free port; http.server prints it on its first line.
  setsid /usr/bin/python3 -u -m http.server 0 --bind 127.0.0.1 --directory "${www}" \
    >"${run}/access.log" 2>&1 </dev/null &
  printf '%s\n' "$!" >"${run}/pid"
  local port="" _try
  for _try in $(seq 50); do
    port="$(sed -n 's/^Serving HTTP on 127\.0\.0\.1 port \([0-9]*\).*/\1/p' "${run}/access.log")"
    [[ -n ${port} ]] && break
    sleep 0.1
  done
  if [[ -z ${port} ]]; then
    log "the HTTP server did not start:"
    cat "${run}/access.log" >&2
    stop "${run}"
    exit 1
  fi
  printf '%s\n' "${port}" >"${run}/port"
  log "serving ${www} on http://127.0.0.1:${port} (pid $(cat "${run}/pid"))"
}

stop() {
  local run="$1" pid
  pid="$(cat "${run}/pid" 2>/dev/null || true)"
  # Only the server this script started: the pid must still be an http.server.
  if [[ -n ${pid} ]] && grep -qa 'http.server' "/proc/${pid}/cmdline" 2>/dev/null; then
    kill "${pid}"
    log "stopped the HTTP server (pid ${pid})"
  fi
  rm -f "${run}/pid" "${run}/port"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  debian) shift; debian "$@" ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) log "usage: $0 build|debian|start|stop ..."; exit 2 ;;
esac
