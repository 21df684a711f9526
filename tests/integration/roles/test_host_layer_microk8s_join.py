"""MicroK8s joins verify the bootstrap node's certificate (the fingerprint add-node prints)."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleError

from .host_layer_render import ROLES, Renderer, debian_facts

TOKEN = "0123456789abcdef0123456789abcdef"
CHECK = "3f1c9a0b7d2e"   # first 12 hex digits of the server certificate's SHA-256


def task(name: str) -> dict:
    tasks = yaml.safe_load((ROLES / "microk8s" / "tasks" / "cluster.yml").read_text())
    return next(t for t in tasks if t["name"] == name)


def renderer(add_node_stdout: str) -> Renderer:
    facts = dict(debian_facts(), distribution="Ubuntu", distribution_major_version="24", virtualization_type="kvm")
    r = Renderer("microk8s", facts, {"inventory_hostname": "mk2"})
    r.variables.update(
        inventory_hostname="mk2", __microk8s_bootstrap="mk1", __microk8s_join_token=TOKEN,
        # The address the preflight publishes as a fact for every host (roles/microk8s/tasks/preflight.yml).
        hostvars={"mk1": {"__microk8s_node_address": "10.0.0.11"}},
        __microk8s_add_node={"results": [{"item": "gpu1", "stdout": "ffffffffffffffffffffffffffffffff/aaaaaaaaaaaa"},
                                         {"item": "mk2", "stdout": add_node_stdout + "\n"}]})
    return r


def test_add_node_prints_token_and_fingerprint():
    argv = task("Register the join tokens on the bootstrap control plane")["ansible.builtin.command"]["argv"]
    assert argv[-2:] == ["--format", "token-check"]


@pytest.mark.parametrize("name,extra", [("Join the other control planes one at a time", []),
                                        ("Join the workers", ["--worker"])])
def test_join_passes_the_fingerprint_of_this_hosts_token(name, extra):
    t = task(name)
    argv = renderer(f"{TOKEN}/{CHECK}").render(t["ansible.builtin.command"]["argv"], **t.get("vars", {}))
    assert argv == ["microk8s", "join", f"10.0.0.11:25000/{TOKEN}/{CHECK}"] + extra
    assert t["no_log"] is True


def test_join_without_a_fingerprint_fails_before_joining():
    t = task("Join the workers")
    with pytest.raises(AnsibleError, match="no certificate fingerprint for mk2"):
        renderer(TOKEN).render(t["ansible.builtin.command"]["argv"], **t.get("vars", {}))
