# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for team access through OIDC (plugins/module_utils/kubernetes/team_access.py); documented in team_login.yml
and k8s_authentication.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def team_login(teams, team, oidc=None):
    return team_access.team_login(list(teams or []), str(team), dict(oidc or {}))


def k8s_authentication(oidc, path, ca_pem=""):
    return team_access.authentication_file(dict(oidc or {}), str(path), str(ca_pem or ""))


class FilterModule:
    """gpushare.cluster team access filters."""

    def filters(self):
        return {"team_login": _wrap(team_login), "k8s_authentication": _wrap(k8s_authentication)}
