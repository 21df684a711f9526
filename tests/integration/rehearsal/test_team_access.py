"""Team access on a real control plane: a kubeconfig from playbooks/team_access.yml, used for real.

The worked day's plan is applied to a rehearsal (the same control plane as
test_isolation_admission.py: kube-apiserver 1.35 with RBAC and the admission policies, the
controller manager signing with the cluster CA, Kueue). The playbook issues a kubeconfig for a
person of the training team through the CertificateSigningRequest API; with only that
kubeconfig the person can submit a Job to the team's own namespace and queue, and nothing else.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access

import test_isolation_admission
from rehearsal_env import collection_path
from pods import pod
from test_isolation_admission import _create, _created, _refused, _request, _workload
from test_isolation_admission import delete_what_the_test_made  # noqa: F401  pylint: disable=unused-import

# The isolation tests' control plane, the worked day's plan applied (conftest.isolation_cluster):
# started once for both modules, which conftest's scheduler keeps on one xdist worker.
cluster = test_isolation_admission.cluster

REPO_ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = REPO_ROOT / "playbooks" / "team_access.yml"
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "inventories" / "four_gpu_example.yml"
PERSON, TEAM, LIFETIME = "trent", "training", 3600
QUEUE_LABELS = {"kueue.x-k8s.io/queue-name": "training", "kueue.x-k8s.io/priority-class": "training"}


def _playbook(info, directory, *extra):
    variables = {"gpushare_teams": yaml.safe_load(FIXTURE.read_text())["gpushare_teams"],
                 "gpushare_kubeconfig": info["kubeconfig"], "team_access_team": TEAM, "team_access_person": PERSON,
                 "team_access_expiration_seconds": LIFETIME, "team_access_dir": str(directory)}
    vars_file = directory / "vars.json"
    vars_file.write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collection_path()), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local", "-vvv",
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"@{vars_file}", *extra, str(PLAYBOOK)],
        capture_output=True, text=True, env=env, timeout=300, check=False)


@pytest.fixture(scope="module")
def issued(cluster, tmp_path_factory):
    directory = tmp_path_factory.mktemp("team-access")
    result = _playbook(cluster["info"], directory)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    path = directory / ("%s-%s.conf" % (TEAM, PERSON))
    config = yaml.safe_load(path.read_text())
    user = config["users"][0]["user"]
    crt, key = directory / "person.crt", directory / "person.key"
    crt.write_bytes(team_access.certificate_pem(user["client-certificate-data"]).encode())
    key.write_text(team_access.certificate_pem(user["client-key-data"]))
    key.chmod(0o600)
    return {"path": path, "config": config, "cert": (str(crt), str(key)), "run": result, "dir": directory}


def test_the_kubeconfig_is_private_and_its_key_never_reached_the_log(issued, cluster):
    assert stat.S_IMODE(issued["path"].stat().st_mode) == 0o600
    key_data = issued["config"]["users"][0]["user"]["client-key-data"]
    run = issued["run"]
    for text in (run.stdout, run.stderr):
        assert key_data not in text and "PRIVATE KEY" not in text
    assert "the output has been hidden" in run.stdout  # -vvv, and the module's task still says nothing
    assert issued["config"]["clusters"][0]["cluster"]["server"] == cluster["info"]["server"]
    assert issued["config"]["contexts"][0]["context"]["namespace"] == "training"


def test_the_api_server_sees_the_person_in_the_teams_group(issued, cluster):
    status, review = _request(cluster["info"], "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                              {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                              cert=issued["cert"])
    assert status == 201, review
    assert review["status"]["userInfo"]["username"] == PERSON
    assert set(review["status"]["userInfo"]["groups"]) == {"ml-training", "system:authenticated"}


def test_the_certificate_lives_as_long_as_was_asked(issued, cluster):
    facts = team_access.certificate_facts(team_access.kubeconfig_certificate(issued["config"]))
    assert facts["common_name"] == PERSON and facts["organizations"] == ["ml-training"]
    # kube-controller-manager backdates NotBefore by 5 minutes; a lifetime under 8 h is not cut.
    assert facts["lifetime_seconds"] == team_access.expected_lifetime(LIFETIME) == LIFETIME + 300
    assert LIFETIME - 120 < facts["remaining_seconds"] <= LIFETIME
    csrs = _request(cluster["info"], "GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests")[1]["items"]
    (csr,) = [c for c in csrs if c["metadata"].get("annotations", {}).get(team_access.PERSON_ANNOTATION) == PERSON]
    assert csr["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert csr["spec"]["expirationSeconds"] == LIFETIME
    assert csr["spec"]["username"] == "kubernetes-admin"  # who asked: the admin kubeconfig, not the person
    assert [c["type"] for c in csr["status"]["conditions"]] == ["Approved"]


def test_a_job_in_the_own_namespace_and_queue_is_admitted_to_the_queue(issued, cluster):
    info = cluster["info"]
    job = _workload("Job", "first-job", "training", pod("training", templates=["gpu-rtx-pro-6000"]), labels=QUEUE_LABELS)
    body = _created(_create(info, job, cert=issued["cert"]))
    assert body["spec"]["suspend"] is True  # Kueue's webhook holds it until the queue admits it
    assert _request(info, "GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/training/localqueues/training",
                    cert=issued["cert"])[0] == 200


def test_another_teams_namespace_or_queue_is_refused(issued, cluster):
    info = cluster["info"]
    gpu = pod("data", templates=["gpu-rtx-pro-6000"])
    _refused(_create(info, _workload("Job", "elsewhere", "data", gpu, labels=QUEUE_LABELS), cert=issued["cert"]),
             'cannot create resource "jobs" in API group "batch" in the namespace "data"')
    other_queue = {"kueue.x-k8s.io/queue-name": "data", "kueue.x-k8s.io/priority-class": "training"}
    job = _workload("Job", "their-queue", "training", pod("training", templates=["gpu-rtx-pro-6000"]),
                    labels=other_queue)
    _refused(_create(info, job, cert=issued["cert"]), "must carry the label kueue.x-k8s.io/queue-name: training")


def test_another_teams_objects_cannot_be_read(issued, cluster):
    info = cluster["info"]
    for path in ("/api/v1/namespaces/data/pods", "/api/v1/namespaces/production/secrets",
                 "/apis/batch/v1/namespaces/production/jobs",
                 "/apis/kueue.x-k8s.io/v1beta2/namespaces/data/workloads",
                 "/apis/resource.k8s.io/v1/namespaces/data/resourceclaims"):
        status, body = _request(info, "GET", path, cert=issued["cert"])
        assert status == 403 and 'User "%s" cannot list' % PERSON in body["message"], (path, status, body)
    assert _request(info, "GET", "/api/v1/namespaces/training/pods", cert=issued["cert"])[0] == 200


def test_a_second_run_keeps_the_valid_kubeconfig(issued, cluster):
    before = issued["path"].read_text()
    # The one-hour certificate ends within the default renew_before (3600 s): ask for less.
    again = _playbook(cluster["info"], issued["dir"], "-e", "team_access_renew_before=600")
    assert again.returncode == 0, again.stdout[-3000:]
    assert "Kept %s" % issued["path"] in again.stdout and "changed=0" in again.stdout
    assert issued["path"].read_text() == before
