#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rehearsal_day
short_description: Run a day of GPU workloads against a rehearsal control plane and judge it
version_added: 0.2.0
description:
  - Part of the rehearsal (docs/rehearsal.md). With I(state=world), creates the simulated GPU
    world of a plan on the API server of I(kubeconfig), one Node per host with the plan's
    labels, handed to kwok, and for the C(dra) backend the ResourceSlices the NVIDIA DRA driver
    v0.4.1 would publish, for C(device_plugin) the extended resources the device plugin would
    advertise. Only what is missing or different is changed, so a second run reports no change.
  - With I(state=day), runs the steps (C(gpushare_rehearsal_steps), default the worked day
    derived from the plan). Each step deletes and submits workloads as the team's own user
    (I(team_kubeconfigs)), waits until nothing changes for I(settle) seconds (at most
    I(timeout)), records every team's admitted, pending, preempted and denied workloads, what
    it borrows and lends, which device each claim got, and judges the step's expectations.
  - Fails, naming each unmet expectation and each refused object, when the day does not go as
    expected; the result document is returned (and written to I(dest)) either way.
requirements:
  - kubernetes (Python client) >= 24.2.0
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  kubeconfig:
    description: Path of the rehearsal's admin kubeconfig.
    type: path
    required: true
  plan:
    description: The C(gpushare_plan) (plan.json of playbooks/plan.yml).
    type: dict
    required: true
  state:
    description: C(world) creates the simulated nodes and devices; C(day) runs the steps.
    type: str
    choices: [world, day]
    default: day
  hosts:
    description: Every inventory host; hosts without GPUs in the plan become plain Nodes.
    type: list
    elements: str
    default: []
  simulated_annotation:
    description: The annotation kwok selects the Nodes it manages by.
    type: dict
    default: {"kwok.x-k8s.io/node": "fake"}
  steps:
    description:
      - The day (schema in docs/rehearsal.md). Empty means the worked day derived from I(plan).
    type: list
    elements: dict
    default: []
  team_kubeconfigs:
    description:
      - Team name to the path of a kubeconfig of a user in that team's RBAC group. Teams not
        listed submit as the admin, which RBAC does not restrict (said in the result).
    type: dict
    default: {}
  rehearsal_dir:
    description:
      - The directory of the running rehearsal control plane (role gpushare.cluster.rehearsal).
        When set, each team not in I(team_kubeconfigs) gets a user C(<team>-engineer) with a client
        certificate signed by the rehearsal CA in the team's RBAC group (the plan's C(group)).
    type: path
  timeout:
    description: Longest wait for a steady state per step, in seconds.
    type: float
    default: 60
  settle:
    description: A step is steady once nothing changed for this many seconds.
    type: float
    default: 2
  dest:
    description: Write the result document (rehearsal.json) here.
    type: path
  report:
    description: Write the plan report with its Rehearsal section here (index.html).
    type: path
"""

EXAMPLES = r"""
- name: Create the simulated GPU nodes of the plan
  gpushare.cluster.rehearsal_day:
    state: world
    kubeconfig: "{{ rehearsal.kubeconfig }}"
    plan: "{{ gpushare_plan }}"
    hosts: "{{ groups['all'] }}"

- name: Run the worked day
  gpushare.cluster.rehearsal_day:
    kubeconfig: "{{ rehearsal.kubeconfig }}"
    plan: "{{ gpushare_plan }}"
    team_kubeconfigs: {production: /tmp/r/production.kubeconfig}
    dest: build/plan/rehearsal.json
"""

RETURN = r"""
changed_objects:
  description: With I(state=world), the Nodes and ResourceSlices created or corrected.
  returned: state=world
  type: list
  elements: str
rehearsal:
  description:
    - The result document (steps, teams, allocations, unmet; docs/rehearsal.md).
    - Its C(waits) says how long each workload waited before Kueue first admitted it (minutes when
      every step's C(at) is a clock time, else steps), and per team how many waited, the longest
      and the total wait, and which were never admitted.
  returned: state=day
  type: dict
unmet:
  description: Each expectation that did not hold, as C(step, team, workload, what).
  returned: state=day
  type: list
  elements: dict
summary:
  description: One line per step and team (admitted, pending, preempted, denied, borrowed, lent), then one per team with its waits.
  returned: state=day
  type: list
  elements: str
"""

import json
import os
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import kube as rehearsal_kube
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import report as rehearsal_report
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import steps as rehearsal_steps
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world as rehearsal_world


def _write(path, document):
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(document, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


def _team_users(directory, plan, known):
    """team -> kubeconfig of a user in the team's RBAC group, made by the rehearsal's CA."""
    from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rehearsal_cluster

    out = dict(known)
    for team, info in sorted((plan.get("teams") or {}).items()):
        if team in out:
            continue
        groups = [info["group"]] if info.get("group") else []
        out[team] = rehearsal_cluster.user_kubeconfig(directory, "%s-engineer" % team, groups)
    return out


def _summary(document):
    lines = ["before the day: %s" % line for line in document.get("before_the_day") or []]
    for step in document["steps"]:
        for team, info in step["teams"].items():
            lines.append("%-6s %-12s admitted %s; pending %s; preempted %s; denied %s; GPUs in use %d, borrowed %d, lent %d" % (
                step["at"], team, ",".join(info["admitted"]) or "-", ",".join(info["pending"]) or "-",
                ",".join(info["preempted"]) or "-", ",".join(info["denied"]) or "-", info["gpus_in_use"],
                info["borrowing"], info["lent"]))
        for name, why in sorted((step.get("not_running") or {}).items()):
            lines.append("%-6s deleted %s: %s" % (step["at"], name, why))
        for unmet in step["unmet"]:
            lines.append("%-6s UNMET %s %s: %s" % (step["at"], unmet["team"], unmet["workload"], unmet["what"]))
    waits = document.get("waits") or {}
    for team, info in sorted((waits.get("teams") or {}).items()):
        lines.append("waits  %-12s %d of %d workload(s) waited, longest %d %s, in all %d%s" % (
            team, info["waited"], info["workloads"], info["longest"], waits["unit"], info["total"],
            "; never admitted: %s" % ",".join(info["never_admitted"]) if info["never_admitted"] else ""))
    lines.extend("note: %s" % note for note in document.get("notes") or [])
    lines.append("day: %s s, %s" % (document.get("seconds"), "every expectation held" if document["passed"]
                                    else "%d expectation(s) unmet" % len(document["unmet"])))
    return lines


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kubeconfig=dict(type="path", required=True),
            plan=dict(type="dict", required=True),
            state=dict(type="str", choices=["world", "day"], default="day"),
            hosts=dict(type="list", elements="str", default=[]),
            simulated_annotation=dict(type="dict", default={"kwok.x-k8s.io/node": "fake"}),
            steps=dict(type="list", elements="dict", default=[]),
            team_kubeconfigs=dict(type="dict", default={}),
            rehearsal_dir=dict(type="path"),
            report=dict(type="path"),
            timeout=dict(type="float", default=60),
            settle=dict(type="float", default=2),
            dest=dict(type="path"),
        ),
        supports_check_mode=False,
    )
    if not rehearsal_kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    params = module.params
    plan = params["plan"]
    try:
        world = rehearsal_world.build_world(plan, params["hosts"], params["simulated_annotation"])
        steps = rehearsal_steps.validate_steps(plan, params["steps"] or rehearsal_steps.default_steps(plan))
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    admin = rehearsal_kube.api_client(params["kubeconfig"])
    if params["state"] == "world":
        try:
            changed = rehearsal_kube.apply_world(admin, world)
        except rehearsal_kube.ApiException as exc:
            module.fail_json(msg="the API server refused the simulated world: %s" % rehearsal_kube._message(exc))
        module.exit_json(changed=bool(changed), changed_objects=changed,
                         nodes=[n["metadata"]["name"] for n in world["nodes"]],
                         resource_slices=[s["metadata"]["name"] for s in world["resource_slices"]])
    paths = dict(params["team_kubeconfigs"])
    if params["rehearsal_dir"]:
        try:
            paths = _team_users(params["rehearsal_dir"], plan, paths)
        except ValueError as exc:
            module.fail_json(msg="cannot make the team users: %s" % exc)
    teams = {str(team): rehearsal_kube.api_client(path) for team, path in paths.items()}
    stopped = None
    try:
        document = rehearsal_kube.run_day(
            admin, teams, plan, world, steps, timeout=params["timeout"], settle=params["settle"],
            before_the_day=rehearsal_steps.nobody_can_act_as(plan, given=params["team_kubeconfigs"]))
    except rehearsal_kube.DayStopped as exc:
        stopped, document = exc, exc.document
    document["submitted_as_admin"] = sorted(set(plan.get("teams") or {}) - set(teams))
    if params["dest"]:
        _write(params["dest"], document)
    if params["report"]:
        tmp = params["report"] + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(rehearsal_report.render_page(plan, document))
        os.replace(tmp, params["report"])
    summary = _summary(document)
    if stopped is not None:
        module.fail_json(msg="the rehearsal day stopped: %s (the steps that ran are in the result)" % stopped,
                         exception="".join(traceback.format_exception(stopped.__cause__ or stopped)),
                         rehearsal=document, unmet=document["unmet"], summary=summary, changed=True)
    unmet = document["unmet"]
    if unmet:
        module.fail_json(msg="the rehearsal day did not go as the plan promises: %d expectation(s) unmet: %s" % (
            len(unmet), "; ".join("%s %s %s: %s" % (u["step"], u["team"], u["workload"], u["what"]) for u in unmet)),
            rehearsal=document, unmet=unmet, summary=summary, changed=True)
    module.exit_json(changed=True, rehearsal=document, unmet=[], summary=summary)


if __name__ == "__main__":
    main()
