# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attributes of the modules that only read or compute and change nothing (gpu_facts, mig_layout)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode and return the same result as a normal run.
    support: full
  diff_mode:
    description: Returns no diff; nothing is changed.
    support: none
"""
