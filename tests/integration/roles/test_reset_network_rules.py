"""reset.yml's last step on a node: the packet filtering rules Kubernetes left go, the host's stay.

The module runs for real against the kernel's packet filter, in a network namespace of its own
(``unshare --net``, root only) so that the machine's own rules are never touched: iptables,
ip6tables and nft are the host's, the rules are those the kubelet, kube-proxy, Calico and a
host firewall write.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .k8s_render import collections_dir

NEEDED = ("unshare", "iptables-save", "iptables-restore", "ip6tables", "nft")
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not all(shutil.which(c) for c in NEEDED),
                                reason="needs root and %s (make deps installs them)" % ", ".join(NEEDED))

# What a node looks like after kubeadm reset: kube-proxy's and Calico's chains, the kubelet's
# firewall chain, beside a container engine's and ufw's chains and a site rule.
NODE_RULES = """*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-NPX46M4PTMTKRN6Y - [0:0]
:KUBE-POSTROUTING - [0:0]
:cali-nat-outgoing - [0:0]
:DOCKER - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A POSTROUTING -m comment --comment "cali:O3lYWMrLQYEMJtB5" -g cali-nat-outgoing
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -j KUBE-SVC-NPX46M4PTMTKRN6Y
-A KUBE-POSTROUTING -j MASQUERADE
-A cali-nat-outgoing -j MASQUERADE
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:cali-FORWARD - [0:0]
:ufw-user-input - [0:0]
-A INPUT -j KUBE-FIREWALL
-A INPUT -j ufw-user-input
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
-A FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A ufw-user-input -p tcp -m tcp --dport 6443 -j ACCEPT
COMMIT
"""

SCRIPT = """
set -e
iptables-restore < "$OUT/node.rules"
ip6tables -N KUBE-FIREWALL
ip6tables -A INPUT -j KUBE-FIREWALL
nft add table ip kube-proxy
nft add chain ip kube-proxy services
for run in check first second; do
  flag=""; [ "$run" = check ] && flag=--check
  "$PLAYBOOK" $flag -e out="$OUT/$run.json" "$OUT/play.yml" > "$OUT/$run.log" 2>&1
  [ "$run" = check ] && iptables-save | grep -v '^#' > "$OUT/after-check.rules"
done
iptables-save | grep -v '^#' > "$OUT/after.rules"
ip6tables-save | grep -v '^#' > "$OUT/after6.rules"
nft list tables > "$OUT/tables"
"""


def _rules(text: str) -> dict:
    """Per table: its user chains, and each chain's rules in order (iptables-save lists chains in
    its own order); tables without rules left out (iptables-save shows those a run created by
    looking at them)."""
    tables: dict = {}
    for line in text.splitlines():
        if line.startswith("*"):
            chains, rules = tables.setdefault(line[1:], (set(), {}))
        elif line.startswith(":") and line.split()[1] == "-":
            chains.add(line.split()[0][1:])
        elif line.startswith("-A "):
            rules.setdefault(line.split()[1], []).append(line)
    return {name: (chains, rules) for name, (chains, rules) in tables.items() if rules}


def _lines(text: str) -> list:
    return [line for chains, rules in _rules(text).values() for line in [*chains, *sum(rules.values(), [])]]


def _without_kubernetes(tables: dict) -> dict:
    def kept(name):
        return "KUBE-" not in name and "cali-" not in name
    return {table: ({c for c in chains if kept(c)},
                    {c: [r for r in lines if kept(r)] for c, lines in rules.items() if kept(c) and any(kept(r) for r in lines)})
            for table, (chains, rules) in tables.items()}


def test_reset_removes_what_kubernetes_left_and_keeps_the_hosts_rules(tmp_path):
    (tmp_path / "node.rules").write_text(NODE_RULES)
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "name": "Clean", "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars": {"ansible_python_interpreter": sys.executable},
        "tasks": [{"name": "Remove the rules", "gpushare.cluster.kubernetes_network_rules": None, "register": "result"},
                  {"name": "Keep the result", "ansible.builtin.copy": {
                      "content": "{{ result | to_json }}", "dest": "{{ out }}", "mode": "0644"}, "check_mode": False}]}]))
    env = dict(os.environ, OUT=str(tmp_path), PLAYBOOK=str(Path(sys.executable).parent / "ansible-playbook"),
               ANSIBLE_COLLECTIONS_PATH=collections_dir(), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False", ANSIBLE_HOME=str(tmp_path / "ansible-home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    done = subprocess.run(["unshare", "--net", "sh", "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    logs = "".join((tmp_path / f"{run}.log").read_text() for run in ("check", "first", "second")
                   if (tmp_path / f"{run}.log").exists())
    assert done.returncode == 0, done.stderr + logs[-4000:]
    check, first, second = (json.loads((tmp_path / f"{run}.json").read_text()) for run in ("check", "first", "second"))

    # Check mode says what would go and changes nothing.
    assert check["changed"] is True
    assert _rules((tmp_path / "after-check.rules").read_text()) == _rules(NODE_RULES)
    # The real run removes Kubernetes' chains in both families and kube-proxy's nftables table ...
    assert first["changed"] is True
    assert sorted(first["removed_chains"]) == sorted(check["removed_chains"]) == sorted([
        "iptables nat/KUBE-SERVICES", "iptables nat/KUBE-SVC-NPX46M4PTMTKRN6Y", "iptables nat/KUBE-POSTROUTING",
        "iptables nat/cali-nat-outgoing", "iptables filter/KUBE-FIREWALL", "iptables filter/KUBE-KUBELET-CANARY",
        "iptables filter/cali-FORWARD", "ip6tables filter/KUBE-FIREWALL"])
    assert first["removed_nft_tables"] == ["ip kube-proxy"]
    after_text = (tmp_path / "after.rules").read_text()
    assert not [line for line in _lines(after_text) if "KUBE-" in line or "cali-" in line]
    assert "table ip kube-proxy" not in (tmp_path / "tables").read_text()
    assert not [line for line in _lines((tmp_path / "after6.rules").read_text()) if "KUBE-" in line]
    # ... and leaves every other rule and chain as it was, in order.
    expected = _without_kubernetes(_rules(NODE_RULES))
    assert _rules(after_text) == expected
    assert "-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT" in expected["filter"][1]["INPUT"] and "DOCKER" in expected["nat"][0]
    # A second run finds nothing.
    assert second == {**second, "changed": False, "removed_chains": [], "removed_rules": 0, "removed_nft_tables": []}
