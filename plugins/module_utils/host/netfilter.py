# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The packet filtering rules Kubernetes leaves on a node, and the node's rules without them.

``kubeadm reset`` says it "does not perform cleanup of CNI plugin configuration, network
filtering rules and kubeconfig files" (k8s.io/kubernetes v1.35.4,
cmd/kubeadm/app/cmd/reset.go, ``manualCleanupInstructions``), and removing the MicroK8s snap
does not either. What is left belongs to:

- the kubelet: ``KUBE-FIREWALL``, ``KUBE-KUBELET-CANARY`` (pkg/kubelet/kubelet_network_linux.go);
- kube-proxy in iptables mode: ``KUBE-*`` chains and the rules that jump to them from the
  built-in chains (pkg/proxy/iptables/proxier.go, ``CleanupLeftovers`` removes the same);
  in nftables mode, the ``kube-proxy`` table of the ``ip`` and ``ip6`` families
  (pkg/proxy/nftables/proxier.go, ``kubeProxyTable``);
- Calico: chains named ``cali-*`` (projectcalico/calico felix/rules/rule_defs.go,
  ``ChainNamePrefix``);
- Cilium: chains named ``CILIUM_*``, ``OLD_CILIUM_*`` while it replaces them
  (cilium pkg/datapath/iptables/iptables.go, ``ciliumPrefix``).

Everything else stays as it is, byte for byte: the host firewall (ufw, firewalld), container
engines, the site's own rules. Flushing whole tables, as kubeadm's documentation suggests by
hand, would take those with it.
"""

from __future__ import annotations

import shlex
from typing import Iterable, List, Sequence, Tuple

KUBERNETES_CHAIN_PREFIXES = ("KUBE-", "cali-", "CILIUM_", "OLD_CILIUM_")
KUBERNETES_NFT_TABLES = (("ip", "kube-proxy"), ("ip6", "kube-proxy"))


def _owned(chain: str, prefixes: Sequence[str]) -> bool:
    return any(chain.startswith(prefix) for prefix in prefixes)


def _jump_target(rule: str) -> str:
    """The chain a rule jumps or goes to (``-j``/``-g``), '' when none."""
    try:
        words = shlex.split(rule)
    except ValueError:
        words = rule.split()
    for flag, target in zip(words, words[1:]):
        if flag in ("-j", "--jump", "-g", "--goto"):
            return target
    return ""


def without_kubernetes_chains(save_text: str, prefixes: Sequence[str] = KUBERNETES_CHAIN_PREFIXES) -> Tuple[str, List[str], int]:
    """Remove from ``iptables-save`` output the chains whose names start with one of ``prefixes``,
    their rules, and every rule elsewhere that jumps to them.

    Returns the text to give ``iptables-restore`` (the input unchanged when nothing matched),
    the removed chains as ``table/chain`` and the number of rules removed.
    """
    removed_chains: List[str] = []
    removed_rules = 0
    lines_out: List[str] = []
    table = ""
    for line in save_text.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
        elif line.startswith(":"):
            chain, _space, policy = line[1:].partition(" ")
            # Built-in chains have a policy; user chains show "-".
            if policy.startswith("-") and _owned(chain, prefixes):
                removed_chains.append(f"{table}/{chain}")
                continue
        elif line.startswith(("-A ", "-I ")):
            chain = line.split()[1]
            if _owned(chain, prefixes) or _owned(_jump_target(line), prefixes):
                removed_rules += 1
                continue
        lines_out.append(line)
    if not removed_chains and not removed_rules:
        return save_text, [], 0
    return "\n".join(lines_out) + "\n", removed_chains, removed_rules


def kubernetes_nft_tables(list_tables_text: str,
                          owned: Iterable[Tuple[str, str]] = KUBERNETES_NFT_TABLES) -> List[Tuple[str, str]]:
    """The (family, name) pairs of ``nft list tables`` output that Kubernetes created."""
    owned = set(owned)
    found = []
    for line in list_tables_text.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "table" and (words[1], words[2]) in owned:
            found.append((words[1], words[2]))
    return found
