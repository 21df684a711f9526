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
    C(playbooks/assess.yml)), one directory per inventory host, and proposes for every GPU its
    C(use) (C(whole), C(mig) or C(shared)), C(team) and C(mig) instances or C(replicas), with
    the figures behind each decision, and says whether the cards are enough for the busiest hour.
  - Files per host, under O(samples_dir)/<host>/, in nvidia-smi's own CSV
    (C(--format=csv,nounits)) with its header line; several files of a kind (rotation) are
    read in the order of their first sample. C(gpus*.csv) holds
    C(--query-gpu=timestamp,uuid,index,name,utilization.gpu,memory.used,memory.total);
    C(apps*.csv) holds C(--query-compute-apps=timestamp,gpu_uuid,pid,used_gpu_memory) plus the
    process owner, C(user).
  - With O(dest), writes C(assessment.json); C(assessment.html), one self-contained page that
    opens offline (the capacity answer, each GPU today beside its proposed use and why, a heat
    map per GPU of its busy share by weekday and hour); and C(proposal/), a copy of the
    O(inventory) whose C(gpushare_gpus) are the proposal (the evidence as a comment beside each
    GPU), into a new directory that replaces O(dest) in one rename; a failed run leaves O(dest)
    as it was.
  - Fails with one message naming every host, file and line or GPU that keeps the proposal
    from being made; data problems that still allow one are returned in RV(problems).
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  samples_dir:
    description: Directory holding one directory of sample files per inventory host.
    type: path
    required: true
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
  description: One line per GPU (host, index, model, proposed use and team, why) and the capacity answer.
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
      C(assessment.html) and C(proposal/).
  returned: when O(dest) is set
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.assess import analysis, files
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.figures import Thresholds


def _summary(assessment):
    lines = ["host %s, GPU %s (%s): %s for %s: %s"
             % (gpu["host"], gpu["index"], gpu["model"], gpu["proposed"]["use"], gpu["proposed"]["team"], gpu["why"])
             for gpu in assessment["gpus"]]
    return lines + [assessment["capacity"]["why"]]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            samples_dir=dict(type="path", required=True),
            hosts=dict(type="dict", required=True),
            teams=dict(type="list", elements="dict", required=True),
            users=dict(type="dict", default={}),
            headroom=dict(type="float", default=0.2),
            busy_utilization=dict(type="int", default=10),
            inventory=dict(type="path"),
            dest=dict(type="path"),
        ),
        required_by={"dest": "inventory"},
        supports_check_mode=True,
    )
    params = module.params
    limits = Thresholds(busy_utilization=params["busy_utilization"], headroom=params["headroom"])
    try:
        problems = []
        found = files.read_samples(params["samples_dir"], sorted(params["hosts"]), problems)
        assessment = analysis.assess(found, params["hosts"], params["teams"], params["users"], limits, problems)
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
