"""plan.yml -e gpushare_plan_compare=cluster against a real control plane: kube-apiserver (its
defaults and server metadata on every object), Kueue v0.19.2 (ClusterQueue usage, Workloads).

Plan A (the example inventory) is applied with its ownership labels (stamped here when the plan
does not carry them yet), a Job in the training team is admitted, then plan.yml reads the
cluster through the kubeconfig with gpushare.cluster.k8s_list: against plan A nothing differs
(the server's defaults are not changes); against plan B (training removed) the training objects
are deleted, its team is removed while its Workload is admitted, and that Workload loses its
queue."""

from __future__ import annotations

import importlib.util
import json

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

from rehearsal_env import REPO_ROOT
from test_quotas_day import APPLY_ORDER, HOST, _apply, _apply_gpu_node, _condition, _get, _gpu_job, _wait, _workloads

_SPEC = importlib.util.spec_from_file_location(
    "gpushare_plan_compare_cases", REPO_ROOT / "tests" / "integration" / "playbooks" / "test_plan_compare_playbook.py")
cases = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cases)
runner = cases.runner


def _plan_dir(tmp, name, edit, *extra):
    plan_dir = tmp / ("plan-%s" % name)
    result = runner.run_plan_playbook(cases.write_inventory(tmp / ("inv-%s" % name), edit), plan_dir,
                                      "-e", "gpushare_plan_render_addons=false", *extra)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return plan_dir


@pytest.fixture(scope="module")
def applied(rehearsal_bin, tmp_path_factory):
    """A control plane with plan A applied and a training Job admitted."""
    tmp = tmp_path_factory.mktemp("plan-compare")
    plan = json.loads((_plan_dir(tmp, "a", None) / "plan.json").read_text(encoding="utf-8"))
    objects = plan["objects"]
    if not all(ownership.is_owned(obj) for obj in objects):
        objects = ownership.stamp(objects, ownership.generation(objects))
    info = rc.start(str(tmp / "cluster"), kueue_configuration=helm_values.kueue_configuration(plan, {}),
                    bin_dir=rehearsal_bin["bin_dir"])
    try:
        # Every object of the plan, namespaces and queues first (kubectl applies a stream in order).
        order = {kind: position for position, kind in enumerate(APPLY_ORDER)}
        rc.apply_objects(info, sorted(objects, key=lambda obj: order.get(obj["kind"], len(order))))
        # Labelled as the gpu_operator role labels it (what a drain is decided on).
        _apply_gpu_node(info, plan, helm_values.node_labels(plan)[HOST])
        for name in plan["teams"]:
            _wait("ClusterQueue %s active" % name, lambda n=name: _condition(_get(info, "ClusterQueue", n), "Active"))
        _apply(info, _gpu_job("fine-tune", "training", "training", "gpu-rtx-pro-6000"))
        _wait("training's Job admitted", lambda: next(
            (w for w in _workloads(info, "training") if _condition(w, "Admitted")), None))
        yield {"info": info, "tmp": tmp}
    finally:
        rc.stop(str(tmp / "cluster"))


def _compare_with_cluster(applied, name, edit):
    plan_dir = _plan_dir(applied["tmp"], name, edit, "-e", "gpushare_plan_compare=cluster",
                         "-e", "gpushare_kubeconfig=%s" % applied["info"]["kubeconfig"])
    return json.loads((plan_dir / "changes.json").read_text(encoding="utf-8"))


def test_the_applied_plan_against_the_cluster_changes_nothing(applied):
    changes = _compare_with_cluster(applied, "a-again", None)
    assert changes["compared_with"] == "cluster"
    assert changes["objects"] == {"create": [], "update": [], "delete": []}, json.dumps(changes["objects"], indent=1)
    assert changes["nodes"] == [] and changes["teams"] == [] and changes["disruptive"] == []
    assert changes["workloads"]["known"] is True and changes["workloads"]["without_queue"] == []


def test_a_removed_team_against_the_cluster(applied):
    changes = _compare_with_cluster(applied, "b", cases.remove_team)
    deleted = [(item["kind"], item["namespace"], item["name"]) for item in changes["objects"]["delete"]]
    for expected in [("ClusterQueue", "", "training"), ("LocalQueue", "training", "training"),
                     ("Namespace", "", "training"), ("WorkloadPriorityClass", "", "training"),
                     ("RoleBinding", "training", "gpushare-team")]:
        assert expected in deleted
    assert all(item["namespace"] != "training" for item in changes["objects"]["create"])
    updated = {item["name"]: item["fields"] for item in changes["objects"]["update"] if item["kind"] == "ClusterQueue"}
    assert "data" in updated and any(path.endswith("nominalQuota") for path in updated["data"]), updated
    (training,) = [team for team in changes["teams"] if team["team"] == "training"]
    assert training["change"] == "removed"
    assert training["in_use"] == {"gpushare.io/rtx-pro-6000": 1}
    (lost,) = changes["workloads"]["without_queue"]
    assert (lost["namespace"], lost["queue"], lost["admitted"], lost["cluster_queue"]) == (
        "training", "training", True, "training")
    assert lost["name"].startswith("job-fine-tune-")
    assert [reason["reason"] for reason in changes["disruptive"] if reason["kind"] == "team_removed"] == [
        "team training is removed; 1 workload(s) lose their queue"]
