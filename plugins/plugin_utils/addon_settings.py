# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings an add-on role renders with, resolved as the role itself would see them,
and the files it renders with them.

Used by the render_addon action (inside the role, where the role's defaults are already
among the task's variables) and by plan_report (in plan.yml, where no role is loaded).
Either way the role's defaults are read from the role, the task's variables (inventory,
play and extra vars) override them, the values are templated and then checked against
the role's ``render`` argument spec, and the role files the add-on embeds are read (the
templates among them rendered with the same variables).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import plain

try:  # ansible-core 2.19+: text read from a file is only templated when trusted
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - ansible-core 2.18 templates every string
    def trust_as_template(value):
        return value

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def role_path(role: str, *parts: str) -> str:
    return os.path.join(COLLECTION_ROOT, "roles", role, *parts)


def _load_defaults(role: str, loader: Any) -> Dict[str, Any]:
    path = role_path(role, "defaults", "main.yml")
    try:  # ansible-core 2.19+: role defaults are templates, as when the role is loaded
        return dict(loader.load_from_file(path, trusted_as_template=True) or {})
    except TypeError:  # pragma: no cover - ansible-core 2.18 has no such argument and trusts all
        return dict(loader.load_from_file(path) or {})


def role_defaults(role: str, loader: Any) -> Dict[str, Any]:
    """The raw (untemplated) defaults of one of the collection's roles."""
    return _load_defaults(role, loader)


def _render_options(role: str, loader: Any) -> Dict[str, Any]:
    specs = loader.load_from_file(role_path(role, "meta", "argument_specs.yml")) or {}
    return dict(specs.get("argument_specs", {}).get("render", {}).get("options") or {})


def resolve(addon: str, task_vars: Mapping[str, Any], templar: Any, loader: Any) -> Dict[str, Any]:
    """Settings for :func:`addon_files.render` of ``addon``, as plain Python values."""
    try:
        names = ["%s_%s" % (addon, key) for key in addon_files.SETTINGS[addon]]
    except KeyError:
        raise AnsibleActionFail("addon: %r is not an add-on of the collection (known: %s)"
                                % (addon, ", ".join(addon_files.ADDONS)))
    variables = _load_defaults(addon, loader)
    variables.update(task_vars)  # role defaults have the lowest precedence, as in a play
    scoped = templar.copy_with_new_env(available_variables=variables)
    values = {name: plain(scoped.template(variables[name])) for name in names}

    options = _render_options(addon, loader)
    unknown = [name for name in names if name not in options]
    if unknown:
        raise AnsibleActionFail("%s: the render argument spec does not describe %s" % (addon, ", ".join(unknown)))
    checked = ArgumentSpecValidator({name: options[name] for name in names}).validate(values)
    if checked.error_messages:
        raise AnsibleActionFail("%s: %s" % (addon, "; ".join(checked.error_messages)))
    settings: Dict[str, Any] = {name[len(addon) + 1:]: value for name, value in checked.validated_parameters.items()}

    for key, (relative, is_template) in addon_files.ROLE_FILES.get(addon, {}).items():
        with open(role_path(addon, relative), encoding="utf-8") as handle:
            text = handle.read()
        settings[key] = plain(scoped.template(trust_as_template(text))) if is_template else text
    return settings


def render(addon: str, plan: Mapping[str, Any], task_vars: Mapping[str, Any], templar: Any, loader: Any) -> Dict[str, str]:
    """Relative path -> YAML text of every file ``addon`` renders for ``plan``, with the
    settings :func:`resolve` finds; the pure code's ValueError becomes an action failure."""
    settings = resolve(addon, task_vars, templar, loader)
    try:
        return addon_files.render(addon, plan, settings)
    except ValueError as error:
        raise AnsibleActionFail(str(error))
