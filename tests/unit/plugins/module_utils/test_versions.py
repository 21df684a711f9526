# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Kubernetes version parser and what each of its callers accepts with it."""
from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils._common import versions
from ansible_collections.gpushare.cluster.plugins.module_utils.airgap import manifest
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import topology
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import plan


@pytest.mark.parametrize("text, parts", [
    ("1.35", (1, 35, None, "")),
    ("v1.35.2", (1, 35, 2, "")),
    (" 1.36.0 ", (1, 36, 0, "")),
    ("1.35.2-1.1", (1, 35, 2, "-1.1")),
    ("v1.36.0-rc.1", (1, 36, 0, "-rc.1")),
    ("2.0", (2, 0, None, "")),
    (1.34, (1, 34, None, "")),
])
def test_versions_are_split_into_their_parts(text, parts):
    assert tuple(versions.parse_kubernetes_version(text)) == parts


@pytest.mark.parametrize("text", ["", "abc", "1", "1.x", "1.35.x", "v", "1..35", "1.35.2.4", None])
def test_anything_else_is_not_a_version(text):
    assert versions.parse_kubernetes_version(text) is None


def test_the_supported_minors_as_numbers_follow_the_strings():
    assert versions.SUPPORTED_KUBERNETES_MINOR_NUMBERS == tuple(
        int(minor.split(".")[1]) for minor in versions.SUPPORTED_KUBERNETES_MINORS)


@pytest.mark.parametrize("text, minor", [
    ("1.35", "1.35"), ("v1.35.0", "1.35"), ("1.35.2", "1.35"), (1.34, "1.34"),
    ("1.35.2-1.1", None),  # a package revision is not a plan's version
    ("2.35", None), ("1.20", None), ("abc", None), (135, None),
])
def test_the_planner_takes_supported_1x_minors_only(text, minor):
    assert plan.minor_version(text) == minor


def test_the_kubernetes_roles_take_package_revisions_and_name_the_field():
    assert topology.parse_version("1.35.2-1.1") == (1, 35, 2)
    assert topology.minor_of("v1.36.0") == "1.36"
    with pytest.raises(topology.TopologyError, match=r"^kubeadm_version: '1\.x' is not a Kubernetes version"):
        topology.parse_version("1.x", "kubeadm_version")


def test_the_mirror_manifest_takes_the_minor_and_refuses_text():
    assert manifest._minor("v1.35.2") == "1.35"  # pylint: disable=protected-access
    with pytest.raises(manifest.ManifestError, match=r"^kubernetes_version: 'abc' is not a Kubernetes version"):
        manifest._minor("abc")  # pylint: disable=protected-access
