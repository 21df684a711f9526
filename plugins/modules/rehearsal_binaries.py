#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rehearsal_binaries
short_description: Build the rehearsal's control-plane binaries from Go modules, cached by version
version_added: 0.1.0
description:
  - Builds kube-apiserver, kube-controller-manager, kube-scheduler, etcd, the Kueue
    manager and kwok from the collection's Go modules (one directory per component under
    O(go_dir), each with a committed go.mod and go.sum), with the version ldflags each project's
    own release build sets.
  - The binaries go to C(<cache_dir>/<key>/bin); the key covers every version, each go.mod
    and go.sum, the ldflags and the Go toolchain. A binary already there is not built again, so
    a second run builds nothing (C(changed=false)).
  - Kueue's CRDs, webhook configurations and manager RBAC, and kwok's default stages, are
    copied from the module cache of the release built to C(<cache_dir>/<key>/share).
  - Needs the Go toolchain and the Go module proxy (or a filled module cache) on the controller.
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  go_dir:
    description: Directory holding one Go module per component (the C(gpushare.cluster.rehearsal) role's C(files/go)).
    type: path
    required: true
  cache_dir:
    description: Root of the build cache, outside the repository.
    type: path
    default: ~/.cache/gpushare/rehearsal
  versions:
    description:
      - Versions of C(kubernetes), C(etcd), C(kueue) and C(kwok) expected; each must be the one
        its go.mod requires (the module fails and says which go.mod to change otherwise).
    type: dict
    default: {}
  go:
    description: The Go command.
    type: str
    default: go
notes:
  - Runs on the controller only. In check mode nothing is built; C(changed) says whether a build is due.
"""

EXAMPLES = r"""
- name: Build (or find cached) the rehearsal binaries
  gpushare.cluster.rehearsal_binaries:
    go_dir: "{{ role_path }}/files/go"
    cache_dir: ~/.cache/gpushare/rehearsal
  register: binaries
"""

RETURN = r"""
bin_dir:
  description: The directory of the binaries.
  returned: always
  type: str
share_dir:
  description: The directory of the Kueue and kwok files copied from the module cache.
  returned: always
  type: str
key:
  description: The cache key.
  returned: always
  type: str
  sample: kubernetes1.35.4-etcd3.6.16-kueue0.19.2-kwok0.8.0-1614050e1c0d
versions:
  description: The versions built.
  returned: always
  type: dict
built:
  description: The components built by this run.
  returned: always
  type: list
  elements: str
seconds:
  description: Wall seconds of each component built by this run.
  returned: always
  type: dict
cold_seconds:
  description: Wall seconds each component took when it was built first into this key.
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc


def main():
    module = AnsibleModule(
        argument_spec=dict(
            go_dir=dict(type="path", required=True),
            cache_dir=dict(type="path", default=rc.DEFAULT_CACHE_ROOT),
            versions=dict(type="dict", default={}),
            go=dict(type="str", default="go"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        bin_dir = rc.bin_dir_for(params["go_dir"], params["cache_dir"], params["versions"], params["go"])
        if module.check_mode:
            missing = rc.missing_binaries(bin_dir)
            module.exit_json(changed=bool(missing), bin_dir=bin_dir, share_dir=os.path.join(os.path.dirname(bin_dir), "share"),
                             missing=missing)
        result = rc.build(params["go_dir"], params["cache_dir"], params["versions"], params["go"])
    except (rc.RehearsalError, OSError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=bool(result["built"]), **result)


if __name__ == "__main__":
    main()
