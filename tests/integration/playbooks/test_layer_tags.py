# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running one layer (``site.yml --tags gpu_stack,queues``) touches only what that layer needs.

The host roles tag their fact tasks ``always``; before the host-layer play chose its hosts
from the run's tags, those tasks ran with become on every node whatever layer was asked for.

Here the cluster hosts are local with a ``become`` executable that records every call and
fails, so a single become task of any play would show up.
"""

from __future__ import annotations

import re
import shutil

import pytest

import runner  # tests/support

EXAMPLE = runner.REPO_ROOT / "inventories" / "example"
MULTINODE = runner.REPO_ROOT / "inventories" / "multinode"
HOST_LAYER_PLAYS = ("Prepare the hosts", "Prepare the new hosts")


def _hosts_per_play(*args):
    """{play name: [hosts]} from ``--list-hosts`` (every play, in order)."""
    result = runner.ansible_playbook("--list-hosts", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    plays = {}
    for block in re.split(r"\n(?=\s*play #\d+)", result.stdout):
        match = re.match(r"\s*play #\d+ \([^)]*\): (.*?)\s+TAGS:.*?pattern: .*?\n\s*hosts \((\d+)\):\n?(.*)", block, re.DOTALL)
        if match:
            plays.setdefault(match.group(1), []).append(
                [line.strip() for line in match.group(3).splitlines() if line.strip()][:int(match.group(2))])
    return plays


@pytest.mark.parametrize("tags, host_layer_runs", [
    ("gpu_stack,queues", False),
    ("monitoring", False),
    ("kubernetes", False),
    ("prepare_hosts", True),
    ("host_prep_kernel", True),     # one part of one host role
    ("containerd", True),
    ("all", True),
    ("tagged", True),
    ("host_preparation", False),    # a role name without the "_" separator is another tag
])
def test_host_layer_targets_hosts_only_when_asked_for(tags, host_layer_runs):
    plays = _hosts_per_play("-i", str(MULTINODE), str(runner.PLAYBOOKS / "site.yml"), "--tags", tags)
    (hosts,) = plays["Prepare the hosts"]
    if host_layer_runs:
        assert set(hosts) == {"cp1", "cp2", "cp3", "hgx1", "hgx2", "a100", "l40s"}
    else:
        assert hosts == []
    # The other layers keep their hosts: --tags filters their tasks as before.
    assert plays["Deploy Kueue, the team queues and the tenancy policies"] == [["cp1"]]


def test_add_node_prepares_new_hosts_only_for_the_host_layer():
    args = ("-i", str(MULTINODE), str(runner.PLAYBOOKS / "add_node.yml"), "-e", "gpushare_new_nodes=hgx2")
    assert _hosts_per_play(*args, "--tags", "gpu_stack")["Prepare the new hosts"] == [[]]
    assert _hosts_per_play(*args)["Prepare the new hosts"] == [["hgx2"]]


@pytest.fixture()
def local_cluster(tmp_path):
    """The example inventory with its server run locally and a become that records and fails."""
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLE, inventory)
    return inventory, runner.run_locally_with_recorded_become(inventory, tmp_path)


def test_gpu_stack_and_queues_run_no_become_task(tmp_path, local_cluster):
    inventory, log = local_cluster
    result = runner.ansible_playbook(
        "-i", str(inventory), str(runner.PLAYBOOKS / "site.yml"), "--tags", "gpu_stack,queues", *runner.DEMO_VAULT_ARGS,
        "-e", "gpushare_render_only=true", "-e", "gpushare_discover=false", "-e", "gpushare_render_dir=%s" % (tmp_path / "render"))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert not log.exists(), log.read_text()
    assert "gpushare.cluster.host_prep" not in result.stdout
    assert "gpushare.cluster.containerd" not in result.stdout
    # The layers asked for did their work.
    assert (tmp_path / "render" / "manifests" / "kueue" / "queues.yaml").is_file()
    assert (tmp_path / "render" / "values" / "gpu-operator.yaml").is_file()


def test_the_recorder_sees_a_become_task(tmp_path, local_cluster):
    """The check above could not pass by accident: the host layer's first become task is recorded."""
    inventory, log = local_cluster
    result = runner.ansible_playbook(
        "-i", str(inventory), str(runner.PLAYBOOKS / "site.yml"), "--tags", "host_prep",
        "-e", "gpushare_discover=false")
    assert result.returncode != 0
    assert "BECOME-SUCCESS" in log.read_text()
