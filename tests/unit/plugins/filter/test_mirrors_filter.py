# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mirror filters: wrapping, error conversion, and use by FQCN in a real template."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.filter import mirror_sync, mirrors

FILTERS = dict(mirrors.FilterModule().filters(), **mirror_sync.FilterModule().filters())
MIRRORS = {"registry": "registry.internal:5000", "apt": {"kubernetes": "http://mirror.internal/k8s"},
           "helm": {"dir": "/srv/charts"}, "files": "http://mirror.internal/files"}


def test_filters_rewrite_locations():
    assert FILTERS["mirror_image"]("nvcr.io/nvidia/driver:595.91.07-ubuntu24.04", MIRRORS) == \
        "registry.internal:5000/nvidia/driver:595.91.07-ubuntu24.04"
    assert FILTERS["mirror_image_repo"]("nvcr.io/nvidia", MIRRORS) == "registry.internal:5000/nvidia"
    assert FILTERS["mirror_url"]("https://pkgs.k8s.io/core:/stable:/v1.35/deb/", "apt", "kubernetes", MIRRORS) == \
        "http://mirror.internal/k8s/core:/stable:/v1.35/deb/"
    assert FILTERS["mirror_chart"]("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts", MIRRORS)["chart_ref"] == \
        "/srv/charts/kueue-0.19.2.tgz"
    assert FILTERS["mirror_file_url"]("https://get.helm.sh/helm-v3.19.0-linux-amd64.tar.gz", MIRRORS) == \
        "http://mirror.internal/files/helm-v3.19.0-linux-amd64.tar.gz"
    assert FILTERS["mirror_proxy_env"]({"https": "http://p:3128"}, ["10.0.0.0/8"])["NO_PROXY"] == "10.0.0.0/8"


def test_manifest_filter_returns_plain_data():
    manifest = FILTERS["mirror_manifest"]({"driver_os": ["ubuntu24.04"], "mirrors": MIRRORS})
    json.dumps(manifest)
    assert manifest["charts"][0]["mirror"].startswith("/srv/charts/")


@pytest.mark.parametrize("call", [
    lambda: FILTERS["mirror_image"]("nvcr.io//x", MIRRORS),
    lambda: FILTERS["mirror_validate"]({"registry": "https://r"}, {"http": "p:3128"}),
    lambda: FILTERS["mirror_manifest"]({"distribution": "k3s", "driver_os": ["ubuntu24.04"]}),
    lambda: FILTERS["mirror_sync_plan"]({"images": []}, "docker"),
])
def test_errors_become_filter_errors(call):
    with pytest.raises(AnsibleFilterError):
        call()


def test_validate_error_lists_every_field():
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["mirror_validate"]({"registry": "https://r", "files": "x"}, {"http": "p:3128"})
    assert all(f in str(err.value) for f in ("gpushare_mirrors.registry", "gpushare_mirrors.files",
                                             "gpushare_proxy.http"))


def test_hosts_toml_sends_pulls_to_the_mirror():
    text = FILTERS["mirror_hosts_toml"]("nvcr.io", {"registry": "registry.internal:5000"})
    assert text.splitlines()[0] == 'server = "https://registry.internal:5000"'
    assert '[host."https://registry.internal:5000"]' in text
    assert FILTERS["mirror_hosts_toml"]("nvcr.io", {}) is None


def test_missing_images_keeps_the_steps_the_mirror_lacks():
    steps = [{"image": "a", "check": ["skopeo", "inspect"], "commands": [["skopeo", "copy"]]},
             {"image": "b", "check": ["skopeo", "inspect"], "commands": [["skopeo", "copy"]]},
             {"image": "c", "check": ["skopeo", "list-tags"], "expect": "v2", "commands": [["skopeo", "copy"]]},
             {"image": "d", "check": ["skopeo", "list-tags"], "expect": "v1", "commands": [["skopeo", "copy"]]}]
    probes = [{"rc": 0, "stdout": "{}", "item": steps[0]}, {"rc": 1, "stdout": "", "item": steps[1]},
              {"rc": 0, "stdout": "NAME TAG\nrepo v1", "item": steps[2]},
              {"rc": 0, "stdout": "NAME TAG\nrepo v1", "item": steps[3]}]
    assert [step["image"] for step in FILTERS["mirror_missing_images"](probes)] == ["b", "c"]
