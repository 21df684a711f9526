# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generated Prometheus history of the example cluster, and a throw-away Prometheus.

The series use the metric and label names of the pinned exporters: dcgm-exporter
4.6.0-4.8.3 as shipped by the GPU Operator (``DCGM_FI_*``, ``hostname``, ``gpu``, ``UUID``,
``GPU_I_PROFILE``/``GPU_I_ID`` for MIG, pod attribution renamed to ``exported_namespace``/
``exported_pod`` by Prometheus), kube-state-metrics ``kube_namespace_labels`` with
the plan's team label (``label_gpushare_io_team``), and Kueue 0.19 ``kueue_*`` with ``cluster_queue``/``resource`` labels.

The worked day of the example inventory, every day for two weeks (UTC hours):
- production: vLLM on GPU 0 around the clock, busy 08:00-20:00 (lighter at weekends);
  three small models plus one fill instance on GPU 1 (four ``1g.24gb`` MIG slices);
- data: notebooks on GPU 2 from 10:00 to 19:00, mostly idle;
- training: a fine-tune for two GPUs arrives at 13:00, waits in its queue while only
  GPU 3 is free, runs 19:00-05:10 on GPU 3 plus GPU 2 borrowed from data.
``teams_scale`` repeats that server for more teams (benchmark).

Kueue counts GPU 2 here as one unit of data's quota, so that data can lend it at night
as the worked day tells. (With the ``dra`` backend the plan keeps a shared GPU out of
Kueue, a standalone claim Kueue cannot count: then data has no GPU quota, nothing is lent,
and the report shows data's nominal quota as missing.)
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.quotas import TEAM_LABEL

STEP = 300
# The plan labels each team namespace with the team; kube-state-metrics (with the label in
# its metricLabelsAllowlist) exports it sanitised as label_<name>.
NAMESPACE_TEAM_LABEL = "label_" + re.sub(r"[^A-Za-z0-9_]", "_", TEAM_LABEL)
# Kueue resource names as the plan's deviceClassMappings name them for this model.
WHOLE = "gpushare.io/rtx-pro-6000"
MIG = "gpushare.io/rtx-pro-6000-mig-1g.24gb"
DAY = 86400
GIB = 1024
GPU_MIB = 97887  # RTX PRO 6000 Server Edition framebuffer as DCGM reports it
MIG_MIB = 23 * GIB + 512
WAIT_BUCKETS = [2.0 ** i for i in range(14)]  # Kueue: ExponentialBuckets(1, 2, 14)

PROMETHEUS = "/usr/bin/prometheus"


def promtool_or_skip() -> str:
    """promtool's path; the test is skipped without the Debian package prometheus."""
    promtool = shutil.which("promtool")
    if not (os.access(PROMETHEUS, os.X_OK) and promtool):
        pytest.skip("needs the Debian package prometheus (/usr/bin/prometheus and promtool)")
    return promtool


def _hour(stamp: int) -> float:
    return (stamp % DAY) / 3600.0


def _weekday(stamp: int) -> int:
    return (stamp // DAY + 3) % 7  # 1970-01-01 was a Thursday; 5, 6 = Saturday, Sunday


def _jitter(stamp: int, salt: int) -> float:
    """Deterministic noise in [-1, 1]."""
    return math.sin(stamp / 977.0 + salt * 1.7) * 0.5 + math.sin(stamp / 131.0 + salt) * 0.5


class Series:
    """Collects samples and writes OpenMetrics text for promtool."""

    def __init__(self) -> None:
        self.families: Dict[str, Tuple[str, Dict[Tuple[Tuple[str, str], ...], List[Tuple[int, float]]]]] = {}

    def add(self, name: str, kind: str, labels: Dict[str, str], stamp: int, value: float) -> None:
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if kind == "histogram" and name.endswith(suffix):
                family = name[: -len(suffix)]
        entry = self.families.setdefault(family, (kind, {}))
        key = (("__name__", name),) + tuple(sorted(labels.items()))
        entry[1].setdefault(key, []).append((stamp, value))

    def write(self, path: Path) -> int:
        count = 0
        with path.open("w", encoding="utf-8") as handle:
            for family, (kind, series) in self.families.items():
                handle.write(f"# TYPE {family} {kind}\n")
                for key, samples in series.items():
                    name = key[0][1]
                    labels = ",".join(f'{k}="{v}"' for k, v in key[1:])
                    prefix = f"{name}{{{labels}}}" if labels else name
                    for stamp, value in samples:
                        text = "+Inf" if math.isinf(value) else repr(round(value, 6))
                        handle.write(f"{prefix} {text} {stamp}\n")
                        count += 1
            handle.write("# EOF\n")
        return count


def _dcgm(series: Series, stamp: int, host: str, gpu: int, uuid: str, busy: float, used_mib: float,
          total_mib: float, namespace: Optional[str], pod: Optional[str], mig: Optional[Tuple[str, int]] = None) -> None:
    labels = {"hostname": host, "gpu": str(gpu), "UUID": uuid, "modelName": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
              "device": f"nvidia{gpu}", "pci_bus_id": f"00000000:{0x17 + gpu:02X}:00.0", "DCGM_FI_DRIVER_VERSION": "580.95.05"}
    if mig:
        labels.update({"GPU_I_PROFILE": mig[0], "GPU_I_ID": str(mig[1])})
    if namespace:
        labels.update({"exported_namespace": namespace, "exported_pod": pod or "", "exported_container": "main"})
    series.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", labels, stamp, busy)
    series.add("DCGM_FI_DEV_GPU_UTIL", "gauge", labels, stamp, round(busy * 100))
    series.add("DCGM_FI_DEV_FB_USED", "gauge", labels, stamp, used_mib)
    series.add("DCGM_FI_DEV_FB_FREE", "gauge", labels, stamp, total_mib - used_mib)


def generate(start: int, end: int, teams_scale: int = 1) -> Series:
    """Two weeks (or any span) of the example cluster, ``teams_scale`` times over.

    Copy ``n`` > 0 renames the teams ``production-n``, ``data-n``, ``training-n`` and the
    host ``gpu1-n``.
    """
    series = Series()
    waits: Dict[str, List[float]] = {}
    for copy in range(teams_scale):
        suffix = "" if copy == 0 else f"-{copy}"
        host = f"gpu1{suffix}"
        prod, data, train = f"production{suffix}", f"data{suffix}", f"training{suffix}"
        uuids = [f"GPU-{copy:04x}{i:04x}-5c1e-4a2b-9f00-00000000000{i}" for i in range(4)]
        waits.update({prod: [], data: [], train: []})
        for stamp in range(start, end + 1, STEP):
            hour, weekend = _hour(stamp), _weekday(stamp) >= 5
            day_start = stamp - stamp % DAY
            for team in (prod, data, train):
                series.add("kube_namespace_labels", "gauge", {"namespace": team, NAMESPACE_TEAM_LABEL: team,
                                                              "job": "kube-state-metrics"}, stamp, 1)
            # GPU 0: production vLLM, always allocated, busy by day.
            day = 8 <= hour < 20
            busy0 = (0.45 if weekend else 0.75) if day else 0.05
            busy0 = min(1.0, max(0.0, busy0 + 0.08 * _jitter(stamp, 0)))
            _dcgm(series, stamp, host, 0, uuids[0], busy0, 78 * GIB, GPU_MIB, prod, "vllm-0")
            # GPU 1: four 1g.24gb MIG instances; embeddings, classifier, speech-to-text, fill (free).
            for gi, (pod, used, busy) in enumerate([("embeddings-0", 2.5 * GIB, 0.2), ("classifier-0", 6 * GIB, 0.3),
                                                    ("speech-to-text-0", 17 * GIB, 0.5), (None, 0.0, 0.0)]):
                factor = 1.0 if day else 0.2
                load = max(0.0, busy * factor + 0.05 * _jitter(stamp, gi + 1)) if pod else 0.0
                _dcgm(series, stamp, host, 1, uuids[1], round(load, 3), used, MIG_MIB, prod if pod else None,
                      pod, mig=("1g.24gb", 3 + gi))
            # GPU 2: notebooks 10:00-19:00 (data), borrowed by the fine-tune 19:00-05:10.
            notebooks = 10 <= hour < 19
            finetune = hour >= 19 or hour < 5 + 10 / 60.0
            if notebooks:
                _dcgm(series, stamp, host, 2, uuids[2], max(0.0, 0.03 + 0.03 * _jitter(stamp, 7)), 9 * GIB, GPU_MIB,
                      data, "notebook-alice")
            elif finetune:
                _dcgm(series, stamp, host, 2, uuids[2], 0.92, 80 * GIB, GPU_MIB, train, "finetune-worker-1")
            else:
                _dcgm(series, stamp, host, 2, uuids[2], 0.0, 0.0, GPU_MIB, None, None)
            # GPU 3: training's own GPU, used by the fine-tune only once it has two GPUs.
            if finetune:
                _dcgm(series, stamp, host, 3, uuids[3], 0.93, 80 * GIB, GPU_MIB, train, "finetune-worker-0")
            else:
                _dcgm(series, stamp, host, 3, uuids[3], 0.0, 0.0, GPU_MIB, None, None)
            # Kueue: usage and quota per ClusterQueue, pending workloads.
            usage = {
                prod: {WHOLE: 1, MIG: 3},
                data: {WHOLE: 1 if notebooks else 0},
                train: {WHOLE: 2 if finetune else 0},
            }
            nominal = {prod: {WHOLE: 1, MIG: 4}, data: {WHOLE: 1}, train: {WHOLE: 1}}
            for queue, resources in nominal.items():
                for resource, quota in resources.items():
                    labels = {"cohort": "gpushare", "cluster_queue": queue, "flavor": "rtx-pro-6000",
                              "resource": resource, "replica_role": "standalone"}
                    series.add("kueue_cluster_queue_nominal_quota", "gauge", labels, stamp, quota)
                    series.add("kueue_cluster_queue_borrowing_limit", "gauge", labels, stamp, math.inf)
                    series.add("kueue_cluster_queue_resource_usage", "gauge", labels, stamp,
                               usage[queue].get(resource, 0))
            waiting = 13 <= hour < 19
            for queue in (prod, data, train):
                for status in ("active", "inadmissible"):
                    value = 1 if (queue == train and waiting and status == "inadmissible") else 0
                    series.add("kueue_pending_workloads", "gauge",
                               {"cluster_queue": queue, "status": status, "replica_role": "standalone"}, stamp, value)
            # Admissions: the fine-tune at 19:00 after six hours, notebooks at 10:00 at once,
            # production restarts a model at 08:00 within seconds.
            if stamp == day_start + 19 * 3600:
                waits[train].append(6 * 3600.0)
            if stamp == day_start + 10 * 3600:
                waits[data].append(1.5)
            if stamp == day_start + 8 * 3600:
                waits[prod].append(12.0)
            for queue in (prod, data, train):
                _wait_histogram(series, queue, stamp, waits[queue])
    return series


def _wait_histogram(series: Series, queue: str, stamp: int, waits: Iterable[float]) -> None:
    waits = list(waits)
    base = {"cluster_queue": queue, "priority_class": "", "replica_role": "standalone"}
    for bound in WAIT_BUCKETS + [math.inf]:
        le = "+Inf" if math.isinf(bound) else f"{bound:g}"
        series.add("kueue_admission_wait_time_seconds_bucket", "histogram", dict(base, le=le), stamp,
                   sum(1 for w in waits if w <= bound))
    series.add("kueue_admission_wait_time_seconds_sum", "histogram", base, stamp, sum(waits))
    series.add("kueue_admission_wait_time_seconds_count", "histogram", base, stamp, len(waits))


# --- recording rules ------------------------------------------------------------------

RECORDED = re.compile(r"gpushare:[A-Za-z0-9_:]+")


MONITORING_RULES = Path("roles/monitoring/files/rules/gpushare.rules.yml")


def monitoring_rules(repo_root: Path) -> Path:
    """The monitoring role's rules file: the single definition of the recorded series."""
    path = repo_root / MONITORING_RULES
    if not path.is_file() or "record: gpushare:team_gpus_allocated" not in path.read_text(encoding="utf-8"):
        raise FileNotFoundError(f"{path}: the monitoring role's recording rules are missing")
    return path


def rule_groups(path: Path) -> List[dict]:
    documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    groups: List[dict] = []
    for document in documents:
        if "groups" in document:
            groups += document["groups"]
        elif "spec" in document and "groups" in (document["spec"] or {}):
            groups += document["spec"]["groups"]
    return groups


def layered_rule_files(path: Path, directory: Path, interval: str = "5m") -> List[Path]:
    """Recording rules split into files a rule depends only on earlier files of.

    ``promtool tsdb create-blocks-from rules`` evaluates rules against the running server
    and cannot see series it is backfilling in the same run, so rules that read other
    recorded series are backfilled in a later pass. Alerting rules are dropped.
    """
    rules = [dict(rule) for group in rule_groups(path) for rule in group.get("rules", []) if "record" in rule]
    names = {rule["record"] for rule in rules}
    done: set = set()
    layers: List[Path] = []
    while len(done) < len(rules):
        layer = [r for r in rules if r["record"] not in done
                 and all(dep in done or dep not in names or dep == r["record"]
                         for dep in RECORDED.findall(str(r["expr"])))]
        if not layer:
            raise ValueError(f"{path}: recording rules depend on each other in a cycle")
        # A rule may be split over several entries with one name; keep them together.
        target = directory / f"rules-layer{len(layers)}.yml"
        target.write_text(yaml.safe_dump({"groups": [{"name": f"layer{len(layers)}", "interval": interval,
                                                      "rules": layer}]}), encoding="utf-8")
        layers.append(target)
        done |= {r["record"] for r in layer}
    return layers


# --- a throw-away Prometheus ---------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalPrometheus:
    """/usr/bin/prometheus on 127.0.0.1 on a TSDB directory; stop() always kills it."""

    def __init__(self, binary: str, data_dir: Path, work_dir: Path) -> None:
        self.binary, self.data_dir, self.work_dir = binary, data_dir, work_dir
        self.process: Optional[subprocess.Popen] = None
        self.port = 0
        self.log = work_dir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        config = self.work_dir / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\nscrape_configs: []\n",
                          encoding="utf-8")
        self.port = free_port()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [self.binary, f"--config.file={config}", f"--storage.tsdb.path={self.data_dir}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=60d",
                 "--web.console.templates=/nonexistent", "--web.console.libraries=/nonexistent"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}: "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"prometheus not ready within {timeout} s: {self.log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _evaluate_layer(url: str, layer: Path, start: int, end: int, step: int) -> Series:
    """Each rule's expression as a range query at the rule's step: the samples Prometheus
    would have recorded, as ``promtool tsdb create-blocks-from rules`` computes them."""
    import json
    import urllib.parse

    series = Series()
    for group in yaml.safe_load(layer.read_text(encoding="utf-8"))["groups"]:
        for rule in group["rules"]:
            body = urllib.parse.urlencode({"query": rule["expr"], "start": start, "end": end, "step": step}).encode()
            with urllib.request.urlopen(f"{url}/api/v1/query_range", data=body, timeout=120) as response:
                result = json.load(response)["data"]["result"]
            for item in result:
                labels = {k: v for k, v in item["metric"].items() if k != "__name__"}
                labels.update(rule.get("labels") or {})
                for stamp, value in item["values"]:
                    number = float(value)
                    if not math.isnan(number):
                        series.add(rule["record"], "gauge", labels, int(stamp), number)
    return series


def build_tsdb(work_dir: Path, start: int, end: int, rules_file: Path, teams_scale: int = 1,
               promtool: str = "promtool", prometheus: str = "/usr/bin/prometheus",
               use_promtool_rules: bool = False, series: Optional[Series] = None) -> Dict[str, float]:
    """Raw series via openmetrics, then the recorded series layer by layer.

    By default each layer's rules are evaluated with range queries and written as one
    block; ``use_promtool_rules`` runs ``promtool tsdb create-blocks-from rules`` instead
    (same samples, but one block per rule and two hours: much slower to write and load).
    ``series``: raw series to store instead of the worked day's.
    Returns timings in seconds. Every Prometheus started here is stopped here.
    """
    timings: Dict[str, float] = {}
    data_dir = work_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    text = work_dir / "series.om"
    samples = (series if series is not None else generate(start, end, teams_scale)).write(text)
    timings["generate"] = time.monotonic() - began
    timings["samples"] = samples
    began = time.monotonic()
    _openmetrics_to_blocks(promtool, text, data_dir)
    timings["openmetrics"] = time.monotonic() - began
    began = time.monotonic()
    for layer in layered_rule_files(rules_file, work_dir, interval=f"{STEP}s"):
        server = LocalPrometheus(prometheus, data_dir, work_dir)
        server.start()
        out = work_dir / f"{layer.stem}-blocks"
        try:
            if use_promtool_rules:
                subprocess.run([promtool, "tsdb", "create-blocks-from", "rules", f"--url={server.url}",
                                f"--start={start}", f"--end={end + STEP}", f"--output-dir={out}", "--quiet",
                                str(layer)], check=True, capture_output=True)
            else:
                recorded = work_dir / f"{layer.stem}.om"
                _evaluate_layer(server.url, layer, start, end, STEP).write(recorded)
        finally:
            server.stop()
        if use_promtool_rules:
            for block in out.iterdir():
                shutil.move(str(block), str(data_dir / block.name))
        else:
            _openmetrics_to_blocks(promtool, recorded, data_dir)
    timings["rules"] = time.monotonic() - began
    return timings


def _openmetrics_to_blocks(promtool: str, text: Path, data_dir: Path) -> None:
    result = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=384h",
                             str(text), str(data_dir)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"promtool create-blocks-from openmetrics {text}: {result.stderr[-2000:]}")
    text.unlink()
