#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rehearsal_cluster
short_description: Start or stop the rehearsal control plane (etcd, API server, scheduler, controller manager, kwok, Kueue) on 127.0.0.1
version_added: 0.1.0
description:
  - With O(state=started), starts a real Kubernetes control plane on the controller, all on
    127.0.0.1 with ports chosen free at start, so several rehearsals can run at once; it runs etcd,
    kube-apiserver (TLS, RBAC, service account signing keys, kubeadm's admission plugins),
    kube-controller-manager (every controller, each as its own service account, CSR signing
    with the cluster CA), kube-scheduler, kwok (simulated kubelets of the Nodes annotated
    C(kwok.x-k8s.io/node=fake)) and the Kueue manager running out of cluster with its
    webhooks on 127.0.0.1. A CA made for the rehearsal signs every certificate.
  - Waits until every component is ready (API server C(/readyz), each component's health
    endpoint, Kueue's CRDs established and one dry-run object through each Kueue webhook kind)
    within O(timeout) seconds; on failure stops everything it started and fails with the
    component's log tail.
  - With O(state=stopped), stops exactly the processes recorded in O(dir) (pids and their
    start times); a second stop changes nothing.
  - Logs (C(logs/<component>.log)), certificates, kubeconfigs and C(state.json) live in O(dir).
  - The binaries come from M(gpushare.cluster.rehearsal_binaries) (the C(gpushare.cluster.rehearsal)
    role's C(build) tasks, or C(make rehearsal-binaries)).
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  state:
    description: Whether the rehearsal control plane of O(dir) runs.
    type: str
    choices: [started, stopped]
    default: started
  dir:
    description: Directory of the rehearsal's state, certificates and logs (made if missing).
    type: path
    required: true
  bin_dir:
    description:
      - Directory of the built binaries (the C(bin_dir) M(gpushare.cluster.rehearsal_binaries) returns).
      - Required with O(state=started).
    type: path
  kueue_configuration:
    description:
      - The Kueue manager Configuration (C(config.kueue.x-k8s.io/v1beta2)), for example the one
        the C(gpushare.cluster.kueue) role renders for the plan.
      - Only the fields Kueue needs to run out of cluster are overridden (webhook host, port and
        certDir; health and metrics addresses; leader election off; internal certificate
        management off; the C(VisibilityOnDemand) gate off; no pprof); the rest reaches Kueue unchanged.
    type: dict
    default: {}
  feature_gates:
    description: Feature gates of kube-apiserver, kube-controller-manager and kube-scheduler (as C(kubeadm_feature_gates)).
    type: dict
    default: {}
  apiserver_args:
    description: Extra kube-apiserver arguments, without leading dashes; they override the defaults (as in kubeadm).
    type: dict
    default: {}
  controller_manager_args:
    description: Extra kube-controller-manager arguments, without leading dashes.
    type: dict
    default: {}
  scheduler_args:
    description: Extra kube-scheduler arguments, without leading dashes.
    type: dict
    default: {}
  kwok_stages:
    description:
      - kwok's default stages to run (read from the kwok module of the release built).
      - The default leaves out C(pod-complete), so Job pods keep running until deleted.
    type: list
    elements: str
    default: [node-initialize, node-heartbeat-with-lease, pod-ready, pod-delete]
  timeout:
    description: Seconds to wait for every component to be ready.
    type: int
    default: 180
requirements:
  - The Python C(cryptography) and PyYAML packages on the controller.
  - C(unshare) (util-linux) and overlayfs, for Kueue's private mount namespace.
notes:
  - Runs on the controller only; it never connects to a host. Check mode reports what would
    change without starting or stopping anything.
"""

EXAMPLES = r"""
- name: Start the rehearsal control plane
  gpushare.cluster.rehearsal_cluster:
    state: started
    dir: "{{ gpushare_plan_dir }}/rehearsal"
    bin_dir: "{{ __rehearsal_build.bin_dir }}"
    kueue_configuration: "{{ kueue_configuration }}"
  register: rehearsal

- name: List the nodes as the admin
  kubernetes.core.k8s_info:
    kind: Node
    kubeconfig: "{{ rehearsal.kubeconfig }}"

- name: Stop it
  gpushare.cluster.rehearsal_cluster:
    state: stopped
    dir: "{{ gpushare_plan_dir }}/rehearsal"
"""

RETURN = r"""
kubeconfig:
  description: The admin kubeconfig (absolute path; client certificate in group system:masters).
  returned: state=started
  type: str
  sample: /home/me/plan/rehearsal/admin.kubeconfig
dir:
  description: The rehearsal directory (absolute).
  returned: always
  type: str
server:
  description: The API server URL.
  returned: state=started
  type: str
  sample: https://127.0.0.1:40123
versions:
  description: The versions of the binaries that run.
  returned: state=started
  type: dict
  sample: {kubernetes: 1.35.4, etcd: 3.6.16, kueue: 0.19.2, kwok: 0.8.0}
pids:
  description: The pid of each component.
  returned: state=started
  type: dict
ports:
  description: The 127.0.0.1 port of each listener.
  returned: state=started
  type: dict
logs:
  description: The log file of each component.
  returned: state=started
  type: dict
pki:
  description: >-
    The CA and admin certificate files (the CA key signs team users' certificates), and the etcd CA and
    the API server's etcd client certificate (etcdctl against the rehearsal's etcd).
  returned: state=started
  type: dict
commands:
  description: The command line each component was started with (its binary and flags).
  returned: state=started
  type: dict
kwok_node_annotation:
  description: The annotation that puts a Node under kwok.
  returned: state=started
  type: dict
  sample: {kwok.x-k8s.io/node: fake}
ready_seconds:
  description: Seconds from start until every component was ready.
  returned: state=started
  type: float
stopped:
  description: The components stopped now.
  returned: state=stopped
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["started", "stopped"], default="started"),
            dir=dict(type="path", required=True),
            bin_dir=dict(type="path"),
            kueue_configuration=dict(type="dict", default={}),
            feature_gates=dict(type="dict", default={}),
            apiserver_args=dict(type="dict", default={}),
            controller_manager_args=dict(type="dict", default={}),
            scheduler_args=dict(type="dict", default={}),
            kwok_stages=dict(type="list", elements="str", default=list(rc.DEFAULT_KWOK_STAGES)),
            timeout=dict(type="int", default=180),
        ),
        required_if=[("state", "started", ["bin_dir"])],
        supports_check_mode=True,
    )
    params = module.params
    if not rc.HAS_CRYPTOGRAPHY:
        module.fail_json(msg="the rehearsal needs the Python 'cryptography' package on the controller")
    try:
        alive = rc.running(params["dir"])
        if params["state"] == "stopped":
            if module.check_mode:
                module.exit_json(changed=any(alive.values()), dir=params["dir"], stopped=[n for n, a in alive.items() if a])
            module.exit_json(**rc.stop(params["dir"]))
        if alive and all(alive.values()):
            module.exit_json(changed=False, **rc.info(params["dir"]))
        if module.check_mode:
            module.exit_json(changed=True, dir=params["dir"])
        if any(alive.values()):
            rc.stop(params["dir"])
        result = rc.start(
            params["dir"], kueue_configuration=params["kueue_configuration"], bin_dir=params["bin_dir"],
            feature_gates=params["feature_gates"], apiserver_args=params["apiserver_args"],
            controller_manager_args=params["controller_manager_args"], scheduler_args=params["scheduler_args"],
            kwok_stages=params["kwok_stages"], timeout=params["timeout"])
    except (rc.RehearsalError, OSError) as exc:
        module.fail_json(msg=str(exc), dir=params["dir"])
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
