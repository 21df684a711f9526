#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done on the controller by the action plugin of the same name.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan_report
short_description: Plan the GPU split and write plan.json, an HTML report, a summary and example workloads
version_added: 0.1.0
description:
  - Writes a GPU sharing plan (the C(gpushare_plan) shape documented in C(docs/plan.md)) to a
    directory on the controller as C(plan.json), a self-contained C(index.html) (inline SVG
    and CSS, no network access needed to view or print it), a plain-text C(summary.txt) and
    example workloads under C(manifests/examples/).
  - Either takes a plan already made (O(plan), for example the C(gpushare_plan) fact set by
    M(gpushare.cluster.cluster_plan)), or plans from the inventory itself with the same code
    as M(gpushare.cluster.cluster_plan). Planning in the controller process avoids moving
    megabytes of plan through module arguments on large inventories.
  - From the inventory, every setting is read as each host of O(hosts) sees it
    (C(gpushare_kubernetes_distribution), C(gpushare_kubernetes_version), C(gpushare_gpu_backend),
    C(gpushare_gpus), C(gpushare_gpu_facts), C(gpushare_mirrors), C(gpushare_proxy)), with
    C(gpushare_teams) from the play, and checked in one go before anything is written. Checked are the
    settings (the distribution and version are required; the backend defaults to C(dra)), one
    value of each cluster-wide setting on every host, the mirrors and proxies, the groups
    (C(control_plane) and C(workers), GPU hosts in one of them, the number of control planes),
    the teams, every GPU entry, and the names of every generated object and Node.
  - This is the one validation of the collection; C(playbooks/plan.yml) and the preflight of
    C(playbooks/site.yml) both run it (the latter with O(write=false)).
  - When the inventory has errors, the task fails and writes nothing; RV(errors) lists every
    problem, each once, and the message only says how many there are.
  - The report and the summary are stamped with the inventory, the date the plan was made
    and the collection version; the date is renewed only when the content changes, so a
    second run on the same inventory changes nothing.
  - With O(addons), the same directory also gets every file those add-on roles render
    (C(values/) and C(manifests/<role>/)), the bytes M(gpushare.cluster.render_addon) writes
    in the role, with the roles' defaults overridden by the variables of the play.
  - The directory is replaced as a whole by a rename, so readers never see a mix of an old
    and a new plan; when nothing differs from what is already there, nothing is written.
  - Runs on the controller only; it never connects to a host. Supports check mode.
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  plan:
    description:
      - A plan already made. When left out, the plan is made from the inventory of O(hosts).
    type: dict
  cohort:
    description:
      - Name of the Kueue Cohort every team queue belongs to.
    type: str
    default: gpushare
  discovery_pending:
    description:
      - Check the inventory before the hosts are asked which GPUs they have (the first step
        of the preflight). Everything is checked except what discovery decides, so a model
        left out of the inventory is not an error yet. Nothing is planned or written.
    type: bool
    default: false
  hosts:
    description:
      - Hosts whose C(gpushare_gpus) and C(gpushare_gpu_facts) are planned. Default is every
        host of the inventory; hosts without C(gpushare_gpus) are skipped.
    type: list
    elements: str
  dest:
    description:
      - Directory to write on the controller. It is created, or replaced as a whole; an
        existing file of that name is an error, never replaced.
      - Required with O(write=true).
    type: path
  addons:
    description:
      - Add-on roles whose values and manifests are written too, as
        M(gpushare.cluster.render_addon) writes them; any of C(gpu_operator), C(dra_driver),
        C(kueue), C(tenancy) and C(monitoring).
      - Their settings are the role variables of the play (inventory, play and extra vars)
        over the roles' defaults, checked against each role's C(render) argument spec.
    type: list
    elements: str
    choices: [gpu_operator, dra_driver, kueue, tenancy, monitoring]
    default: []
  examples:
    description:
      - Write the example workloads of the plan under C(manifests/examples/).
    type: bool
    default: true
  title:
    description:
      - Title of the HTML report.
    type: str
    default: GPU sharing plan
  summary_rows:
    description:
      - At most this many GPU rows and warnings in the returned RV(summary) (the file
        C(summary.txt) always has all of them).
    type: int
    default: 64
  layers:
    description:
      - The layers of C(site.yml) whose required settings are checked with the inventory (secrets such as
        C(monitoring_grafana_admin_password), the monitoring volumes' StorageClass), as the hosts that use them see
        them; a run's C(--tags) and C(--skip-tags) narrow the list further. No secret value is read into a message.
    type: list
    elements: str
    choices: [prepare_hosts, kubernetes, gpu_stack, queues, monitoring]
    default: [prepare_hosts, kubernetes, gpu_stack, queues, monitoring]
  return_plan:
    description:
      - Also return the plan in the result (large for large inventories).
    type: bool
    default: false
  compare:
    description:
      - Also say what applying the plan would change, compared with a previous plan directory
        (its C(plan.json)) or, with V(cluster), with the live cluster read through O(kubeconfig).
      - With O(write=true), C(changes.json) and a Changes section of C(index.html) are written;
        the result has RV(changes) and RV(changes_summary) either way (C(docs/plan.md)).
    type: str
    version_added: 0.1.0
  kubeconfig:
    description:
      - Kubeconfig on the controller through which O(compare=cluster) reads the cluster with
        M(gpushare.cluster.k8s_list) (every object of the kinds a plan holds, the Nodes, Kueue's
        Workloads and the pods that have not finished, with one API client). Default is the client's default.
    type: path
    version_added: 0.1.0
  write:
    description:
      - Write O(dest). With V(false) the inventory is only validated and planned, nothing is
        written, and the plan is set as the C(gpushare_plan) fact.
    type: bool
    default: true
requirements:
  - PyYAML on the controller
"""

EXAMPLES = r"""
- name: Plan the inventory and write the report
  gpushare.cluster.plan_report:
    dest: "{{ lookup('ansible.builtin.env', 'PWD') }}/build/plan"
  register: report

- name: Write a plan made earlier by gpushare.cluster.cluster_plan
  gpushare.cluster.plan_report:
    plan: "{{ gpushare_plan }}"
    dest: /srv/gitops/cluster/plan
    addons: [gpu_operator, dra_driver, kueue, tenancy, monitoring]

- name: Show the summary
  ansible.builtin.debug:
    msg: "{{ report.summary.splitlines() }}"
"""

RETURN = r"""
dest:
  description: The directory written.
  returned: always
  type: str
  sample: /home/me/cluster/build/plan
html:
  description: Path of the HTML report.
  returned: always
  type: str
  sample: /home/me/cluster/build/plan/index.html
files:
  description: Paths of every file in the published directory, relative to it.
  returned: always
  type: list
  elements: str
  sample: [index.html, plan.json, summary.txt, manifests/examples/10-serving.yaml]
summary:
  description:
    - The plan as a plain-text table, at most O(summary_rows) GPU rows (C(summary.txt) has all). The
      warnings, already shown as Ansible warnings, are counted there, not repeated.
  returned: always
  type: str
warnings_count:
  description: Number of warnings in the plan (each is also shown as an Ansible warning).
  returned: always
  type: int
  sample: 1
errors:
  description: Every problem found in the inventory, when the plan cannot be made.
  returned: failure
  type: list
  elements: str
changes:
  description: What applying the plan changes (the content of C(changes.json), C(docs/plan.md)).
  returned: when O(compare) is set
  type: dict
  version_added: 0.1.0
changes_summary:
  description: RV(changes) as lines for a terminal.
  returned: when O(compare) is set
  type: list
  elements: str
  version_added: 0.1.0
plan:
  description: The plan, when O(return_plan=true).
  returned: when O(return_plan=true)
  type: dict
"""
