#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done on the controller by the action plugin of the same name.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: render_addon
short_description: Write the Helm values and manifests of one add-on role from the plan
version_added: 0.1.0
description:
  - Writes, under O(dest) on the controller, every file the add-on role O(addon) applies
    (C(values/<release>.yaml) and C(manifests/<addon>/*.yaml)), made from O(plan) with the
    collection's pure planner code. It is the render step of the roles
    C(gpushare.cluster.gpu_operator), C(dra_driver), C(kueue), C(tenancy) and C(monitoring),
    and M(gpushare.cluster.plan_report) writes the same bytes into the plan directory.
  - The settings are the role's variables (for example C(kueue_frameworks),
    C(gpushare_mirrors) through C(kueue_mirrors)) as the task sees them, falling back to the
    role's defaults, and checked against the role's C(render) argument spec. Role files the
    add-on embeds (DCGM metrics CSV, Prometheus rules and alert template, Grafana
    dashboards) are read from the role.
  - Only files whose content differs are written, each through a rename; a second run
    changes nothing. No secret is ever written (the Grafana admin Secret is applied by the
    monitoring role, never rendered).
  - Runs on the controller only; it never connects to a host. Supports check mode and diff mode.
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  addon:
    description:
      - The add-on role whose files are written.
      - V(dra_driver) writes nothing when the plan's backend is C(device_plugin).
    type: str
    required: true
    choices: [gpu_operator, dra_driver, kueue, tenancy, monitoring]
  plan:
    description:
      - The plan (the C(gpushare_plan) fact of M(gpushare.cluster.cluster_plan)). Not read by V(monitoring).
    type: dict
    default: {}
  dest:
    description:
      - Directory on the controller the files are written under (the role's C(<addon>_render_dir)).
    type: path
    required: true
requirements:
  - PyYAML on the controller
"""

EXAMPLES = r"""
- name: Write the Kueue values and the plan's queues
  gpushare.cluster.render_addon:
    addon: kueue
    plan: "{{ gpushare_plan }}"
    dest: "{{ playbook_dir }}/rendered"
  delegate_to: localhost
  run_once: true
  vars:
    kueue_frameworks: [batch/job, pod]
"""

RETURN = r"""
dest:
  description: The directory written under.
  returned: always
  type: str
  sample: /home/me/cluster/rendered
files:
  description: Every file of the add-on, relative to O(dest), in apply order.
  returned: always
  type: list
  elements: str
  sample: [values/kueue.yaml, manifests/kueue/queues.yaml]
changed_files:
  description: The files whose content changed (or would change in check mode).
  returned: always
  type: list
  elements: str
  sample: [manifests/kueue/queues.yaml]
"""
