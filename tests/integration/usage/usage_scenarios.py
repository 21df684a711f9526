# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two days of a device_plugin cluster whose data has the traps of the usage report.

- training has ``borrow: 1``; Kueue reports its limit per flavor and resource (1 each on
  three resources) and it borrows one whole GPU every night while a second job waits: the
  limit is reached on ``nvidia.com/gpu``, and a sum over resources (3) would hide that.
- production's ``model-a`` runs on a ``1g.20gb`` slice (20096 MiB) and is redeployed at the
  start of the second day under a new pod name, using more memory: used and free of one
  sample always add up to 20096, those of two pods do not.
- data's time-sliced GPU 2 is carried on a full-size ``7g.80gb`` MIG instance (device_plugin
  next to whole GPUs) whose memory stays low: its entry has no ``mig`` key to shrink.
- gpu1 GPU 4 (data) never reports, and neither does gpu2 (research's two GPUs) although
  Kueue says research held them all day.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List

from usage_series import NAMESPACE_TEAM_LABEL, STEP, Series, _hour, _wait_histogram

DAY = 86400
TEAMS = [
    {"name": "production", "namespaces": ["production"], "priority": 1000},
    {"name": "data", "namespaces": ["data"], "priority": 100},
    {"name": "training", "namespaces": ["training"], "priority": 10, "borrow": 1},
    {"name": "research", "namespaces": ["research"], "priority": 1},
]
NODES: Dict[str, List[Dict[str, Any]]] = {
    "gpu1": [
        {"index": 0, "model": "H100-80GB", "team": "production", "use": "whole"},
        {"index": 1, "model": "H100-80GB", "team": "production", "use": "mig",
         "mig": {"instances": [{"name": "model-a", "memory": "16GiB"}]}},
        {"index": 2, "model": "H100-80GB", "team": "data", "use": "shared", "replicas": 4},
        {"index": 3, "model": "H100-80GB", "team": "training", "use": "whole"},
        {"index": 4, "model": "H100-80GB", "team": "data", "use": "whole"},
    ],
    "gpu2": [{"count": 2, "model": "H100-80GB", "team": "research", "use": "whole"}],
}
BACKEND, DISTRIBUTION, VERSION = "device_plugin", "kubeadm", "1.35"
MODEL = "NVIDIA H100 80GB HBM3"
GPU_MIB = 81559
SLICE_MIB = 20096          # 1g.20gb on H100-80GB
FULL_MIG_MIB = 81152       # 7g.80gb
WHOLE, FLAVOR_WHOLE = "nvidia.com/gpu", "h100-80gb-whole"
MIG_20, MIG_10, FLAVOR_MIG = "nvidia.com/mig-1g.20gb", "nvidia.com/mig-1g.10gb", "h100-80gb-mig"
MODEL_A_USED = (2048.0, 4096.0)   # MiB, first pod then the redeployed one


def _dcgm(series: Series, stamp: int, gpu: int, busy: float, used: float, total: float, namespace=None, pod=None,
          mig=None) -> None:
    labels = {"hostname": "gpu1", "gpu": str(gpu), "UUID": "GPU-00000000-0000-4000-8000-00000000000%d" % gpu,
              "modelName": MODEL, "device": "nvidia%d" % gpu}
    if mig:
        labels.update({"GPU_I_PROFILE": mig[0], "GPU_I_ID": str(mig[1])})
    if namespace:
        labels.update({"exported_namespace": namespace, "exported_pod": pod, "exported_container": "main"})
    series.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", labels, stamp, busy)
    series.add("DCGM_FI_DEV_FB_USED", "gauge", labels, stamp, used)
    series.add("DCGM_FI_DEV_FB_FREE", "gauge", labels, stamp, total - used)


def generate(start: int, end: int) -> Series:
    series = Series()
    waits: Dict[str, List[float]] = {team["name"]: [] for team in TEAMS}
    for stamp in range(start, end + 1, STEP):
        hour = _hour(stamp)
        second_day = stamp >= start + DAY
        for team in TEAMS:
            series.add("kube_namespace_labels", "gauge", {"namespace": team["name"], NAMESPACE_TEAM_LABEL: team["name"],
                                                          "job": "kube-state-metrics"}, stamp, 1)
        _dcgm(series, stamp, 0, 0.6, 60000.0, GPU_MIB, "production", "vllm-0")
        pod = "model-a-9c2b" if second_day else "model-a-6f7d"
        used = MODEL_A_USED[1] if second_day else MODEL_A_USED[0]
        _dcgm(series, stamp, 1, 0.3, used, SLICE_MIB, "production", pod, mig=("1g.20gb", 3))
        _dcgm(series, stamp, 1, 0.0, 0.0, SLICE_MIB, mig=("1g.20gb", 4))
        for gi in range(4):
            _dcgm(series, stamp, 1, 0.0, 0.0, 9984.0, mig=("1g.10gb", 7 + gi))
        for replica in range(4):
            _dcgm(series, stamp, 2, 0.05, 3000.0, FULL_MIG_MIB, "data", "notebook-%d" % replica, mig=("7g.80gb", 0))
        night = hour >= 13 or hour < 5
        _dcgm(series, stamp, 3, 0.9 if night else 0.0, 70000.0 if night else 0.0, GPU_MIB,
              "training" if night else None, "finetune-0" if night else None)
        # Kueue, per ClusterQueue, flavor and resource.
        rows = [
            ("production", FLAVOR_WHOLE, WHOLE, 1, 1, math.inf),
            ("production", FLAVOR_MIG, MIG_20, 2, 1, math.inf),
            ("production", FLAVOR_MIG, MIG_10, 4, 0, math.inf),
            ("data", FLAVOR_WHOLE, WHOLE, 1, 0, math.inf),
            ("research", FLAVOR_WHOLE, WHOLE, 2, 2, math.inf),
            ("training", FLAVOR_WHOLE, WHOLE, 1, 2 if night else 0, 1),
            ("training", FLAVOR_MIG, MIG_20, 0, 0, 1),
            ("training", FLAVOR_MIG, MIG_10, 0, 0, 1),
        ]
        for queue, flavor, resource, nominal, usage, limit in rows:
            labels = {"cohort": "gpushare", "cluster_queue": queue, "flavor": flavor, "resource": resource,
                      "replica_role": "standalone"}
            series.add("kueue_cluster_queue_nominal_quota", "gauge", labels, stamp, nominal)
            series.add("kueue_cluster_queue_borrowing_limit", "gauge", labels, stamp, limit)
            series.add("kueue_cluster_queue_resource_usage", "gauge", labels, stamp, usage)
        for team in TEAMS:
            waiting = team["name"] == "training" and night
            series.add("kueue_pending_workloads", "gauge", {"cluster_queue": team["name"], "status": "inadmissible",
                                                            "replica_role": "standalone"}, stamp, 1 if waiting else 0)
        if stamp % DAY == 19 * 3600:
            waits["training"].append(6 * 3600.0)
        for team in TEAMS:
            _wait_histogram(series, team["name"], stamp, waits[team["name"]])
    return series
