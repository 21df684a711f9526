#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ufw_rules
short_description: Make sure a set of ufw rules exists, reading ufw's rules once
version_added: 0.1.0
description:
  - Reads the rules ufw has (C(ufw show added)) once and adds only the missing ones, then
    enables ufw when asked. A run that changes nothing starts C(ufw) twice, whatever the number
    of rules; community.general.ufw starts it about five times per rule.
  - Rules are given with community.general.ufw's option names. Each is compared in the form ufw
    0.36 prints it; a rule ufw already has under another spelling is added again, ufw answers
    that it skips an existing rule and the module reports no change.
  - Only adds. A rule that is no longer wanted is left in place; delete it with C(ufw delete).
author:
  - gpushare.cluster maintainers (@gpushare)
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
    details: Lists the rules it would add and whether it would enable ufw; changes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
options:
  rules:
    description: The rules to have.
    type: list
    elements: dict
    required: true
    suboptions:
      rule:
        description: What the rule does.
        type: str
        choices: [allow, deny, reject, limit]
        default: allow
      name:
        description: An application profile (C(ufw app list)), instead of O(rules[].port).
        type: str
      port:
        description:
          - A destination port or a range C(FIRST:LAST) (C(FIRST-LAST) is accepted too), optionally
            with its protocol the way ufw writes it (C(6443/tcp)).
        type: str
      proto:
        description: The protocol; a port range needs C(tcp) or C(udp).
        type: str
        choices: [tcp, udp, any]
        default: any
      from_ip:
        description: Source address or network.
        type: str
        default: any
      to_ip:
        description: Destination address or network.
        type: str
        default: any
      route:
        description: A rule for forwarded packets (C(ufw route)) instead of packets to the host.
        type: bool
        default: false
  enabled:
    description: Enable ufw (C(ufw --force enable)) when it is inactive, after adding the rules.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Open the API server to the node network and route the pod network
  gpushare.cluster.ufw_rules:
    rules:
      - name: OpenSSH
      - port: "6443"
        proto: tcp
        from_ip: 10.0.0.0/16
      - port: "30000:32767"
        proto: tcp
      - from_ip: 10.244.0.0/16
        route: true
"""

RETURN = r"""
added:
  description: The rules added (in check mode, the rules that would be added), as ufw prints them.
  returned: always
  type: list
  elements: str
  sample: ["allow from 10.0.0.0/16 to any port 6443 proto tcp", "route allow from 10.244.0.0/16"]
enabled_now:
  description: Whether this run enabled ufw (in check mode, whether it would).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.host import ufw_rules


def _ufw(module, ufw, *args):
    rc, out, err = module.run_command([ufw, *args])
    if rc != 0:
        module.fail_json(msg=f"ufw {' '.join(args)} failed: {(err or out).strip()}", rc=rc)
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            rules=dict(type="list", elements="dict", required=True, options=dict(
                rule=dict(type="str", choices=list(ufw_rules.RULE_ACTIONS), default="allow"),
                name=dict(type="str"),
                port=dict(type="str"),
                proto=dict(type="str", choices=list(ufw_rules.PROTOCOLS), default="any"),
                from_ip=dict(type="str", default="any"),
                to_ip=dict(type="str", default="any"),
                route=dict(type="bool", default=False),
            )),
            enabled=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    try:
        wanted = ufw_rules.commands(module.params["rules"])
    except ufw_rules.UfwRuleError as exc:
        module.fail_json(msg=str(exc))
    ufw = module.get_bin_path("ufw", required=True)

    to_add = ufw_rules.missing(wanted, ufw_rules.added(_ufw(module, ufw, "show", "added")))
    added = []
    for rule in to_add:
        if module.check_mode:
            # The dry run answers "Skipping ..." for a rule ufw has under another spelling.
            output = _ufw(module, ufw, "--dry-run", *ufw_rules.rule_argv(rule))
        else:
            output = _ufw(module, ufw, *ufw_rules.rule_argv(rule))
        if ufw_rules.rule_changed(output):
            added.append(rule)

    enable = module.params["enabled"] and not ufw_rules.is_active(_ufw(module, ufw, "status"))
    if enable and not module.check_mode:
        _ufw(module, ufw, "--force", "enable")
    module.exit_json(changed=bool(added) or enable, added=added, enabled_now=enable)


if __name__ == "__main__":
    main()
