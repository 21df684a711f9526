"""A chart upgrade's CRDs, on the rehearsal's API server: Helm created them once, at the older
version; the upgrade's first step (kubernetes_steps helm_crds) applies the chart's CRDs
server-side, taking the fields over from Helm, so objects of the new schema keep their new
fields.

What is real: the API server and its CRD handling (structural schemas, pruning of unknown
fields, server-side apply and field managers), kubernetes.core.k8s, the upstream CRD files of
the pinned kube-prometheus-stack 88.5.3 and DRA driver v0.4.1 charts. What stands in: `helm show
crds`, a script that prints those files as helm prints a chart's crds/ directories.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

from rehearsal_env import run_local_playbook, wait_until

HERE = Path(__file__).resolve().parent
PLAYBOOK = HERE / "playbooks" / "helm_crds.yml"
HELM = HERE.parents[1] / "fixtures" / "addons" / "bin" / "helm"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# chart (as `helm show crds` names it) -> its CRD files in the reference tree
CHART_FILES = {
    "kube-prometheus-stack": ["crds/prometheus-operator/crd-servicemonitors.yaml",
                              "crds/prometheus-operator/crd-podmonitors.yaml",
                              "crds/prometheus-operator/crd-prometheusrules.yaml"],
    "dra-driver-nvidia-gpu": ["dra-driver/crds/resource.nvidia.com_computedomains.yaml",
                              "dra-driver/crds/resource.nvidia.com_computedomaincliques.yaml"],
}
SERVICE_MONITORS = "/apis/monitoring.coreos.com/v1/namespaces/default/servicemonitors"


def _crd(path: Path) -> dict:
    return next(doc for doc in yaml.safe_load_all(path.read_text()) if doc)


def _established(info, name):
    status, body = rc.api_request(info, "GET", f"{CRDS}/{name}")
    return status == 200 and any(c["type"] == "Established" and c["status"] == "True"
                                 for c in (body.get("status") or {}).get("conditions") or [])


def _run(tmp_path, info, crds_dir):
    variables = {"kubeconfig": info["kubeconfig"], "helm": str(HELM), "crds_dir": str(crds_dir),
                 "charts": [{"chart_ref": "oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack",
                             "chart_version": "88.5.3"},
                            {"chart_ref": "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
                             "chart_version": "v0.4.1"}]}
    result = run_local_playbook(PLAYBOOK, variables, tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return int(re.search(r"localhost\s*:.*changed=(\d+)", result.stdout).group(1))


def _service_monitor(name):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"scrapeClass": "gpu", "selector": {"matchLabels": {"app": "x"}}, "endpoints": [{"port": "metrics"}]}}


def test_an_upgrade_brings_the_crds_helm_created_to_the_chart_version(rehearsal, reference_dir, tmp_path):
    info = rehearsal
    crds_dir = tmp_path / "charts"
    names = []
    for chart, files in CHART_FILES.items():
        (crds_dir / chart).mkdir(parents=True)
        for file in files:
            shutil.copy(reference_dir / file, crds_dir / chart / Path(file).name)
            names.append(_crd(reference_dir / file)["metadata"]["name"])

    # The ServiceMonitor CRD as an older chart's first install left it: created by Helm, without
    # the field the newer operator reads (spec.scrapeClass).
    older = copy.deepcopy(_crd(reference_dir / CHART_FILES["kube-prometheus-stack"][0]))
    del older["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["scrapeClass"]
    status, body = rc.api_request(info, "POST", f"{CRDS}?fieldManager=helm", older)
    assert status == 201, body
    try:
        wait_until("the older ServiceMonitor CRD established", lambda: _established(info, older["metadata"]["name"]), 30, 0.5)
        # On the older schema the API server prunes the new field: the operator would never see it.
        status, body = rc.api_request(info, "POST", SERVICE_MONITORS, _service_monitor("before-upgrade"))
        assert status == 201, body
        assert "scrapeClass" not in body["spec"], body["spec"]

        changed = _run(tmp_path, info, crds_dir)
        assert changed >= 2, changed

        for name in names:
            assert _established(info, name), name
        status, crd = rc.api_request(info, "GET", f"{CRDS}/servicemonitors.monitoring.coreos.com")
        assert "scrapeClass" in crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        assert crd["metadata"]["annotations"]["operator.prometheus.io/version"] == "0.93.1"
        managers = {(m["manager"], m["operation"]) for m in crd["metadata"]["managedFields"]}
        assert ("gpushare", "Apply") in managers, managers
        # Client-side apply would have written a last-applied annotation; server-side does not.
        assert "kubectl.kubernetes.io/last-applied-configuration" not in crd["metadata"]["annotations"]
        wait_until("the new ServiceMonitor schema served", lambda: "scrapeClass" in (rc.api_request(
            info, "POST", SERVICE_MONITORS + "?dryRun=All", _service_monitor("probe"))[1].get("spec") or {}), 30, 0.5)
        status, body = rc.api_request(info, "POST", SERVICE_MONITORS, _service_monitor("after-upgrade"))
        assert status == 201 and body["spec"]["scrapeClass"] == "gpu", body

        # A second run finds every CRD at the chart's version and changes nothing.
        assert _run(tmp_path, info, crds_dir) == 0
        calls = (crds_dir / "calls.log").read_text().splitlines()
        assert calls[0] == "show crds oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack --version 88.5.3"
    finally:
        for name in set(names) | {older["metadata"]["name"]}:
            rc.api_request(info, "DELETE", f"{CRDS}/{name}")
        wait_until("the test's CRDs deleted", lambda: all(
            rc.api_request(info, "GET", f"{CRDS}/{name}")[0] == 404 for name in names), 60, 0.5)
