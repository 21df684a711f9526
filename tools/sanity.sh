#!/usr/bin/env bash
# Run `ansible-test sanity` without Docker: ansible-test needs the collection at
# ansible_collections/<namespace>/<name>, so the tracked (and new, not ignored) files are
# copied into such a tree under build/, and each sanity test runs in its own virtual
# environment (--venv) whose pip bootstrap is served by tools/get_pip_standin.py.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
venv="${top}/.venv"
python_version=$("${venv}/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
tree="${top}/build/sanity/ansible_collections/gpushare/cluster"

# Seed ansible-test's bootstrap cache with the stand-in, under the pip version it pins.
pip_version=$("${venv}/bin/python" - <<'PY'
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.host_configs import NativePythonConfig
import sys
print(get_venv_packages(NativePythonConfig(version="%d.%d" % sys.version_info[:2]))["pip"])
PY
)
cache="${HOME}/.ansible/test/cache"
mkdir -p "${cache}"
cp "${top}/tools/get_pip_standin.py" "${cache}/get_pip_${pip_version//./_}.py"

rm -rf "${top}/build/sanity"
mkdir -p "${tree}"
(cd "${top}" && git ls-files -z --cached --others --exclude-standard \
  | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | (cd "${tree}" && tar -xf -)
# kubernetes.core, whose module_utils and documentation fragment k8s_list uses, beside this
# collection, where ansible-test looks for it; from the venv's `ansible` package, so at the
# version the playbooks run with.
site_packages=$("${venv}/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "${top}/build/sanity/ansible_collections/kubernetes"
cp -a "${site_packages}/ansible_collections/kubernetes/core" "${top}/build/sanity/ansible_collections/kubernetes/core"
# ansible-test lists files through git when it finds a repository.
(cd "${tree}" && git init -q && echo "/tests/output/" >> .git/info/exclude && git add -A && git -c user.name=sanity -c user.email=sanity@localhost commit -qm sanity)

cd "${tree}"
PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
  "${venv}/bin/ansible-test" sanity --venv --python "${python_version}" --color no "$@"
