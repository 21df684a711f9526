"""Which layer plays a run's --tags select."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.run_tags import layer_selected

HOST_LAYER = ["prepare_hosts", "host_prep", "gpu_host_driver", "containerd"]


@pytest.mark.parametrize("run_tags, selected", [
    (["all"], True),                          # the default of --tags
    ([], True),
    (["tagged"], True),
    (["prepare_hosts"], True),
    (["host_prep_kernel"], True),
    (["gpu_stack", "containerd_config"], True),
    (["gpu_stack", "queues"], False),
    (["host_preparation"], False),            # a prefix without the separator is another tag
    (["preflight"], False),
])
def test_layer_selected(run_tags, selected):
    assert layer_selected(run_tags, HOST_LAYER) is selected


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="must be lists of tag names"):
        layer_selected("gpu_stack", HOST_LAYER)
    with pytest.raises(ValueError, match="layer_tags is empty"):
        layer_selected(["gpu_stack"], [])
