# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An action plugin built the way the task executor builds it, without a playbook.

The task and the connection are stand-ins (the collection's actions run on the controller and
never use the connection); the loader and the templar are ansible-core's own, so role defaults
and task variables are read and templated as in a play.
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

INVENTORY = Path(__file__).resolve().parents[3] / "fixtures" / "inventories" / "four_gpu_example.yml"


def example_plan():
    """The plan of the four-GPU example inventory (objects, queues and warnings included)."""
    data = yaml.safe_load(INVENTORY.read_text(encoding="utf-8"))
    return build_plan(data["gpushare_teams"], data["nodes"], backend="dra", distribution="kubeadm",
                      kubernetes_version="1.35")


def make_action(action_class, args, task_vars=None, check_mode=False, diff=False):
    """An instance of action_class for a task with these arguments."""
    task = mock.MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    task.diff = diff
    task.action = "gpushare.cluster.%s" % action_class.__module__.rsplit(".", 1)[-1]
    connection = mock.MagicMock()
    connection._shell.tmpdir = "/nonexistent-remote-tmp"  # set: the base class makes no remote tmp
    loader = DataLoader()
    templar = Templar(loader=loader, variables=dict(task_vars or {}))
    return action_class(task, connection, play_context=mock.MagicMock(), loader=loader, templar=templar,
                        shared_loader_obj=None)
