# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that edit MicroK8s' args and env files (plugins/module_utils/kubernetes/microk8s_args.py); documented in one
<name>.yml per filter."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import microk8s_args
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def microk8s_merge_args(text, args=None, feature_gates=None, remove=None, service="args"):
    return microk8s_args.merge_args(text, dict(args or {}), dict(feature_gates or {}), list(remove or []), service)


def microk8s_merge_env(text, env=None):
    return microk8s_args.merge_env(text, dict(env or {}))


def microk8s_enable_cdi(template, spec_dirs=None):
    if spec_dirs:
        return microk8s_args.enable_cdi(template, tuple(spec_dirs))
    return microk8s_args.enable_cdi(template)


def microk8s_snap_list(text, name="microk8s"):
    return microk8s_args.snap_list_entry(str(text or ""), str(name))


class FilterModule:
    """gpushare.cluster MicroK8s file filters."""

    def filters(self):
        functions = (microk8s_merge_args, microk8s_merge_env, microk8s_enable_cdi, microk8s_snap_list)
        return {func.__name__: _wrap(func) for func in functions}
