"""host_prep steps a container skips, rendered with the facts of a real host.

The kernel probes are fed what the real commands print on this machine (procps `sysctl`),
so a comparison that can never match shows up here; molecule/vm runs the same steps on a
real kernel.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .host_layer_render import Renderer, by_name, debian_facts

APPLY = "Apply the settings the running kernel does not have yet"
PROBE = "Read the running kernel's values of these settings"
KEYS = ("net.ipv4.ip_forward", "fs.inotify.max_user_watches", "kernel.pid_max")


def vm(**extra) -> Renderer:
    """A Debian host on its own kernel (the molecule/vm guest)."""
    facts = dict(debian_facts(), virtualization_type="kvm", virtualization_role="guest", swaptotal_mb=128)
    renderer = Renderer("host_prep", facts, extra)
    renderer.variables["__host_prep_in_container"] = False
    return renderer


def kernel_now(key: str) -> int:
    return int(Path("/proc/sys", *key.split(".")).read_text().split()[0])


def probe_output(renderer: Renderer) -> dict:
    """Run the role's own probe command here and register its output as Ansible would."""
    if shutil.which("sysctl") is None:
        pytest.skip("procps sysctl is not installed on this machine")
    argv = by_name(renderer.tasks("kernel.yml"), PROBE)["args"]["argv"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return {"__host_prep_sysctl_now": {"rc": 0, "stdout": done.stdout, "stdout_lines": done.stdout.splitlines(),
                                       "changed": False}}


def test_sysctls_the_kernel_already_has_are_not_applied_again():
    renderer = vm(host_prep_sysctls={key: kernel_now(key) for key in KEYS})
    tasks = renderer.tasks("kernel.yml", probe_output(renderer))
    assert APPLY not in [task["name"] for task in tasks]


def test_only_the_sysctl_that_differs_is_applied():
    wanted = {key: kernel_now(key) for key in KEYS}
    wanted["fs.inotify.max_user_watches"] += 1
    renderer = vm(host_prep_sysctls=wanted)
    applied = by_name(renderer.tasks("kernel.yml", probe_output(renderer)), APPLY)["items"]
    assert [(item["name"], int(item["value"])) for item in applied] == [
        ("fs.inotify.max_user_watches", wanted["fs.inotify.max_user_watches"])]
