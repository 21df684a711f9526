#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kubernetes_network_rules
short_description: Remove the packet filtering rules Kubernetes left on a node
version_added: 0.1.0
description:
  - After C(kubeadm reset) or the removal of MicroK8s, removes what the kubelet, kube-proxy
    and the CNI (Calico, Cilium) left in the node's packet filter; C(kubeadm reset) says it does
    not clean network filtering rules.
  - "iptables and ip6tables (and their C(-legacy) variants where installed): the chains whose
    names start with O(chain_prefixes), their rules and every rule of another chain that jumps
    to them, written back with one C(iptables-restore) per command so that the filter is never
    half changed. nftables: the tables O(nft_tables) (kube-proxy's nftables mode)."
  - Every other rule, chain and table stays as it is (ufw, firewalld, container engines, the
    site's own rules); nothing is flushed as a whole.
author:
  - gpushare.cluster maintainers (@gpushare)
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
    details: Lists what it would remove; changes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
options:
  chain_prefixes:
    description: Names of the chains to remove start with one of these.
    type: list
    elements: str
    default: [KUBE-, cali-, CILIUM_, OLD_CILIUM_]
  nft_tables:
    description: nftables tables to delete, as C(<family> <name>).
    type: list
    elements: str
    default: [ip kube-proxy, ip6 kube-proxy]
notes:
  - Run it after the kubelet, kube-proxy and the CNI have stopped, or they write their rules again.
"""

EXAMPLES = r"""
- name: Remove the packet filtering rules Kubernetes left behind
  gpushare.cluster.kubernetes_network_rules:
"""

RETURN = r"""
removed_chains:
  description: The chains removed (in check mode, that would be), as C(<command> <table>/<chain>).
  returned: always
  type: list
  elements: str
  sample: ["iptables nat/KUBE-SERVICES", "ip6tables filter/KUBE-FIREWALL"]
removed_rules:
  description: How many rules were removed, those of the removed chains included.
  returned: always
  type: int
removed_nft_tables:
  description: The nftables tables deleted, as C(<family> <name>).
  returned: always
  type: list
  elements: str
  sample: ["ip kube-proxy"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.host import netfilter

IPTABLES_COMMANDS = ("iptables", "ip6tables", "iptables-legacy", "ip6tables-legacy")


def _run(module, argv, data=None):
    rc, out, err = module.run_command(argv, data=data, binary_data=True)
    if rc != 0:
        module.fail_json(msg=f"{' '.join(argv)} failed: {(err or out).strip()}", rc=rc)
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            chain_prefixes=dict(type="list", elements="str", default=list(netfilter.KUBERNETES_CHAIN_PREFIXES)),
            nft_tables=dict(type="list", elements="str", default=[" ".join(t) for t in netfilter.KUBERNETES_NFT_TABLES]),
        ),
        supports_check_mode=True,
    )
    prefixes = [p for p in module.params["chain_prefixes"] if p]
    if not prefixes:
        module.fail_json(msg="chain_prefixes: give at least one non-empty prefix; an empty one would match every chain")
    nft_tables = []
    for index, entry in enumerate(module.params["nft_tables"]):
        words = str(entry).split()
        if len(words) != 2:
            module.fail_json(msg=f"nft_tables[{index}]: {entry!r} is not '<family> <name>' (e.g. 'ip kube-proxy')")
        nft_tables.append((words[0], words[1]))

    removed_chains, removed_rules = [], 0
    for command in IPTABLES_COMMANDS:
        save = module.get_bin_path(f"{command}-save")
        restore = module.get_bin_path(f"{command}-restore")
        if not save or not restore:
            continue
        text, chains, rules = netfilter.without_kubernetes_chains(_run(module, [save]), prefixes)
        if not chains and not rules:
            continue
        removed_chains += [f"{command} {chain}" for chain in chains]
        removed_rules += rules
        if not module.check_mode:
            _run(module, [restore], data=text)

    removed_tables = []
    nft = module.get_bin_path("nft")
    if nft and nft_tables:
        for family, name in netfilter.kubernetes_nft_tables(_run(module, [nft, "list", "tables"]), nft_tables):
            removed_tables.append(f"{family} {name}")
            if not module.check_mode:
                _run(module, [nft, "delete", "table", family, name])

    module.exit_json(changed=bool(removed_chains or removed_rules or removed_tables), removed_chains=removed_chains,
                     removed_rules=removed_rules, removed_nft_tables=removed_tables)


if __name__ == "__main__":
    main()
