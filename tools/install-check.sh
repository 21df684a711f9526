#!/usr/bin/env bash
# Install the built collection tarball into a scratch path and prove it is usable: the
# tarball holds no tests, Molecule or build output, and ansible-doc lists its plugins: every
# module, and every filter with its documentation (not UNDOCUMENTED).
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

# Every filter the installed filter plugins define, by importing them from the scratch path.
filters=$(cd "${scratch}" && PYTHONPATH="${scratch}" "${top}/.venv/bin/python" - <<'PY'
import importlib
import pathlib
for path in sorted(pathlib.Path("ansible_collections/gpushare/cluster/plugins/filter").glob("*.py")):
    if path.name != "__init__.py":
        module = importlib.import_module("ansible_collections.gpushare.cluster.plugins.filter." + path.stem)
        print("\n".join(sorted(module.FilterModule().filters())))
PY
)
filter_listing=$(ANSIBLE_COLLECTIONS_PATH="${scratch}" "${top}/.venv/bin/ansible-doc" -t filter -l gpushare.cluster)
for filter in ${filters}; do
  line=$(grep "^gpushare\.cluster\.${filter}\s" <<<"${filter_listing}" || true)
  if [ -z "${line}" ] || grep -q "UNDOCUMENTED" <<<"${line}"; then
    echo "install-check: filter ${filter} missing or undocumented in ansible-doc -t filter -l gpushare.cluster" >&2
    exit 1
  fi
  ANSIBLE_COLLECTIONS_PATH="${scratch}" "${top}/.venv/bin/ansible-doc" -t filter "gpushare.cluster.${filter}" >/dev/null
done
echo "install-check: $(wc -w <<<"${filters}") filters documented in the installed tarball"
