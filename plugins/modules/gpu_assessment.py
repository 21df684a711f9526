#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_assessment
short_description: Assess how the GPUs are used today and propose the split
version_added: 0.1.0
description:
  - Reads nvidia-smi samples already on the machine it runs on (the controller, in
    C(playbooks/assess.yml)), one directory per inventory host, or with O(prometheus) the
    series dcgm-exporter left in Prometheus, and proposes for every GPU its
    C(use) (C(whole), C(mig) or C(shared)), C(team) and C(mig) instances or C(replicas), with
    the figures behind each decision, and says whether the cards are enough for the busiest hour.
  - Files per host, under O(samples_dir)/<host>/, in nvidia-smi's own CSV
    (C(--format=csv,nounits)) with its header line; several files of a kind (rotation) are
    read in the order of their first sample. C(gpus*.csv) holds
    C(--query-gpu=timestamp,uuid,index,name,utilization.gpu,memory.used,memory.total);
    C(apps*.csv) holds C(--query-compute-apps=timestamp,gpu_uuid,pid,used_gpu_memory) plus the
    process owner, C(user).
  - With O(prometheus), reads per GPU C(DCGM_FI_DEV_GPU_UTIL), C(DCGM_FI_DEV_FB_USED),
    C(DCGM_FI_DEV_FB_FREE) and C(DCGM_FI_DEV_FB_RESERVED) (dcgm-exporter up to 4.8.x) over
    O(prometheus.window); the node label C(hostname) (C(Hostname) before exporter 4.8.3) names
    the host. There is no per-process data, so a GPU is proposed from its own figures (C(whole)
    when steadily heavy, else its entry today) and RV(summary) and C(assessment.json) say per
    GPU what the proposal cannot decide (MIG instances per process, replicas per sessions at
    once, the teams that used it). Times are UTC.
  - With O(dest), writes C(assessment.json); C(assessment.html), one self-contained page that
    opens offline (the capacity answer, each GPU today beside its proposed use and why, a heat
    map per GPU of its busy share by weekday and hour); and C(proposal/), a copy of the
    O(inventory) whose C(gpushare_gpus) are the proposal (the evidence as a comment beside each
    GPU); and C(replay.yml), the busiest recorded day as C(gpushare_rehearsal_steps) for
    C(playbooks/rehearse.yml) on the proposal (each session a workload of its team, in hour
    slots; left out when that day had no session of a team), into a new directory that replaces
    O(dest) in one rename; a failed run leaves O(dest) as it was.
  - Fails with one message naming every host, file and line or GPU that keeps the proposal
    from being made; data problems that still allow one are returned in RV(problems).
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  samples_dir:
    description:
      - Directory holding one directory of sample files per inventory host.
      - Exactly one of O(samples_dir) and O(prometheus) is required.
    type: path
  prometheus:
    description:
      - Read dcgm-exporter's series from this Prometheus server instead of sample files.
      - Credentials go into request headers only and never appear in a message.
    type: dict
    version_added: 0.1.0
    suboptions:
      url:
        description: Base URL of the Prometheus server, for example V(https://prometheus.example.com).
        type: str
        required: true
      bearer_token:
        description: Bearer token sent in the C(Authorization) header. Mutually exclusive with O(prometheus.username).
        type: str
      username:
        description: User for HTTP basic authentication.
        type: str
      password:
        description: Password for HTTP basic authentication.
        type: str
      ca_path:
        description: PEM file of CA certificates used to verify the server instead of the system store.
        type: path
      validate_certs:
        description: Verify the server's TLS certificate. Turn off only for test servers.
        type: bool
        default: true
      timeout:
        description: Seconds to wait for each answer of Prometheus.
        type: float
        default: 30
      window:
        description: How far back to read, as a Prometheus duration (V(14d), V(36h), V(1d12h)).
        type: str
        default: 14d
      step:
        description:
          - Time between two samples, as a duration; V(1m) is the sampler's own interval. Longer
            windows are read in several queries, so any step works; a longer step reads less.
        type: str
        default: 1m
      end:
        description: End of the window as a Unix timestamp or RFC 3339 time. Default is now.
        type: str
      hostnames:
        description:
          - Inventory host to the node name the exporter reports (its C(hostname) label), for
            hosts whose inventory name is neither that name nor its short form. A host listed
            matches that name and its short form only; a host not listed matches the label
            equal to its inventory name, else the label whose short name in lower case equals
            its own.
        type: dict
        default: {}
  hosts:
    description:
      - The GPU hosts to assess, each with its current C(gpushare_gpus) (or null when the
        inventory does not list them yet). A GPU's C(team) is the team of the processes on it
        whose user O(users) does not map; its C(model) names a card nvidia-smi names in a way
        the catalog does not know.
    type: dict
    required: true
  teams:
    description: C(gpushare_teams); the proposal gives GPUs only to these teams.
    type: list
    elements: dict
    required: true
  users:
    description:
      - Process owner to team (C(gpushare_assess_users)). A process of a user not listed
        belongs to its GPU's current team, else to C(unassigned), which is shown, never dropped.
    type: dict
    default: {}
  headroom:
    description: Share added to a process's peak memory for its MIG instance.
    type: float
    default: 0.2
  busy_utilization:
    description: GPU utilisation (percent) from which a sample counts as busy.
    type: int
    default: 10
  inventory:
    description: The inventory (directory or file) the proposal copies; needed with O(dest).
    type: path
  dest:
    description: Directory to write; without it nothing is written.
    type: path
notes:
  - Supports check mode; then nothing is written and C(changed) says whether O(dest) would change.
seealso:
  - module: gpushare.cluster.mig_layout
"""

EXAMPLES = r"""
- name: Assess two weeks of dcgm-exporter series from Prometheus
  gpushare.cluster.gpu_assessment:
    prometheus:
      url: https://prometheus.example.com
      bearer_token: "{{ vault_prometheus_token }}"
      window: 14d
    hosts:
      gpu1: "{{ hostvars['gpu1'].gpushare_gpus | default(omit) }}"
    teams: "{{ gpushare_teams }}"
    inventory: inventories/example
    dest: build/assess
  delegate_to: localhost

- name: Assess the fetched samples and write build/assess
  gpushare.cluster.gpu_assessment:
    samples_dir: build/assess-samples
    hosts:
      gpu1: "{{ hostvars['gpu1'].gpushare_gpus | default(omit) }}"
    teams: "{{ gpushare_teams }}"
    users: {vllm: production, alice: data}
    inventory: inventories/example
    dest: build/assess
  delegate_to: localhost
"""

RETURN = r"""
capacity:
  description: The busiest hour's demand in GPU-equivalents against the GPUs, and the answer.
  returned: success
  type: dict
  sample:
    busiest_hour: Wed 2026-03-04 13:00
    demand_gpu_equivalents: 3.03
    gpus: 4
    another_gpu_advised: false
    why: "no card to add: the busiest hour (Wed 2026-03-04 13:00) asks 3.03 GPU-equivalents of the 4 GPU(s), ..."
proposal:
  description: The proposed C(gpushare_gpus) of every host.
  returned: success
  type: dict
  sample: {hosts: {gpu1: [{index: 0, model: RTX-PRO-6000, team: production, use: whole}]}}
summary:
  description:
    - One line per GPU (host, index, model, proposed use and team, why), one on the replay of the
      busiest day, and the capacity answer.
    - Read from Prometheus, each GPU's line ends with what it cannot decide without per-process data.
  returned: success
  type: list
  elements: str
problems:
  description: Bad or missing data that still allowed a proposal, each naming host, file and line or GPU.
  returned: success
  type: list
  elements: str
dest:
  description:
    - The directory written (or that would be, in check mode), with C(assessment.json),
      C(assessment.html), C(proposal/) and C(replay.yml).
  returned: when O(dest) is set
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.assess import analysis, dcgm, files
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.figures import Thresholds
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.figures import parse_duration
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.pipeline import parse_end
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.prometheus import PrometheusClient

PROMETHEUS_OPTIONS = dict(
    url=dict(type="str", required=True),
    bearer_token=dict(type="str", no_log=True),
    username=dict(type="str"),
    password=dict(type="str", no_log=True),
    ca_path=dict(type="path"),
    validate_certs=dict(type="bool", default=True),
    timeout=dict(type="float", default=30),
    window=dict(type="str", default="14d"),
    step=dict(type="str", default="1m"),
    end=dict(type="str"),
    hostnames=dict(type="dict", default={}),
)


def _summary(assessment):
    lines = ["host %s, GPU %s (%s): %s for %s: %s%s"
             % (gpu["host"], gpu["index"], gpu["model"], gpu["proposed"]["use"], gpu["proposed"]["team"], gpu["why"],
                "".join(". Cannot decide %s" % statement for statement in gpu.get("cannot_decide") or []))
             for gpu in assessment["gpus"]]
    replay = assessment.get("replay") or {}
    if replay.get("steps"):
        lines.append("replay: the busiest day (%s), %d session(s) as %d rehearsal step(s) in replay.yml; play it with "
                     "playbooks/rehearse.yml on the proposal (docs/assess.md)"
                     % (replay["day"], len(replay["workloads"]), len(replay["steps"])))
    else:
        lines.append("replay: %s" % replay.get("why", "nothing to replay"))
    return lines + [assessment["capacity"]["why"]]


def _read(params, problems):
    """(samples by host, source) from the sample files or from Prometheus."""
    hosts = sorted(params["hosts"])
    if params["samples_dir"]:
        return files.read_samples(params["samples_dir"], hosts, problems), None
    options = params["prometheus"]
    client = PrometheusClient(options["url"], bearer_token=options["bearer_token"], username=options["username"],
                              password=options["password"], ca_path=options["ca_path"],
                              validate_certs=options["validate_certs"], timeout=options["timeout"])
    window = parse_duration(options["window"], "prometheus.window")
    step = parse_duration(options["step"], "prometheus.step")
    end = parse_end(options["end"])
    end -= end % step
    found = dcgm.read(client, hosts, options["hostnames"], end - window, end, step, problems)
    return found, {"kind": "prometheus", "url": client.base_url, "step_seconds": step, "clock": "UTC"}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            samples_dir=dict(type="path"),
            prometheus=dict(type="dict", options=PROMETHEUS_OPTIONS,
                            mutually_exclusive=[("bearer_token", "username")],
                            required_by={"password": "username"}),
            hosts=dict(type="dict", required=True),
            teams=dict(type="list", elements="dict", required=True),
            users=dict(type="dict", default={}),
            headroom=dict(type="float", default=0.2),
            busy_utilization=dict(type="int", default=10),
            inventory=dict(type="path"),
            dest=dict(type="path"),
        ),
        required_by={"dest": "inventory"},
        required_one_of=[("samples_dir", "prometheus")],
        mutually_exclusive=[("samples_dir", "prometheus")],
        supports_check_mode=True,
    )
    params = module.params
    limits = Thresholds(busy_utilization=params["busy_utilization"], headroom=params["headroom"])
    try:
        problems = []
        found, source = _read(params, problems)
        assessment = analysis.assess(found, params["hosts"], params["teams"], params["users"], limits, problems,
                                     source)
        changed = bool(params["dest"]) and not files.unchanged(assessment, params["dest"])
        if changed and not module.check_mode:
            files.publish(assessment, params["inventory"], params["dest"])
    except (ValueError, OSError) as error:
        module.fail_json(msg=str(error))
    result = dict(changed=changed, capacity=assessment["capacity"], proposal=assessment["proposal"],
                  summary=_summary(assessment), problems=assessment["problems"])
    if params["dest"]:
        result["dest"] = params["dest"]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
