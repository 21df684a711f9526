# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options shared by the filters that pick one add-on role's part of the plan.

DOCUMENTATION: the plan piped in and the add-on role (plan_objects, prune_plan).
ROLE: the add-on role piped in (prune_kinds).
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  _input:
    description: The C(gpushare_plan) fact.
    type: dict
    required: true
  role:
    description: The add-on role.
    type: str
    choices: [dra_driver, kueue, tenancy]
    required: true
"""

    ROLE = r"""
options:
  _input:
    description: The add-on role.
    type: str
    choices: [dra_driver, kueue, tenancy]
    required: true
"""
