#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue a short-lived kubeconfig for one person of a team through the CertificateSigningRequest API."""

from __future__ import annotations

DOCUMENTATION = r"""
module: team_kubeconfig
short_description: Write a short-lived kubeconfig for one person of a team
version_added: 0.2.0
description:
  - Makes a private key on the host it runs on (the controller, in C(playbooks/team_access.yml)), asks the
    cluster for a client certificate through a CertificateSigningRequest (signer
    C(kubernetes.io/kube-apiserver-client), C(spec.expirationSeconds)), approves it with the admin kubeconfig,
    waits for the certificate and writes a kubeconfig with mode C(0600).
  - The certificate's common name is the person, its organisation the team's Kubernetes group, so the
    team's RoleBindings apply. The private key is written only into O(dest) and never returned.
  - A kubeconfig already at O(dest) for the same person and group that is valid for more than
    O(renew_before) seconds is kept (C(changed=false)).
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  kubeconfig:
    description: Admin kubeconfig on the controller, allowed to create and approve CertificateSigningRequests.
    type: path
    required: true
  context:
    description: Context of O(kubeconfig) to use (default its current context).
    type: str
  team:
    description: The team (a name in C(gpushare_teams)).
    type: str
    required: true
  person:
    description: Who the credential is for; the certificate's common name and the user name Kubernetes sees.
    type: str
    required: true
  group:
    description: The team's Kubernetes group (the plan's C(teams.<team>.access.kubernetes_group)); the certificate's organisation.
    type: str
    required: true
  namespace:
    description: Namespace of the kubeconfig's context (the team's first namespace).
    type: str
    required: true
  expiration_seconds:
    description:
      - Requested lifetime; at least 600. kube-controller-manager caps it at its C(--cluster-signing-duration).
    type: int
    default: 86400
  renew_before:
    description: Issue a new certificate when the one at O(dest) expires within this many seconds.
    type: int
    default: 3600
  dest:
    description: Where to write the kubeconfig (mode C(0600)).
    type: path
    required: true
  server:
    description: API server URL written into the kubeconfig (default the one of O(kubeconfig)).
    type: str
  timeout:
    description: Seconds to wait for the controller manager to sign.
    type: int
    default: 60
notes:
  - Needs the Python C(kubernetes) and C(cryptography) packages on the controller.
  - The kube-controller-manager must sign with the cluster CA (C(--cluster-signing-cert-file),
    C(--cluster-signing-key-file)); kubeadm and MicroK8s start it so.
"""

EXAMPLES = r"""
- name: A day's kubeconfig for tess of the training team
  gpushare.cluster.team_kubeconfig:
    kubeconfig: ~/.kube/gpushare.conf
    team: training
    person: tess
    group: ml-training
    namespace: training
    expiration_seconds: 28800
    dest: ~/.kube/gpushare-training-tess.conf
  no_log: true
"""

RETURN = r"""
dest:
  description: The kubeconfig written (or kept).
  returned: success
  type: str
user:
  description: User name and groups Kubernetes sees for the certificate.
  returned: success
  type: dict
csr:
  description: Name of the CertificateSigningRequest (empty when the kubeconfig was kept).
  returned: success
  type: str
not_before:
  description: Start of the certificate's validity (UTC, ISO 8601); empty in check mode.
  returned: success
  type: str
not_after:
  description: End of the certificate's validity (UTC, ISO 8601); empty in check mode.
  returned: success
  type: str
"""

import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpushare.cluster.plugins.module_utils._common.yaml_text import yaml
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access

# PyYAML, imported (or None) where the collection's YAML writer imports it.
HAS_YAML = yaml is not None

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    HAS_KUBERNETES = True
except ImportError:  # pragma: no cover
    HAS_KUBERNETES = False


def _read_yaml(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        try:
            return yaml.safe_load(handle)
        except yaml.YAMLError:
            return None


def _write_private(path, text):
    """Write ``text`` to ``path`` readable by its owner only, replacing the file in one rename."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".gpushare-kubeconfig-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _issue(module, params, group):
    """Create, approve and wait for the CSR; returns (csr name, certificate PEM, key PEM)."""
    key_pem, csr_pem, key_id = team_access.new_key_and_csr(params["person"], group)
    name = team_access.csr_name(params["team"], params["person"], key_id)
    api_client = k8s_config.new_client_from_config(config_file=params["kubeconfig"], context=params["context"])
    certificates = k8s_client.CertificatesV1Api(api_client)
    body = team_access.csr_object(name, csr_pem, params["team"], params["person"], params["expiration_seconds"])
    certificates.create_certificate_signing_request(body)
    current = certificates.read_certificate_signing_request(name)
    approved = api_client.sanitize_for_serialization(current)
    approved.setdefault("status", {}).setdefault("conditions", []).append(
        team_access.approval_condition(params["team"], params["person"]))
    certificates.replace_certificate_signing_request_approval(name, approved)
    deadline = time.monotonic() + params["timeout"]
    while time.monotonic() < deadline:
        status = certificates.read_certificate_signing_request(name).status
        for condition in (status.conditions or []) if status else []:
            if condition.type in ("Denied", "Failed") and condition.status == "True":
                module.fail_json(msg="CertificateSigningRequest %s was %s: %s" % (
                    name, condition.type.lower(), condition.message or condition.reason))
        if status is not None and status.certificate:
            return name, team_access.certificate_pem(status.certificate), key_pem
        time.sleep(0.5)
    module.fail_json(msg="CertificateSigningRequest %s: approved but not signed within %d s; does "
                         "kube-controller-manager run with --cluster-signing-cert-file and "
                         "--cluster-signing-key-file?" % (name, params["timeout"]))
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kubeconfig=dict(type="path", required=True),
            context=dict(type="str"),
            team=dict(type="str", required=True),
            person=dict(type="str", required=True),
            group=dict(type="str", required=True),
            namespace=dict(type="str", required=True),
            expiration_seconds=dict(type="int", default=team_access.DEFAULT_EXPIRATION_SECONDS),
            renew_before=dict(type="int", default=3600),
            dest=dict(type="path", required=True),
            server=dict(type="str"),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    for needed, present in (("kubernetes", HAS_KUBERNETES), ("cryptography", team_access.HAS_CRYPTOGRAPHY),
                            ("PyYAML", HAS_YAML)):
        if not present:
            module.fail_json(msg=missing_required_lib(needed))
    params = module.params
    errors = team_access.person_errors(params["person"]) + team_access.expiration_errors(params["expiration_seconds"])
    if errors:
        module.fail_json(msg="; ".join(errors), errors=errors)
    group = params["group"]
    user = {"name": params["person"], "groups": [group]}
    if not os.path.isfile(params["kubeconfig"]):
        module.fail_json(msg="%s: no admin kubeconfig there (the Kubernetes layer writes it to gpushare_kubeconfig; "
                             "team_access.yml reads team_access_admin_kubeconfig)" % params["kubeconfig"])
    try:
        cluster = team_access.admin_cluster(_read_yaml(params["kubeconfig"]) or {}, params["context"])
    except ValueError as error:
        module.fail_json(msg="%s: %s" % (params["kubeconfig"], error))
    existing = _read_yaml(params["dest"])
    if team_access.reusable(existing, params["person"], group, params["renew_before"]):
        facts = team_access.certificate_facts(team_access.kubeconfig_certificate(existing))
        module.exit_json(changed=False, dest=params["dest"], user=user, csr="",
                         not_before=facts["not_before"], not_after=facts["not_after"])
    if module.check_mode:
        module.exit_json(changed=True, dest=params["dest"], user=user, csr="", not_before="", not_after="")
    try:
        name, cert_pem, key_pem = _issue(module, params, group)
    except k8s_client.exceptions.ApiException as error:
        module.fail_json(msg="the API server refused the certificate request: %s %s" % (error.status, error.reason))
    facts = team_access.certificate_facts(cert_pem)
    if facts["common_name"] != params["person"] or facts["organizations"] != [group]:
        module.fail_json(msg="the signed certificate is for %s in %s, not %s in %s" % (
            facts["common_name"], facts["organizations"], params["person"], group))
    document = team_access.kubeconfig_document(cluster, params["person"], params["team"], params["namespace"],
                                               cert_pem, key_pem, params["server"])
    _write_private(params["dest"], yaml.safe_dump(document, sort_keys=False))
    module.exit_json(changed=True, dest=params["dest"], user=user, csr=name,
                     not_before=facts["not_before"], not_after=facts["not_after"])


if __name__ == "__main__":
    main()
