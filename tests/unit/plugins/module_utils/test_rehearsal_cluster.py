# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's pure parts: versions in one place, flags, Kueue overrides, certificates,
manifests rewritten for loopback, and a stop that signals only the processes it recorded.
Starting the control plane for real is tested in tests/integration/rehearsal."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

ROLE = Path(__file__).resolve().parents[4] / "roles" / "rehearsal"
GO_DIR = ROLE / "files" / "go"


def test_versions_have_one_home_in_step_with_go_mod_and_role_defaults():
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert {c: str(defaults[f"rehearsal_{c}_version"]) for c in rc.COMPONENTS} == rc.DEFAULT_VERSIONS
    assert rc.check_versions(str(GO_DIR), {}) == rc.DEFAULT_VERSIONS
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    for entry in ("main", "build", "start"):
        assert {c: specs[entry]["options"][f"rehearsal_{c}_version"]["default"] for c in rc.COMPONENTS} == rc.DEFAULT_VERSIONS


def test_every_role_default_is_in_the_argument_specs():
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    options = set()
    for entry in specs.values():
        options |= set(entry["options"])
    assert set(defaults) <= options
    for entry in specs.values():
        for name, spec in entry["options"].items():
            if "default" in spec:
                assert spec["default"] == defaults[name], name


def test_a_version_other_than_go_mod_requires_is_refused_naming_the_file(tmp_path):
    with pytest.raises(rc.RehearsalError, match=r"versions.kueue: 0.18.4 asked for, but .*kueue/go.mod requires sigs.k8s.io/kueue v0.19.2"):
        rc.check_versions(str(GO_DIR), {"kueue": "0.18.4"})
    with pytest.raises(rc.RehearsalError, match="not a release version"):
        rc.check_versions(str(GO_DIR), {"etcd": "latest"})


def test_kubernetes_go_mod_replaces_every_staging_module_with_its_release():
    text = (GO_DIR / "kubernetes" / "go.mod").read_text()
    minor = rc.DEFAULT_VERSIONS["kubernetes"].split(".", 1)[1]
    replaces = [line.split() for line in text.splitlines() if "=>" in line]
    assert replaces
    for parts in replaces:
        left, right = parts[-4], parts[-2:]
        assert right == [left, f"v0.{minor}"], parts


def test_cache_key_changes_with_any_version_and_the_toolchain():
    env = {"GOVERSION": "go1.26.8", "GOOS": "linux", "GOARCH": "amd64"}
    key = rc.cache_key(str(GO_DIR), rc.DEFAULT_VERSIONS, env)
    assert key.startswith("kubernetes1.35.4-etcd3.6.16-kueue0.19.2-kwok0.8.0-")
    assert rc.cache_key(str(GO_DIR), rc.DEFAULT_VERSIONS, env) == key
    assert rc.cache_key(str(GO_DIR), dict(rc.DEFAULT_VERSIONS, kwok="0.8.1"), env) != key
    assert rc.cache_key(str(GO_DIR), rc.DEFAULT_VERSIONS, dict(env, GOVERSION="go1.26.9")) != key


def test_ldflags_set_each_projects_version_variables():
    assert "-X sigs.k8s.io/kueue/pkg/version.GitVersion=v0.19.2" in rc.ldflags("kueue", "0.19.2")
    k8s = rc.ldflags("kubernetes", "1.35.4")
    for flag in ("k8s.io/component-base/version.gitVersion=v1.35.4", "k8s.io/component-base/version.gitMinor=35",
                 "k8s.io/client-go/pkg/version.gitVersion=v1.35.4"):
        assert flag in k8s
    assert "go.etcd.io/etcd/api/v3/version.GitSHA=v3.6.16" in rc.ldflags("etcd", "3.6.16")
    assert "sigs.k8s.io/kwok/pkg/consts.Version=v0.8.0" in rc.ldflags("kwok", "0.8.0")


D = {k: f"/r/{k}" for k in ("sa_pub", "sa_key", "ca_crt", "ca_key", "apiserver_crt", "apiserver_key", "front_proxy_ca_crt",
                            "front_proxy_client_crt", "front_proxy_client_key", "etcd_ca_crt", "apiserver_etcd_client_crt",
                            "apiserver_etcd_client_key", "pki", "kcm_kubeconfig", "scheduler_kubeconfig", "kcm_serving_crt",
                            "kcm_serving_key", "scheduler_serving_crt", "scheduler_serving_key", "kwok_kubeconfig",
                            "kwok_config", "kueue_cert_dir", "etcd_data", "etcd_server_crt", "etcd_server_key")}
PORTS = {"etcd": 1, "etcd_peer": 2, "etcd_metrics": 3, "apiserver": 4, "controller_manager": 5, "scheduler": 6, "kwok": 7,
         "kueue_webhook": 8, "kueue_health": 9, "kueue_metrics": 10}


def test_apiserver_flags_are_kubeadms_with_the_callers_gates_and_args_on_top():
    flags = rc.apiserver_flags(D, PORTS, {"DRAExtendedResource": True}, {"v": 2, "enable-admission-plugins": "NodeRestriction,DefaultTolerationSeconds"})
    assert "--authorization-mode=Node,RBAC" in flags
    assert "--bind-address=127.0.0.1" in flags and "--secure-port=4" in flags
    assert "--feature-gates=DRAExtendedResource=true" in flags
    assert "--enable-admission-plugins=NodeRestriction,DefaultTolerationSeconds" in flags
    assert "--v=2" in flags
    assert len([f for f in flags if f.startswith("--enable-admission-plugins=")]) == 1
    assert "--enable-admission-plugins=NodeRestriction" in rc.apiserver_flags(D, PORTS)
    with pytest.raises(rc.RehearsalError, match="kube-apiserver: feature_gates.DRAExtendedResource"):
        rc.apiserver_flags(D, PORTS, {"DRAExtendedResource": "yes"})
    with pytest.raises(rc.RehearsalError, match="feature gates through feature_gates"):
        rc.apiserver_flags(D, PORTS, {"A": True}, {"feature-gates": "B=true"})


def test_controllers_run_as_their_own_service_accounts_and_sign_csrs():
    flags = rc.controller_manager_flags(D, PORTS)
    for flag in ("--use-service-account-credentials=true", "--controllers=*,bootstrapsigner,tokencleaner",
                 "--cluster-signing-cert-file=/r/ca_crt", "--cluster-signing-key-file=/r/ca_key",
                 "--service-account-private-key-file=/r/sa_key", "--bind-address=127.0.0.1"):
        assert flag in flags
    assert "--feature-gates=DRAConsumableCapacity=true" in rc.scheduler_flags(D, PORTS, {"DRAConsumableCapacity": True})


def test_kwok_manages_only_annotated_nodes():
    flags = rc.kwok_flags(D, PORTS)
    assert "--manage-all-nodes=false" in flags
    assert "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake" in flags


def test_kueue_config_overrides_only_the_out_of_cluster_fields():
    caller = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "webhook": {"port": 9443}, "leaderElection": {"leaderElect": True, "resourceName": "x"},
        "managedJobsNamespaceSelector": {"matchLabels": {"team": "yes"}}, "pprofBindAddress": ":8083",
        "integrations": {"frameworks": ["batch/job"]}, "featureGates": {"TopologyAwareScheduling": True},
    }
    before = copy.deepcopy(caller)
    config = rc.kueue_config(caller, D, PORTS)
    assert caller == before
    assert config["webhook"] == {"port": 8, "host": "127.0.0.1", "certDir": "/r/kueue_cert_dir"}
    assert config["leaderElection"] == {"leaderElect": False, "resourceName": "x"}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["featureGates"] == {"TopologyAwareScheduling": True, "VisibilityOnDemand": False}
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:9"
    assert config["metrics"]["bindAddress"] == "127.0.0.1:10"
    assert "pprofBindAddress" not in config
    untouched = {k: v for k, v in config.items() if k not in {p.split(".", maxsplit=1)[0] for p in rc.KUEUE_OVERRIDDEN_FIELDS}}
    assert untouched == {k: v for k, v in caller.items() if k in untouched}
    assert set(untouched) == {"apiVersion", "kind", "managedJobsNamespaceSelector", "integrations"}
    with pytest.raises(rc.RehearsalError, match="kueue_configuration.apiVersion"):
        rc.kueue_config({"apiVersion": "config.kueue.x-k8s.io/v1beta1"}, D, PORTS)


def test_certificates_carry_groups_sans_and_usages():
    ca_crt, ca_key = rc.make_ca("test-ca")
    crt, _key = rc.issue_cert(ca_crt, ca_key, "alice", ["team-a", "team-b"], client=True)
    cert = x509.load_pem_x509_certificate(crt)
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["team-a", "team-b"]
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_crt))
    server, _server_key = rc.issue_cert(ca_crt, ca_key, "api", server=True, sans=["127.0.0.1", "localhost"])
    sans = x509.load_pem_x509_certificate(server).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    with pytest.raises(rc.RehearsalError):
        rc.issue_cert(ca_crt, ca_key, "nobody")


@pytest.fixture
def kueue_share(tmp_path):
    """A share directory laid out as build() copies it from Kueue's module (trimmed files)."""
    base = tmp_path / "share" / "kueue"
    (base / "crd").mkdir(parents=True)
    (base / "crd-patches").mkdir()
    (base / "webhook").mkdir()
    (base / "crd-kustomization.yaml").write_text(yaml.safe_dump({
        "resources": ["bases/kueue.x-k8s.io_clusterqueues.yaml", "bases/kueue.x-k8s.io_resourceflavors.yaml"],
        "patches": [{"path": "patches/webhook_in_clusterqueues.yaml"}]}))
    for name in ("clusterqueues", "resourceflavors"):
        (base / "crd" / f"kueue.x-k8s.io_{name}.yaml").write_text(yaml.safe_dump({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{name}.kueue.x-k8s.io"}, "spec": {"group": "kueue.x-k8s.io"}}))
    (base / "crd-patches" / "webhook_in_clusterqueues.yaml").write_text(yaml.safe_dump({
        "metadata": {"name": "clusterqueues.kueue.x-k8s.io"},
        "spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "system", "name": "webhook-service", "path": "/convert"}},
            "conversionReviewVersions": ["v1"]}}}}))
    hook = {"name": "vjob.kb.io", "clientConfig": {"service": {"name": "webhook-service", "namespace": "system",
                                                               "path": "/validate-batch-v1-job"}}}
    other = {"name": "vclusterqueue.kb.io", "clientConfig": {"service": {"name": "webhook-service", "namespace": "system",
                                                                         "path": "/validate-cq"}}}
    (base / "webhook" / "manifests.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "validating-webhook-configuration"}, "webhooks": [hook, other]}]))
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]}
    (base / "webhook" / "kustomization.yaml").write_text(yaml.safe_dump({
        "patches": [{"patch": yaml.safe_dump({"kind": "ValidatingWebhookConfiguration",
                                              "webhooks": [{"name": "vpod.kb.io", "namespaceSelector": selector}]})}],
        "replacements": [{"targets": [{"fieldPaths": ["webhooks.[name=vjob.kb.io].namespaceSelector"]}]}]}))
    return tmp_path / "share", selector


def test_kueue_crds_get_the_conversion_webhook_on_loopback(kueue_share):
    share, _selector = kueue_share
    crds = {c["metadata"]["name"]: c for c in rc.kueue_crds(str(share), "https://127.0.0.1:5", b"PEM")}
    conversion = crds["clusterqueues.kueue.x-k8s.io"]["spec"]["conversion"]
    assert conversion["webhook"]["clientConfig"] == {"url": "https://127.0.0.1:5/convert", "caBundle": "UEVN"}
    assert "conversion" not in crds["resourceflavors.kueue.x-k8s.io"]["spec"]


def test_kueue_webhooks_point_at_loopback_with_kustomizes_names_and_selectors(kueue_share):
    share, selector = kueue_share
    (config,) = rc.kueue_webhooks(str(share), "https://127.0.0.1:5", b"PEM")
    assert config["metadata"]["name"] == "kueue-validating-webhook-configuration"
    job, queue = config["webhooks"]
    assert job["clientConfig"] == {"url": "https://127.0.0.1:5/validate-batch-v1-job", "caBundle": "UEVN"}
    assert job["namespaceSelector"] == selector
    assert "namespaceSelector" not in queue


def test_stop_without_a_rehearsal_changes_nothing(tmp_path):
    assert rc.stop(str(tmp_path)) == {"changed": False, "dir": str(tmp_path), "stopped": []}


def test_stop_signals_only_the_recorded_process_and_is_idempotent(tmp_path):
    ours = subprocess.Popen(["sleep", "30"])
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        state = {"processes": {
            "ours": {"pid": ours.pid, "start_time": rc._proc_start_time(ours.pid)},
            # A recorded pid whose start time differs is another process by now: left alone.
            "reused": {"pid": stranger.pid, "start_time": "1"},
        }}
        (tmp_path / "state.json").write_text(json.dumps(state))
        result = rc.stop(str(tmp_path), grace=5)
        assert result["stopped"] == ["ours"]
        assert ours.wait(timeout=5) is not None
        assert stranger.poll() is None
        assert rc.stop(str(tmp_path))["changed"] is False
    finally:
        stranger.kill()
        ours.kill()
        stranger.wait()
        ours.wait()


def test_stop_components_stops_only_the_named_ones_and_start_components_refuses_what_it_cannot_start(tmp_path):
    api = subprocess.Popen(["sleep", "30"])
    etcd = subprocess.Popen(["sleep", "30"])
    try:
        state = {"server": "https://127.0.0.1:1", "ports": {"etcd": 1}, "processes": {
            "etcd": {"pid": etcd.pid, "start_time": rc._proc_start_time(etcd.pid), "argv": ["sleep", "30"], "log": "etcd.log"},
            "kube-apiserver": {"pid": api.pid, "start_time": rc._proc_start_time(api.pid), "argv": ["sleep", "30"],
                               "log": "kube-apiserver.log"},
            "kube-proxy": {"pid": api.pid, "start_time": "1", "argv": ["true"], "log": "kube-proxy.log"},
            "kwok": {"pid": api.pid, "start_time": "1", "log": "kwok.log"},
        }}
        (tmp_path / "state.json").write_text(json.dumps(state))
        with pytest.raises(rc.RehearsalError, match="no recorded kube-nothing to stop"):
            rc.stop_components(str(tmp_path), ["kube-nothing"])
        assert rc.stop_components(str(tmp_path), ["kube-apiserver"], grace=5) == ["kube-apiserver"]
        assert api.wait(timeout=5) is not None and etcd.poll() is None
        assert rc.stop_components(str(tmp_path), ["kube-apiserver"]) == []
        # Still running, started without its command line recorded, not a rehearsal component:
        # refused before anything is started.
        for name, message in (("etcd", "etcd is still running"), ("kwok", "no command line of kwok recorded"),
                              ("kube-proxy", "'kube-proxy' is not a rehearsal component")):
            with pytest.raises(rc.RehearsalError, match=message):
                rc.start_components(str(tmp_path), [name])
        assert json.loads((tmp_path / "state.json").read_text())["processes"] == state["processes"]
    finally:
        api.kill()
        etcd.kill()
        api.wait()
        etcd.wait()


def test_start_refuses_missing_binaries(tmp_path):
    (tmp_path / "bin").mkdir()
    with pytest.raises(rc.RehearsalError, match="missing kube-apiserver, kube-controller-manager"):
        rc.start(str(tmp_path / "r"), bin_dir=str(tmp_path / "bin"))


def test_free_ports_are_distinct_loopback_ports():
    ports = rc.free_ports(["a", "b", "c"])
    assert len(set(ports.values())) == 3


@pytest.mark.skipif(shutil.which("go") is None, reason="no go on PATH: the module cache copy cannot be checked")
def test_kwok_stages_exist_in_the_pinned_kwok_module():
    mod = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    base = Path(mod) / f"sigs.k8s.io/kwok@v{rc.DEFAULT_VERSIONS['kwok']}"
    if not base.is_dir():
        pytest.skip(f"kwok v{rc.DEFAULT_VERSIONS['kwok']} is not in the module cache ({base}); `make rehearsal-binaries` fetches it")
    for target, source in rc.SHARE_FILES["kwok"].items():
        assert (base / source).is_file(), source
    assert {Path(t).stem for t in rc.SHARE_FILES["kwok"]} >= set(rc.DEFAULT_KWOK_STAGES)
    assert os.path.exists(base / "kustomize/stage/pod/fast/pod-complete.yaml")


class _FakeApiServer:
    """Answers api_request as a tiny API server: discovery of two group versions, and applies."""

    DISCOVERY = {
        "/api/v1": [{"name": "namespaces", "kind": "Namespace", "namespaced": False},
                    {"name": "pods", "kind": "Pod", "namespaced": True},
                    {"name": "pods/status", "kind": "Pod", "namespaced": True}],
        "/apis/kueue.x-k8s.io/v1beta2": [{"name": "localqueues", "kind": "LocalQueue", "namespaced": True},
                                         {"name": "clusterqueues", "kind": "ClusterQueue", "namespaced": False}],
    }

    def __init__(self, refuse=None):
        self.requests = []
        self.refuse = refuse

    def __call__(self, _info, method, path, body=None, cert=None, content_type="application/json", timeout=10.0):
        self.requests.append((method, path, content_type, body))
        if method == "GET":
            if path in self.DISCOVERY:
                return 200, {"resources": self.DISCOVERY[path]}
            return 404, {"message": "the server could not find the requested resource"}
        if self.refuse and self.refuse in path:
            return 422, {"message": "ClusterQueue.kueue.x-k8s.io \"bad\" is invalid"}
        return 200, body


def test_apply_objects_sends_one_server_side_apply_per_object_to_its_resource_path(monkeypatch):
    fake = _FakeApiServer()
    monkeypatch.setattr(rc, "api_request", fake)
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
               {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "team-a"}},
               {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "team-a"}},
               {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}]
    rc.apply_objects({}, objects, field_manager="gpushare-tenancy")
    patches = [(path, kind) for method, path, kind, _body in fake.requests if method == "PATCH"]
    query = "?fieldManager=gpushare-tenancy&force=true"
    assert patches == [("/api/v1/namespaces/team-a" + query, "application/apply-patch+yaml"),
                       ("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a" + query, "application/apply-patch+yaml"),
                       ("/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/q" + query,
                        "application/apply-patch+yaml"),
                       # a namespaced object without a namespace goes where kubectl puts it: default
                       ("/api/v1/namespaces/default/pods/p" + query, "application/apply-patch+yaml")]
    # discovery once per group version, in order, before the first object of it
    assert [path for method, path, _kind, _body in fake.requests if method == "GET"] == [
        "/api/v1", "/apis/kueue.x-k8s.io/v1beta2"]
    # the object itself is the patch body
    assert [body for method, _path, _kind, body in fake.requests if method == "PATCH"] == objects


def test_apply_objects_names_the_refused_object_and_the_unknown_kind(monkeypatch):
    monkeypatch.setattr(rc, "api_request", _FakeApiServer(refuse="/clusterqueues/bad"))
    with pytest.raises(rc.RehearsalError, match=r"apply ClusterQueue bad: HTTP 422: .*is invalid"):
        rc.apply_objects({}, [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "bad"}}])
    with pytest.raises(rc.RehearsalError, match="serves no kind Cohort in kueue.x-k8s.io/v1beta2"):
        rc.apply_objects({}, [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c"}}])
    with pytest.raises(rc.RehearsalError, match=r"serves no jobset.x-k8s.io/v1alpha2 \(discovery of "
                                                r"/apis/jobset.x-k8s.io/v1alpha2: HTTP 404\)"):
        rc.apply_objects({}, [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"}}])
    with pytest.raises(rc.RehearsalError, match="a Namespace without metadata.name"):
        rc.apply_objects({}, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {}}])
