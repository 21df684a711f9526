# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure builders of the add-on Helm values and manifests."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world
from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values as hv
from ansible_collections.gpushare.cluster.plugins.module_utils.sources.mirrors import chart_location

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "addons"


def load(name):
    return yaml.safe_load((FIXTURES / name).read_text())


@pytest.fixture
def dra_plan():
    return load("plan_example.yml")


@pytest.fixture
def dp_plan():
    return load("plan_device_plugin.yml")


def test_gpu_operator_dra_turns_the_device_plugin_off_and_sets_the_eviction_label(dra_plan):
    values = hv.gpu_operator_values(dra_plan, {"driver_enabled": False})
    assert values["devicePlugin"]["enabled"] is False
    assert "config" not in values["devicePlugin"]
    assert values["driver"]["enabled"] is False
    assert values["driver"]["manager"]["env"] == [
        {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "nvidia.com/dra-kubelet-plugin"}]
    assert values["mig"]["strategy"] == "mixed" and values["cdi"]["enabled"] is True


def test_gpu_operator_mig_manager_gets_the_plans_mig_parted_config(dra_plan):
    config = hv.gpu_operator_values(dra_plan, {})["migManager"]["config"]
    parsed = yaml.safe_load(config["data"]["config.yaml"])
    assert parsed["mig-configs"]["gpushare-gpu1"] == dra_plan["mig_parted"]["mig-configs"]["gpushare-gpu1"]
    assert config["default"] in parsed["mig-configs"]
    assert parsed["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert config["create"] is True


def test_gpu_operator_microk8s_toolkit_paths_only_on_microk8s(dra_plan, dp_plan):
    env = {e["name"]: e["value"] for e in hv.gpu_operator_values(dra_plan, {})["toolkit"]["env"]}
    assert env["CONTAINERD_SOCKET"] == "/var/snap/microk8s/common/run/containerd.sock"
    assert env["CONTAINERD_CONFIG"].endswith("containerd-template.toml")
    assert [e["name"] for e in hv.gpu_operator_values(dp_plan, {})["toolkit"]["env"]] == [
        "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"]


def test_gpu_operator_device_plugin_configs_come_from_the_plan(dp_plan):
    plugin = hv.gpu_operator_values(dp_plan, {})["devicePlugin"]
    assert plugin["enabled"] is True and plugin["config"]["create"] is True
    data = {name: yaml.safe_load(text) for name, text in plugin["config"]["data"].items()}
    assert data["gpushare-ts-4"] == dp_plan["device_plugin_configs"]["gpushare-ts-4"]
    assert data[plugin["config"]["default"]] == {"version": "v1", "flags": {"migStrategy": "mixed"}}


def test_gpu_operator_dcgm_metrics_and_service_monitor(dra_plan):
    exporter = hv.gpu_operator_values(dra_plan, {"dcgm_metrics_csv": "DCGM_FI_PROF_SM_ACTIVE, gauge, x\n"})["dcgmExporter"]
    assert exporter["config"] == {"create": True, "name": "gpushare-dcgm-metrics",
                                  "data": "DCGM_FI_PROF_SM_ACTIVE, gauge, x\n"}
    assert exporter["serviceMonitor"]["enabled"] is True and exporter["serviceMonitor"]["honorLabels"] is False


def test_extra_values_are_merged_last(dra_plan):
    values = hv.gpu_operator_values(dra_plan, {"extra_values": {"dcgmExporter": {"hostPID": True},
                                                                "mig": {"strategy": "single"}}})
    assert values["dcgmExporter"]["hostPID"] is True and values["dcgmExporter"]["enabled"] is True
    assert values["mig"]["strategy"] == "single"


def test_mirrors_rewrite_images_and_charts(dra_plan):
    mirrors = {"registry": "mirror.example:5000", "registries": {"registry.k8s.io": "k8s.mirror.example"}}
    operator = hv.gpu_operator_values(dra_plan, {"mirrors": mirrors})
    assert operator["toolkit"]["repository"] == "mirror.example:5000/nvidia/k8s"
    assert operator["node-feature-discovery"]["image"]["repository"] == "k8s.mirror.example/nfd/node-feature-discovery"
    dra = hv.dra_driver_values(dra_plan, {"mirrors": mirrors})
    assert dra["image"]["repository"] == "k8s.mirror.example/dra-driver-nvidia/dra-driver-nvidia-gpu"
    assert hv.monitoring_values({"mirrors": mirrors})["global"]["imageRegistry"] == "mirror.example:5000"
    assert chart_location("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts",
                          {"helm": {"dir": "/srv/charts"}})["chart_ref"] == "/srv/charts/kueue-0.19.2.tgz"
    oci = chart_location("gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia",
                         {"helm": {"oci": "oci://mirror.example/charts"}})
    assert (oci["chart_ref"], oci["chart_version"]) == ("oci://mirror.example/charts/gpu-operator", "v26.7.0")
    upstream = chart_location("gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia", {})
    assert (upstream["chart_ref"], upstream["chart_repo_url"]) == ("gpu-operator", "https://helm.ngc.nvidia.com/nvidia")


def test_dra_driver_time_slicing_gate_follows_the_plans_claims(dra_plan):
    values = hv.dra_driver_values(dra_plan, {"feature_gates": {"MPSSupport": False}})
    assert values["featureGates"] == {"MPSSupport": False, "TimeSlicingSettings": True}
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["nvidiaDriverRoot"] == "/run/nvidia/driver"
    assert values["kubeletPlugin"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true",
                                                       "nvidia.com/gpu.deploy.client": "true"}
    assert values["kubeletPlugin"]["kubeletPluginsDirectoryPath"].startswith("/var/snap/microk8s/")
    # no time-slicing settings in the claims -> the gate stays off
    plain = copy.deepcopy(dra_plan)
    for obj in plain["objects"]:
        if obj["kind"] == "ResourceClaim":
            obj["spec"]["devices"].pop("config")
    assert hv.dra_driver_values(plain, {"operator_driver": False})["featureGates"] == {"TimeSlicingSettings": False}
    assert hv.dra_driver_values(plain, {"operator_driver": False})["nvidiaDriverRoot"] == "/"


def test_dra_driver_refuses_the_device_plugin_backend(dp_plan):
    with pytest.raises(ValueError, match="gpushare_plan.backend"):
        hv.dra_driver_values(dp_plan, {})


def test_kueue_configuration(dra_plan, dp_plan):
    values = hv.kueue_values(dra_plan, {"wait_for_pods_ready_timeout": "45m"})
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["waitForPodsReady"]["timeout"] == "45m"
    assert config["metrics"]["enableClusterQueueResources"] is True
    assert config["resources"]["deviceClassMappings"] == dra_plan["kueue_configuration"]["resources"]["deviceClassMappings"]
    assert config["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == ["production", "data", "training"]
    for framework in ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod", "deployment",
                      "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset", "ray.io/rayjob"):
        assert framework in config["integrations"]["frameworks"]
    assert values["enablePrometheus"] is True
    assert values["controllerManager"]["manager"]["image"]["tag"] == "v0.19.2"
    dp_config = yaml.safe_load(hv.kueue_values(dp_plan, {})["managerConfig"]["controllerManagerConfigYaml"])
    assert "resources" not in dp_config
    assert dp_config["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == ["research", "data",
                                                                                          "data-notebooks"]


def test_kueue_plan_configuration_wins_over_defaults(dra_plan):
    dra_plan["kueue_configuration"]["managedJobsNamespaceSelector"] = {
        "matchExpressions": [{"key": "gpushare.io/team", "operator": "Exists"}]}
    config = hv.kueue_configuration(dra_plan, {})
    assert config["managedJobsNamespaceSelector"] == dra_plan["kueue_configuration"]["managedJobsNamespaceSelector"]


def test_monitoring_values_pick_up_everything_and_keep_the_password_out():
    values = hv.monitoring_values({"retention": "90d", "storage_size": "200Gi", "storage_class": "fast",
                                   "grafana_admin_secret": "grafana-login"})
    spec = values["prometheus"]["prometheusSpec"]
    for kind in ("serviceMonitor", "podMonitor", "rule"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False
        assert spec[f"{kind}Selector"] == {} and spec[f"{kind}NamespaceSelector"] == {}
    assert spec["retention"] == "90d"
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "fast"
    assert values["grafana"]["admin"]["existingSecret"] == "grafana-login"
    assert "adminPassword" not in yaml.safe_dump(values) and values["grafana"]["admin"]["passwordKey"] == "admin-password"
    assert "namespaces=[gpushare.io/team]" in values["kube-state-metrics"]["metricLabelsAllowlist"]


def test_objects_are_split_by_role(dra_plan):
    kinds = {role: {o["kind"] for o in hv.objects_for(dra_plan, role)} for role in hv.KINDS_BY_ROLE}
    assert kinds["dra_driver"] == {"DeviceClass", "ResourceClaimTemplate", "ResourceClaim"}
    assert kinds["kueue"] == {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    assert kinds["tenancy"] == {"Namespace", "Role", "RoleBinding", "ValidatingAdmissionPolicy",
                                "ValidatingAdmissionPolicyBinding"}
    assert sum(len(hv.objects_for(dra_plan, role)) for role in hv.KINDS_BY_ROLE) == len(dra_plan["objects"])
    with pytest.raises(ValueError, match="role: 'monitoring'"):
        hv.objects_for(dra_plan, "monitoring")


def test_bad_plans_are_named(dra_plan):
    with pytest.raises(ValueError, match="gpushare_plan: missing or empty"):
        hv.gpu_operator_values({}, {})
    broken = dict(dra_plan, backend="vgpu")
    with pytest.raises(ValueError, match="gpushare_plan.backend: 'vgpu'"):
        hv.kueue_values(broken, {})
    broken = dict(dra_plan, objects=[{"kind": "Namespace"}])
    with pytest.raises(ValueError, match=r"gpushare_plan.objects\[0\]"):
        hv.objects_for(broken, "tenancy")


def test_node_labels_add_the_backend_selectors(dra_plan, dp_plan):
    assert hv.node_labels(dra_plan) == {"gpu1": {"nvidia.com/mig.config": "gpushare-gpu1",
                                                 "nvidia.com/dra-kubelet-plugin": "true"}}
    assert hv.node_labels(dp_plan) == {"a100": {"nvidia.com/mig.config": "gpushare-a100"},
                                       "l40s": {"nvidia.com/device-plugin.config": "gpushare-ts-4"}}


def test_relabel_steps_only_for_nodes_that_change(dp_plan):
    current = {"a100": {"nvidia.com/mig.config": "all-disabled", "kubernetes.io/hostname": "a100"},
               "l40s": {"nvidia.com/device-plugin.config": "gpushare-ts-4"}}
    steps = hv.relabel_steps(dp_plan, current)
    assert steps == [{"node": "a100", "labels": {"nvidia.com/mig.config": "gpushare-a100"}, "mig_change": True,
                      "drain": True, "mig_config": "gpushare-a100", "resume": False, "restart_mig_manager": False}]
    current["a100"]["nvidia.com/mig.config"] = "gpushare-a100"
    assert hv.relabel_steps(dp_plan, current) == []
    with pytest.raises(ValueError, match="nodes l40s: in the plan but not in the cluster"):
        hv.relabel_steps(dp_plan, {"a100": {}})


def test_relabel_without_a_gpu_change_needs_no_drain(dra_plan):
    steps = hv.relabel_steps(dra_plan, {"gpu1": {"nvidia.com/mig.config": "gpushare-gpu1"}})
    assert steps == [{"node": "gpu1", "labels": {"nvidia.com/dra-kubelet-plugin": "true"}, "mig_change": False,
                      "drain": False, "mig_config": "gpushare-gpu1", "resume": False, "restart_mig_manager": False}]


def test_a_node_an_earlier_run_left_unfinished_is_finished_by_the_next(dp_plan):
    right = {"a100": {"nvidia.com/mig.config": "gpushare-a100", "nvidia.com/mig.config.state": "failed"},
             "l40s": {"nvidia.com/device-plugin.config": "gpushare-ts-4"}}
    assert hv.relabel_steps(dp_plan, right) == []  # not annotated: nothing to finish
    steps = hv.relabel_steps(dp_plan, right, ["a100"])
    assert steps == [{"node": "a100", "labels": {}, "mig_change": False, "drain": True, "mig_config": "gpushare-a100",
                      "resume": True, "restart_mig_manager": True}]
    # MIG Manager did apply it (the node did not come back in time): wait and uncordon only
    right["a100"]["nvidia.com/mig.config.state"] = "success"
    assert hv.relabel_steps(dp_plan, right, ["a100"])[0]["restart_mig_manager"] is False
    # a node without a MIG config: finished without MIG Manager
    assert hv.relabel_steps(dp_plan, right, ["l40s"]) == [
        {"node": "l40s", "labels": {}, "mig_change": False, "drain": True, "mig_config": None,
         "resume": True, "restart_mig_manager": False}]
    # the plan changed again meanwhile: an ordinary step with the new labels
    right["a100"]["nvidia.com/mig.config"] = "all-disabled"
    assert hv.relabel_steps(dp_plan, right, ["a100"])[0]["mig_change"] is True


def test_the_driver_managers_pause_is_not_a_drift_to_correct(dra_plan):
    """k8s-driver-manager v0.12.0 (maybeSetPaused) turns "true" into paused-for-driver-upgrade and v
    into v_paused-for-driver-upgrade during a driver reload, then back: the relabel leaves that alone."""
    paused = {"gpu1": {"nvidia.com/mig.config": "gpushare-gpu1", "nvidia.com/dra-kubelet-plugin": "paused-for-driver-upgrade"}}
    assert hv.relabel_steps(dra_plan, paused) == []
    # a value that is not the pause of the wanted one is still corrected
    for other in ("false", "paused", "true_paused-for-driver-upgrade", ""):
        current = {"gpu1": {"nvidia.com/mig.config": "gpushare-gpu1", "nvidia.com/dra-kubelet-plugin": other}}
        assert hv.relabel_steps(dra_plan, current)[0]["labels"] == {"nvidia.com/dra-kubelet-plugin": "true"}, other
    # the pause of a label the driver manager does not manage is a drift like any other
    mig_paused = {"gpu1": {"nvidia.com/mig.config": "gpushare-gpu1_paused-for-driver-upgrade",
                           "nvidia.com/dra-kubelet-plugin": "true"}}
    assert hv.relabel_steps(dra_plan, mig_paused)[0]["labels"] == {"nvidia.com/mig.config": "gpushare-gpu1"}


def test_gpu_pods_are_those_holding_gpus():
    pods = [
        {"metadata": {"name": "vllm", "namespace": "production"},
         "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}, "status": {"phase": "Running"}},
        {"metadata": {"name": "notebook", "namespace": "data"},
         "spec": {"containers": [{}], "resourceClaims": [{"name": "gpu"}]}, "status": {"phase": "Running"}},
        {"metadata": {"name": "web", "namespace": "data"}, "spec": {"containers": [{"resources": {"limits": {"cpu": 1}}}]}},
        {"metadata": {"name": "dcgm", "namespace": "gpu-operator", "ownerReferences": [{"kind": "DaemonSet"}]},
         "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
        {"metadata": {"name": "done", "namespace": "training"},
         "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}, "status": {"phase": "Succeeded"}},
    ]
    assert hv.gpu_pods(pods) == [{"name": "vllm", "namespace": "production"}, {"name": "notebook", "namespace": "data"}]


def test_status_helpers():
    queues = [{"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Active", "status": "True"}]}},
              {"metadata": {"name": "b"}, "status": {"conditions": [
                  {"type": "Active", "status": "False", "message": "flavor rtx-pro-6000-whole not found"}]}},
              {"metadata": {"name": "c"}}]
    assert hv.cluster_queue_problems(queues, ["a", "b", "c", "d"]) == [
        "b (flavor rtx-pro-6000-whole not found)", "c (no status yet)", "d (not found)"]
    results = [{"item": {"kind": "Prometheus"}, "resources": []},
               {"item": {"kind": "Deployment"}, "resources": [{"metadata": {"name": "grafana"}, "status": {
                   "conditions": [{"type": "Available", "status": "False", "message": "0/1 ready"}]}}]}]
    assert hv.not_available(results) == ["no Prometheus found", "Deployment grafana not Available (0/1 ready)"]


def test_manifest_helpers_round_trip(dra_plan):
    objects = hv.objects_for(dra_plan, "kueue")
    assert list(yaml.safe_load_all(hv.to_manifests(objects))) == objects
    assert hv.to_manifests([]) == ""
    rule = hv.prometheus_rule("gpushare", "monitoring", "groups:\n  - name: g\n    rules: []\n")
    assert rule["spec"]["groups"] == [{"name": "g", "rules": []}]
    with pytest.raises(ValueError, match="monitoring/empty"):
        hv.prometheus_rule("empty", "monitoring", "{}")
    # recording rules and rendered alerts in one object, in order
    both = hv.prometheus_rule("gpushare", "monitoring", "groups:\n  - name: g\n    rules: []\n",
                              "groups:\n  - name: alerts\n    rules: []\n")
    assert [g["name"] for g in both["spec"]["groups"]] == ["g", "alerts"]
    with pytest.raises(ValueError, match="rule file 2 has no groups"):
        hv.prometheus_rule("gpushare", "monitoring", "groups:\n  - name: g\n    rules: []\n", "")
    with pytest.raises(ValueError, match="rule group names repeat: g"):
        hv.prometheus_rule("gpushare", "monitoring", "groups: [{name: g, rules: []}]", "groups: [{name: g, rules: []}]")
    cm = hv.dashboard_configmap("d", "monitoring", "d.json", "{}")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"


# --- dcgm-exporter attribution and the container toolkit (issue: no GPU attributed under dra) ----

def _env(values, section):
    return {e["name"]: e["value"] for e in values[section].get("env") or []}


def test_unprivileged_containers_cannot_take_gpus_by_environment(dra_plan, dp_plan):
    # Container toolkit v1.20.0: ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED sets
    # accept-nvidia-visible-devices-envvar-when-unprivileged, true unless told otherwise.
    for plan in (dra_plan, dp_plan):
        values = hv.gpu_operator_values(plan, {})
        assert _env(values, "toolkit")["ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"] == "false"
        # GPUs that are allocated still arrive, through CDI.
        assert values["cdi"]["enabled"] is True


def test_dcgm_exporter_attributes_dra_devices(dra_plan):
    values = hv.gpu_operator_values(dra_plan, {})
    env = _env(values, "dcgmExporter")
    assert env == {"KUBERNETES_ENABLE_DRA": "true"}  # and no KUBERNETES_VIRTUAL_GPUS: it skips the DRA mapping
    assert values["dcgmExporter"]["enablePodUID"] is True  # the operator mounts the token only then
    role, binding = hv.dcgm_exporter_rbac(dra_plan, "gpu-operator")
    assert role["kind"] == "ClusterRole" and role["rules"] == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["get", "list", "watch"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"}]
    off = hv.gpu_operator_values(dra_plan, {"dcgm_dra_attribution": False})
    assert "env" not in off["dcgmExporter"] and "enablePodUID" not in off["dcgmExporter"]
    assert hv.dcgm_exporter_rbac(dra_plan, "gpu-operator", False) == []


def test_dcgm_exporter_attributes_time_sliced_gpus_under_device_plugin(dp_plan):
    def with_shared(resource):
        plan = copy.deepcopy(dp_plan)
        for host in plan["nodes"]:
            for gpu in plan["nodes"][host]["gpus"]:
                gpu["resources"] = {(resource if name.endswith(".shared") else name): count
                                    for name, count in gpu["resources"].items()
                                    if resource or not name.endswith(".shared")}
        return plan

    assert hv.time_sliced_resources(dp_plan) == ["nvidia.com/gpu.shared"]
    env = _env(hv.gpu_operator_values(dp_plan, {}), "dcgmExporter")
    # The exporter maps nvidia.com/gpu and nvidia.com/mig-* only; .shared must be listed, and
    # every pod sharing the GPU gets its own series only with KUBERNETES_VIRTUAL_GPUS.
    assert env == {"NVIDIA_RESOURCE_NAMES": "nvidia.com/gpu.shared", "KUBERNETES_VIRTUAL_GPUS": "true"}
    assert hv.dcgm_exporter_rbac(dp_plan, "gpu-operator") == []
    # A time-sliced full-size MIG instance (nvidia.com/mig-<profile>.shared) is mapped by prefix.
    env = _env(hv.gpu_operator_values(with_shared("nvidia.com/mig-7g.80gb.shared"), {}), "dcgmExporter")
    assert env == {"KUBERNETES_VIRTUAL_GPUS": "true"}
    # Nothing time-sliced: the exporter's defaults already map every GPU to its one pod.
    assert "env" not in hv.gpu_operator_values(with_shared(None), {})["dcgmExporter"]


def test_dcgm_exporter_settings_exist_in_the_pinned_chart(reference_dir, dra_plan, dp_plan):
    from addon_checks import values_problems  # tests/support, shared with the role render tests

    upstream = yaml.safe_load((reference_dir / "gpu-operator" / "values.yaml").read_text())
    for key in ("env", "enablePodUID"):
        assert key in upstream["dcgmExporter"], key
    assert "env" in upstream["toolkit"]
    assert upstream["toolkit"]["version"] == "v1.20.0"  # the toolkit whose setting name is used
    assert upstream["dcgmExporter"]["version"].startswith("4.6.0-4.8.3")  # the exporter read for the env names
    for plan in (dra_plan, dp_plan):
        assert values_problems("gpu-operator", hv.gpu_operator_values(plan, {}), reference_dir) == []


def _node(name, ready="True", allocatable=None):
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": ready, "message": "m"}],
                                                   "allocatable": allocatable or {}}}


def test_a_device_plugin_node_is_back_when_ready_with_the_planned_resources(dp_plan):
    back = _node("a100", allocatable={"nvidia.com/mig-3g.20gb": "2", "nvidia.com/gpu": "1", "cpu": "8"})
    assert hv.node_back_problems(dp_plan, "a100", [back], None) == []
    assert hv.node_back_problems(dp_plan, "a100", [_node("a100", "False", back["status"]["allocatable"])], None) == [
        "node a100 is not Ready (m)"]
    assert hv.node_back_problems(dp_plan, "a100", [_node("a100", allocatable={"nvidia.com/gpu": "1"})], None) == [
        "node a100 advertises nvidia.com/mig-3g.20gb: 0, the plan has 2"]
    assert hv.node_back_problems(dp_plan, "a100", [], None) == ["node a100 is not in the cluster"]
    with pytest.raises(hv.PlanContractError, match="node nowhere: not in the plan"):
        hv.node_back_problems(dp_plan, "nowhere", [], None)


def test_a_dra_node_is_back_when_its_slices_hold_every_planned_gpu_and_mig_device(dra_plan):
    # What the driver publishes for the plan's layout, as the rehearsal models it from the driver's source.
    host, node = next(iter(dra_plan["nodes"].items()))
    published = world.resource_slice(host, node["gpus"])[0]
    devices = published["spec"]["devices"]
    whole = [d for d in devices if d["attributes"]["type"]["string"] == "gpu"]
    mig = [d for d in devices if d["attributes"]["type"]["string"] == "mig"]
    assert whole and mig
    assert hv.node_back_problems(dra_plan, host, None, [published]) == []
    # the Node part alone: no allocatable is asked of a dra node
    assert hv.node_back_problems(dra_plan, host, [_node(host)], None) == []
    before_mig_manager = {"spec": {"driver": "gpu.nvidia.com", "nodeName": host, "devices": whole}}
    assert hv.node_back_problems(dra_plan, host, None, [before_mig_manager]) == [
        "node %s publishes 0 mig device(s) (gpu.nvidia.com ResourceSlices), the plan has %d" % (host, len(mig))]
    other_driver = {"spec": {"driver": "example.com", "nodeName": host, "devices": devices}}
    assert len(hv.node_back_problems(dra_plan, host, None, [other_driver])) == 2
    # as many MIG devices as planned, but every one of the first one's profile: another layout
    stale = copy.deepcopy(published)
    first = mig[0]["attributes"]["profile"]["string"]
    for device in stale["spec"]["devices"]:
        if device["attributes"]["type"]["string"] == "mig":
            device["attributes"]["profile"]["string"] = first
    problems = hv.node_back_problems(dra_plan, host, None, [stale])
    assert problems == ["node %s publishes MIG devices %s x%d (gpu.nvidia.com ResourceSlices), the plan has %s" % (
        host, first, len(mig), ", ".join("%s x%d" % (p, n) for p, n in sorted(Counter(
            d["attributes"]["profile"]["string"] for d in mig).items())))]
