# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every copy of a supported version, default or pin agrees with the one source,
plugins/module_utils/_common/versions.py.

Ansible needs some of these values as literals (role defaults, argument specs, meta/main.yml,
meta/runtime.yml, the playbooks' fallbacks); README.md and docs/inventory.md show them to
people. Each test below names the file and the value that drifted.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils._common import versions as v

REPO = Path(__file__).resolve().parents[2]
ROLES = sorted(path.parent.parent for path in REPO.glob("roles/*/meta/main.yml"))
# Roles that run on the controller (the rehearsal's control plane), not on cluster hosts.
CONTROLLER_ROLES = {"rehearsal"}
SETTINGS = {
    # inventory variable -> its default
    "gpushare_kubernetes_version": v.DEFAULT_KUBERNETES_VERSION,
    "gpushare_kubernetes_distribution": v.DEFAULT_DISTRIBUTION,
    "gpushare_gpu_backend": v.DEFAULT_BACKEND,
}
PLAYBOOK_SETTINGS = REPO / "playbooks" / "vars" / "cluster_settings.yml"


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _role_defaults(role: Path) -> Dict[str, Any]:
    path = role / "defaults" / "main.yml"
    return (_yaml(path) or {}) if path.exists() else {}


def _entry_points(role: Path) -> Dict[str, Dict[str, Any]]:
    path = role / "meta" / "argument_specs.yml"
    return ((_yaml(path) or {}).get("argument_specs") or {}) if path.exists() else {}


def _all_role_defaults() -> Dict[str, Tuple[str, Any]]:
    """variable -> (role, default) over every role."""
    return {name: (role.name, value) for role in ROLES for name, value in _role_defaults(role).items()}


def _text_files() -> Iterator[Path]:
    """Every file of the roles and playbooks that can restate a default (YAML, templates, READMEs)."""
    for folder in ("roles", "playbooks"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in (".yml", ".yaml", ".j2", ".md") and "files" not in path.parts:
                yield path


def _minors_phrase(minors) -> str:
    return "%s and %s" % (", ".join(minors[:-1]), minors[-1])


def _range(minors) -> str:
    return "%s–%s" % (minors[0], minors[-1])


# --- versions.py itself -------------------------------------------------------------------

def test_the_source_is_consistent():
    assert v.DEFAULT_KUBERNETES_VERSION in v.SUPPORTED_KUBERNETES_MINORS
    assert list(v.SUPPORTED_KUBERNETES_MINORS) == sorted(v.SUPPORTED_KUBERNETES_MINORS,
                                                         key=lambda minor: int(minor.split(".")[1]))
    assert v.DEFAULT_DISTRIBUTION in v.DISTRIBUTIONS and v.DEFAULT_BACKEND in v.BACKENDS
    assert all(version in v.CHART_VERSIONS and repo in v.CHART_REPOSITORIES
               for version, repo in v.MIRROR_CHARTS.values())
    # The rehearsal runs a patch release of the default minor.
    assert v.REHEARSAL_VERSIONS["kubernetes"].rsplit(".", 1)[0] == v.DEFAULT_KUBERNETES_VERSION
    assert re.fullmatch(r"\d+\.\d+", v.MIN_ANSIBLE_VERSION)


# --- role defaults and the roles' own fallbacks ---------------------------------------------

def test_role_defaults_hold_the_pins():
    defaults = _all_role_defaults()
    pins = dict(v.CHART_VERSIONS, **v.CHART_REPOSITORIES,
                **{"rehearsal_%s_version" % name: version for name, version in v.REHEARSAL_VERSIONS.items()})
    problems = []
    for name, expected in sorted(pins.items()):
        if name not in defaults:
            problems.append("%s: in versions.py but in no role's defaults/main.yml" % name)
        elif str(defaults[name][1]) != expected:
            problems.append("roles/%s/defaults/main.yml %s: %r, versions.py says %r"
                            % (defaults[name][0], name, defaults[name][1], expected))
    assert not problems, "\n".join(problems)


def test_every_fallback_of_a_cluster_setting_is_the_default():
    """`gpushare_kubernetes_version | default('1.35')` and the like, wherever the roles, playbooks
    or role READMEs write one."""
    pattern = re.compile(r"\b(%s)\s*\|\s*default\(\s*['\"]([^'\"]*)['\"]" % "|".join(SETTINGS))
    problems, seen = [], 0
    for path in _text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for variable, value in pattern.findall(line):
                seen += 1
                if value != SETTINGS[variable]:
                    problems.append("%s:%d: %s defaults to %r, versions.py says %r"
                                    % (path.relative_to(REPO), number, variable, value, SETTINGS[variable]))
    assert seen, "no fallback found: the pattern no longer matches how the roles write them"
    assert not problems, "\n".join(problems)


def test_the_playbooks_state_each_fallback_once():
    """The playbooks read the settings from playbooks/vars/cluster_settings.yml, not each its own copy."""
    settings = _yaml(PLAYBOOK_SETTINGS)
    assert settings == {
        "__gpushare_distribution": "{{ gpushare_kubernetes_distribution | default('%s') }}" % v.DEFAULT_DISTRIBUTION,
        "__gpushare_kubernetes_version": "{{ gpushare_kubernetes_version | default('%s') | string }}"
                                         % v.DEFAULT_KUBERNETES_VERSION,
        "__gpushare_backend": "{{ gpushare_gpu_backend | default('%s') }}" % v.DEFAULT_BACKEND,
    }
    pattern = re.compile(r"\b(%s)\s*\|\s*default\(" % "|".join(SETTINGS))
    copies = [str(path.relative_to(REPO)) for path in sorted((REPO / "playbooks").rglob("*.yml"))
              if path != PLAYBOOK_SETTINGS and pattern.search(path.read_text(encoding="utf-8"))]
    assert not copies, "playbooks with their own fallback (use playbooks/vars/cluster_settings.yml): %s" % copies
    # Every play that reads one of the settings loads the file.
    for path in sorted((REPO / "playbooks").glob("*.yml")):
        for play in _yaml(path) or []:
            if re.search(r"__gpushare_(distribution|kubernetes_version|backend)\b", yaml.safe_dump(play)):
                assert "vars/cluster_settings.yml" in (play.get("vars_files") or []), \
                    "%s, play %r: reads the cluster settings without vars_files: [vars/cluster_settings.yml]" % (
                        path.relative_to(REPO), play.get("name"))


def test_playbook_pins():
    mirror = _yaml(REPO / "playbooks" / "mirror.yml")
    play_vars = next(play["vars"] for play in mirror if "gpushare_mirror_driver_version" in play.get("vars", {}))
    assert play_vars["gpushare_mirror_driver_version"] == v.GPU_OPERATOR_DRIVER_VERSION, \
        "playbooks/mirror.yml gpushare_mirror_driver_version drifted from versions.py"
    # Without cached facts the manifest lists the driver images of every supported host OS
    # (Ubuntu LTS releases are <major>.04; Rocky's driver images carry the major only).
    supported = ["ubuntu%s.04" % major for major in v.SUPPORTED_HOST_OS["Ubuntu"]] + \
        ["rocky%s" % major for major in v.SUPPORTED_HOST_OS["Rocky"]]
    assert play_vars["gpushare_mirror_driver_os"] == supported, \
        "playbooks/mirror.yml gpushare_mirror_driver_os is not the supported host OS list of versions.py"


def test_supported_os_tables_of_the_host_roles():
    """The host roles' vars tables accept the supported hosts plus the Molecule stand-in."""
    expected = {name: list(majors) for name, majors in dict(v.SUPPORTED_HOST_OS, **v.TEST_HOST_OS).items()}
    tables = {}
    for path in sorted(REPO.glob("roles/*/vars/*.yml")):
        for name, value in (_yaml(path) or {}).items():
            if name.endswith("_supported_os"):
                tables["%s %s" % (path.relative_to(REPO), name)] = value
    assert tables, "no supported-OS table found in roles/*/vars"
    drifted = {where: table for where, table in tables.items()
               if {k: [str(major) for major in majors] for k, majors in table.items()} != expected}
    assert not drifted, "supported-OS tables that differ from versions.py %s: %s" % (expected, drifted)


# --- argument specs -------------------------------------------------------------------------

def test_argument_spec_defaults_are_the_role_defaults():
    """Every entry point of every role: a documented default is the role's default."""
    problems, checked = [], 0
    for role in ROLES:
        defaults = _role_defaults(role)
        for entry, spec in _entry_points(role).items():
            for name, option in ((spec or {}).get("options") or {}).items():
                if "default" not in option:
                    continue
                checked += 1
                if name not in defaults:
                    problems.append("roles/%s %s.%s: default %r in the spec, none in defaults/main.yml"
                                    % (role.name, entry, name, option["default"]))
                elif option["default"] != defaults[name]:
                    problems.append("roles/%s %s.%s: spec default %r, defaults/main.yml %r"
                                    % (role.name, entry, name, option["default"], defaults[name]))
    assert checked > 100
    assert not problems, "\n".join(problems)


def test_entry_points_agree_on_every_option():
    """An option listed by several entry points of one role is the same definition in each."""
    problems = []
    for role in ROLES:
        seen: Dict[str, Tuple[str, Any]] = {}
        for entry, spec in _entry_points(role).items():
            for name, option in ((spec or {}).get("options") or {}).items():
                first = seen.setdefault(name, (entry, option))
                if first[1] != option and not (role.name == "rehearsal" and name == "rehearsal_dir"):
                    problems.append("roles/%s: %s differs between entry points %s and %s"
                                    % (role.name, name, first[0], entry))
    assert not problems, "\n".join(problems)


def test_argument_spec_descriptions_name_the_supported_minors():
    phrase = re.compile(r"supported minors are ([0-9., and]+?)\.(?:\s|$)")
    fallback = re.compile(r"Default gpushare_kubernetes_version or ([0-9.]+?)\.(?:\s|$)")
    problems = []
    for role in ROLES:
        for entry, spec in _entry_points(role).items():
            for name, option in ((spec or {}).get("options") or {}).items():
                description = option.get("description") or ""
                text = " ".join(description) if isinstance(description, list) else str(description)
                for found in phrase.findall(text):
                    if found != _minors_phrase(v.SUPPORTED_KUBERNETES_MINORS):
                        problems.append("roles/%s %s.%s: supported minors %r" % (role.name, entry, name, found))
                for found in fallback.findall(text):
                    if found != v.DEFAULT_KUBERNETES_VERSION:
                        problems.append("roles/%s %s.%s: default minor %r" % (role.name, entry, name, found))
    assert not problems, "\n".join(problems)


# --- meta -----------------------------------------------------------------------------------

@pytest.mark.parametrize("role", ROLES, ids=[role.name for role in ROLES])
def test_meta_main(role):
    info = _yaml(role / "meta" / "main.yml")["galaxy_info"]
    assert info["min_ansible_version"] == v.MIN_ANSIBLE_VERSION, "roles/%s/meta/main.yml min_ansible_version" % role.name
    platforms = {entry["name"]: [str(version) for version in entry["versions"]] for entry in info["platforms"]}
    expected = v.CONTROLLER_PLATFORMS if role.name in CONTROLLER_ROLES else v.GALAXY_PLATFORMS
    assert platforms == {name: list(versions) for name, versions in expected.items()}, \
        "roles/%s/meta/main.yml platforms" % role.name


def test_meta_runtime():
    assert _yaml(REPO / "meta" / "runtime.yml")["requires_ansible"] == ">=%s.0" % v.MIN_ANSIBLE_VERSION


# --- README.md and docs/inventory.md --------------------------------------------------------

def _readme_table() -> Dict[str, str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Supported platforms and versions", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return {cells[0].strip(): cells[1].strip() for cells in rows if len(cells) == 2 and cells[0].strip()}


def _ubuntu(majors) -> str:
    return " / ".join("%s.04" % major for major in majors)


def test_readme_supported_platforms_and_versions():
    table = _readme_table()
    chart = v.CHART_VERSIONS
    minor = v.DEFAULT_KUBERNETES_VERSION
    assert table == {
        "Hosts": "Ubuntu %s (Ubuntu Pro optional), Rocky Linux %s (CIQ optional)"
                 % (_ubuntu(v.SUPPORTED_HOST_OS["Ubuntu"]), " / ".join(v.SUPPORTED_HOST_OS["Rocky"])),
        "Kubernetes": "%s by default, %s supported; MicroK8s (`%s/stable`) or kubeadm"
                      % (minor, _range(v.SUPPORTED_KUBERNETES_MINORS), minor),
        "GPU stack": "NVIDIA GPU Operator %s, NVIDIA DRA driver %s, Kueue v%s (`v1beta2`), kube-prometheus-stack %s"
                     % (chart["gpu_operator_version"], chart["dra_driver_version"], chart["kueue_version"],
                        chart["monitoring_version"]),
        "GPU backends": "`%s` (default; DRA is GA from Kubernetes %s) or `%s` (classic)"
                        % (v.DEFAULT_BACKEND, v.SUPPORTED_KUBERNETES_MINORS[0], v.BACKENDS[1]),
        "Controller": "ansible-core >= %s (tested with 2.19 on Python 3.11), kubernetes.core, community.general, "
                      "ansible.posix" % v.MIN_ANSIBLE_VERSION,
    }


def test_readme_names_the_supported_minors_of_the_roles():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "Kubernetes %s with either distribution" % _range(v.SUPPORTED_KUBERNETES_MINORS) in text


def _doc_rows() -> Dict[str, List[str]]:
    rows: Dict[str, List[str]] = {}
    for line in (REPO / "docs" / "inventory.md").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\| `([a-z0-9_]+)` \|(.*)\|$", line)
        if match:
            rows.setdefault(match.group(1), [cell.strip() for cell in match.group(2).split(" | ")])
    return rows


def test_docs_inventory_settings_and_pins():
    rows = _doc_rows()
    minors = v.SUPPORTED_KUBERNETES_MINORS
    assert rows["gpushare_kubernetes_distribution"][0] == " \\| ".join("`%s`" % name for name in v.DISTRIBUTIONS)
    assert rows["gpushare_kubernetes_version"][0] == 'string, `"%s"`-`"%s"`' % (minors[0], minors[-1])
    assert rows["gpushare_gpu_backend"][0] == "`%s`" % v.DEFAULT_BACKEND
    assert "`%s` or `%s`" % v.BACKENDS in rows["gpushare_gpu_backend"][1]
    pins = dict(v.CHART_VERSIONS, **v.CHART_REPOSITORIES,
                **{"rehearsal_%s_version" % name: version for name, version in v.REHEARSAL_VERSIONS.items()})
    drifted = {name: rows.get(name) for name, version in pins.items()
               if name not in rows or rows[name][1] != "`%s`" % version}
    assert not drifted, "docs/inventory.md rows that differ from versions.py: %s" % drifted


def test_role_readmes_show_the_pins():
    """Role READMEs quote their defaults (`kueue_version: 0.19.2`)."""
    pins = dict(v.CHART_VERSIONS, **v.CHART_REPOSITORIES,
                **{"rehearsal_%s_version" % name: version for name, version in v.REHEARSAL_VERSIONS.items()})
    problems = []
    for readme in sorted(REPO.glob("roles/*/README.md")):
        for number, line in enumerate(readme.read_text(encoding="utf-8").splitlines(), 1):
            match = re.match(r"^([a-z0-9_]+): (\S+)$", line)
            if match and match.group(1) in pins and match.group(2).strip("\"'") != pins[match.group(1)]:
                problems.append("%s:%d: %s" % (readme.relative_to(REPO), number, line))
    assert not problems, "\n".join(problems)


# --- Python copies (until the code imports versions.py) -------------------------------------

def _module(name: str):
    """The module_utils module of that file name, wherever the package layout puts it."""
    found = sorted((REPO / "plugins" / "module_utils").rglob("%s.py" % name))
    if not found:
        return None
    dotted = ".".join(found[0].relative_to(REPO).with_suffix("").parts)
    return importlib.import_module("ansible_collections.gpushare.cluster." + dotted)


def _copies() -> Iterator[Tuple[str, Any, Any]]:
    """(where, copy, expected) for every Python copy that still exists."""
    manifest = _module("mirror_manifest")
    if manifest is not None:
        for chart, (version_var, repo_var) in v.MIRROR_CHARTS.items():
            entry = getattr(manifest, "CHARTS", {}).get(chart)
            if entry is not None:
                yield ("mirror_manifest.CHARTS[%s]" % chart, entry,
                       {"version": v.mirror_chart_version(chart), "repository": v.CHART_REPOSITORIES[repo_var]})
        for attribute, expected in (("HELM_VERSION", v.CHART_VERSIONS["kubernetes_common_helm_version"]),
                                    ("KUBE_VIP_VERSION", v.CHART_VERSIONS["kubeadm_vip_version"]),
                                    ("GPU_OPERATOR_DRIVER_VERSION", v.GPU_OPERATOR_DRIVER_VERSION)):
            if hasattr(manifest, attribute):
                yield "mirror_manifest.%s" % attribute, getattr(manifest, attribute), expected
    rehearsal = _module("rehearsal_cluster")
    if rehearsal is not None and hasattr(rehearsal, "DEFAULT_VERSIONS"):
        yield "rehearsal_cluster.DEFAULT_VERSIONS", dict(rehearsal.DEFAULT_VERSIONS), v.REHEARSAL_VERSIONS
    plan = _module("plan")
    if plan is not None:
        if hasattr(plan, "SUPPORTED_MINORS"):
            yield ("plan.SUPPORTED_MINORS", ["1.%d" % minor for minor in plan.SUPPORTED_MINORS],
                   list(v.SUPPORTED_KUBERNETES_MINORS))
        if hasattr(plan, "DISTRIBUTIONS"):
            yield "plan.DISTRIBUTIONS", tuple(plan.DISTRIBUTIONS), v.DISTRIBUTIONS
        backend = getattr(plan, "PLAN_INPUT_ARGUMENT_SPEC", {}).get("backend")
        if backend is not None:
            yield ("plan.PLAN_INPUT_ARGUMENT_SPEC backend", (tuple(backend["choices"]), backend["default"]),
                   (v.BACKENDS, v.DEFAULT_BACKEND))
    sharing = _module("sharing")
    if sharing is not None and hasattr(sharing, "BACKENDS"):
        yield "sharing.BACKENDS", tuple(sharing.BACKENDS), v.BACKENDS


def test_python_copies_agree():
    drifted = ["%s: %r, versions.py says %r" % (where, copy, expected) for where, copy, expected in _copies()
               if copy != expected]
    assert not drifted, "\n".join(drifted)


def test_rehearsal_go_modules_require_the_pinned_versions():
    modules = {"kubernetes": "k8s.io/kubernetes", "etcd": "go.etcd.io/etcd/server/v3", "kueue": "sigs.k8s.io/kueue",
               "kwok": "sigs.k8s.io/kwok"}
    for component, module in modules.items():
        text = (REPO / "roles" / "rehearsal" / "files" / "go" / component / "go.mod").read_text(encoding="utf-8")
        required = "require %s v%s" % (module, v.REHEARSAL_VERSIONS[component])
        assert required + "\n" in text, "roles/rehearsal/files/go/%s/go.mod: no %r" % (component, required)
