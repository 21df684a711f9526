# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/team_access.yml without a cluster: its refusals, and check mode writing nothing.
(The issuing itself runs on the rehearsal: tests/integration/rehearsal/test_team_access.py.)"""

from __future__ import annotations

import json
import sys

import yaml

import runner  # tests/support


TEAMS = [{"name": "training", "namespaces": ["training"], "priority": 10, "group": "ml-training"},
         {"name": "data", "namespaces": ["data"], "priority": 100}]
ADMIN = {"apiVersion": "v1", "kind": "Config", "current-context": "admin@c",
         "contexts": [{"name": "admin@c", "context": {"cluster": "c", "user": "admin"}}],
         "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": "Q0E="}}],
         "users": [{"name": "admin", "user": {"token": "not-used"}}]}


def _run(tmp_path, *extra, **variables):
    admin = tmp_path / "admin.conf"
    admin.write_text(yaml.safe_dump(ADMIN))
    values = {"gpushare_teams": TEAMS, "gpushare_kubeconfig": str(admin), "team_access_dir": str(tmp_path / "out"),
              **variables}
    (tmp_path / "vars.json").write_text(json.dumps(values))
    return runner.ansible_playbook("-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
                                   "-e", "@%s" % (tmp_path / "vars.json"),
                                   *extra, str(runner.PLAYBOOKS / "team_access.yml"))


def test_check_mode_says_what_it_would_write_and_writes_nothing(tmp_path):
    result = _run(tmp_path, "--check", team_access_team="training", team_access_person="tess")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "Would write %s for tess in group ml-training (team training, queue training, namespaces training)." % (
        tmp_path / "out" / "training-tess.conf") in result.stdout
    assert not (tmp_path / "out").exists()


def test_a_team_without_a_group_an_unknown_team_and_a_bad_person_are_refused(tmp_path):
    no_group = _run(tmp_path, team_access_team="data", team_access_person="dana")
    assert no_group.returncode != 0 and "team data, field group: not set" in no_group.stdout
    unknown = _run(tmp_path, team_access_team="nobody", team_access_person="dana")
    assert unknown.returncode != 0 and "no team 'nobody' in gpushare_teams (teams: training, data)" in unknown.stdout
    bad_person = _run(tmp_path, team_access_team="training", team_access_person="system:admin")
    assert bad_person.returncode != 0 and "looks like a Kubernetes system identity" in bad_person.stdout
    short = _run(tmp_path, team_access_team="training", team_access_person="tess", team_access_expiration_seconds=60)
    assert short.returncode != 0 and "team_access_expiration_seconds: must be a whole number of seconds >= 600" in short.stdout
    assert not (tmp_path / "out").exists()
