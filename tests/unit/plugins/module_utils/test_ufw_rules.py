"""ufw rules in the form ufw 0.36.2 prints them (ufw/parser.py UFWCommandRule.get_command)."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.host import ufw_rules


@pytest.mark.parametrize("rule,printed", [
    # Short syntax: from anywhere to anywhere with a port or an application profile.
    ({"name": "OpenSSH"}, "allow OpenSSH"),
    ({"name": "Apache Full"}, "allow 'Apache Full'"),
    ({"port": "6443", "proto": "tcp"}, "allow 6443/tcp"),
    ({"port": "6443/tcp"}, "allow 6443/tcp"),
    ({"port": "30000-32767/udp"}, "allow 30000:32767/udp"),
    ({"port": "53"}, "allow 53"),
    ({"port": "22", "proto": "tcp", "rule": "limit"}, "limit 22/tcp"),
    # Full syntax as soon as one end is given.
    ({"port": "10250/tcp", "from_ip": "10.0.2.0/24"}, "allow from 10.0.2.0/24 to any port 10250 proto tcp"),
    ({"port": "2379:2380", "proto": "tcp", "from_ip": "10.0.2.7/24"},
     "allow from 10.0.2.0/24 to any port 2379:2380 proto tcp"),
    ({"port": "443", "proto": "tcp", "to_ip": "192.0.2.10"}, "allow to 192.0.2.10 port 443 proto tcp"),
    ({"name": "OpenSSH", "from_ip": "10.0.0.0/8"}, "allow from 10.0.0.0/8 to any app OpenSSH"),
    ({"from_ip": "10.244.0.0/16"}, "allow from 10.244.0.0/16"),
    ({"from_ip": "10.0.2.15/32"}, "allow from 10.0.2.15"),
    ({"from_ip": "fd00::/64"}, "allow from fd00::/64"),
    ({"proto": "udp"}, "allow to any proto udp"),
    # Route rules: the same, with "route" in front (frontend.get_show_added).
    ({"from_ip": "10.244.0.0/16", "route": True}, "route allow from 10.244.0.0/16"),
    ({"to_ip": "10.96.0.0/12", "route": True}, "route allow to 10.96.0.0/12"),
    ({"from_ip": "10.1.0.0/16", "to_ip": "any", "route": True}, "route allow from 10.1.0.0/16"),
])
def test_rules_are_written_as_ufw_prints_them(rule, printed):
    assert ufw_rules.command(rule) == printed


@pytest.mark.parametrize("rule,field", [
    ({"port": "70000"}, "rules[0].port"),
    ({"port": "32767:30000/tcp"}, "rules[0].port"),
    ({"port": "ssh"}, "rules[0].port"),
    ({"port": "30000:32767"}, "rules[0].proto"),
    ({"port": "6443/tcp", "proto": "udp"}, "rules[0].proto"),
    ({"from_ip": "10.0.0.300/8"}, "rules[0].from_ip"),
    ({"to_ip": "nowhere"}, "rules[0].to_ip"),
    ({"rule": "open"}, "rules[0].rule"),
    ({"name": "OpenSSH", "proto": "tcp"}, "rules[0].proto"),
    ({"name": "x;rm", "port": None}, "rules[0].name"),
])
def test_a_rule_ufw_cannot_take_is_refused_naming_its_field(rule, field):
    with pytest.raises(ufw_rules.UfwRuleError, match=field.replace("[", r"\[").replace("]", r"\]")):
        ufw_rules.command(rule)


def test_every_bad_rule_is_named_at_once_and_repeats_are_dropped():
    with pytest.raises(ufw_rules.UfwRuleError) as error:
        ufw_rules.commands([{"port": "1/tcp"}, {"port": "0"}, {"from_ip": "x"}])
    assert "rules[1].port" in str(error.value) and "rules[2].from_ip" in str(error.value)
    assert ufw_rules.commands([{"port": "1/tcp"}, {"port": "1", "proto": "tcp"}]) == ["allow 1/tcp"]


SHOW_ADDED = """Added user rules (see 'ufw status' for running firewall):
ufw allow OpenSSH
ufw allow from 10.0.2.0/24 to any port 10250 proto tcp
ufw route allow from 10.244.0.0/16
"""


def test_only_the_rules_ufw_lacks_are_added():
    present = ufw_rules.added(SHOW_ADDED)
    assert present == ["allow OpenSSH", "allow from 10.0.2.0/24 to any port 10250 proto tcp",
                       "route allow from 10.244.0.0/16"]
    wanted = ufw_rules.commands([{"name": "OpenSSH"}, {"port": "10250/tcp", "from_ip": "10.0.2.0/24"},
                                 {"to_ip": "10.244.0.0/16", "route": True}])
    assert ufw_rules.missing(wanted, present) == ["route allow to 10.244.0.0/16"]
    assert ufw_rules.added("Added user rules (see 'ufw status' for running firewall):\n(None)") == []


def test_ufw_answers_read_as_changed_or_not():
    assert ufw_rules.rule_changed("Rule added\nRule added (v6)\n")
    assert ufw_rules.rule_changed("Rules updated\n")
    assert not ufw_rules.rule_changed("Skipping adding existing rule\nSkipping adding existing rule (v6)\n")
    assert ufw_rules.is_active("Status: active\n\nTo  Action  From\n")
    assert not ufw_rules.is_active("Status: inactive\n")


def test_a_rule_splits_into_ufw_arguments():
    assert ufw_rules.rule_argv("route allow from 10.244.0.0/16") == ["route", "allow", "from", "10.244.0.0/16"]
    assert ufw_rules.rule_argv("allow from 10.0.0.0/8 to any app 'Apache Full'") == [
        "allow", "from", "10.0.0.0/8", "to", "any", "app", "Apache Full"]
