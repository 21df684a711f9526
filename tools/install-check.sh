#!/usr/bin/env bash
# Install the built collection tarball into a scratch path and prove it is usable: the
# tarball holds no tests, Molecule or build output, and ansible-doc lists its plugins.
set -euo pipefail

tarball=$1
top=$(cd "$(dirname "$0")/.." && pwd)
scratch="${top}/build/install-check"
rm -rf "${scratch}"
mkdir -p "${scratch}"

leaked=$(tar -tzf "${tarball}" | grep -E '^(tests|molecule|build|benchmarks|tools|\.ci|\.venv)/' || true)
if [ -n "${leaked}" ]; then
  echo "install-check: the tarball carries files that build_ignore should keep out:" >&2
  echo "${leaked}" >&2
  exit 1
fi

ANSIBLE_COLLECTIONS_PATH="${scratch}" "${top}/.venv/bin/ansible-galaxy" collection install --force --offline --no-deps -p "${scratch}" "${tarball}"
listing=$(ANSIBLE_COLLECTIONS_PATH="${scratch}" "${top}/.venv/bin/ansible-doc" -l gpushare.cluster)
echo "${listing}"
expected=$(find "${top}/plugins/modules" -name '*.py' ! -name '__init__.py' -printf '%f\n' | sed 's/\.py$//' | sort)
for module in ${expected}; do
  grep -q "^gpushare\.cluster\.${module}\b" <<<"${listing}" || {
    echo "install-check: module ${module} missing from ansible-doc -l gpushare.cluster" >&2
    exit 1
  }
done
echo "install-check: $(wc -w <<<"${expected}") modules listed from the installed tarball"
