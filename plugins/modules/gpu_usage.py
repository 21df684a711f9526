#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_usage
short_description: Report GPU use per team from Prometheus and propose quota changes
version_added: 0.1.0
description:
  - Reads what Prometheus recorded over a window (default 14 days) and returns, per team,
    GPU-hours allocated and busy, efficiency, peak and p95 of concurrently allocated GPUs,
    time spent borrowing and lending and how long workloads waited in the team's queue;
    per GPU the hours it was idle while allocated; cluster-wide the busy share and queueing.
  - Queries the recording rules of the C(gpushare.cluster.monitoring) role
    (C(gpushare:team_gpus_allocated) and siblings) with range queries, and the raw Kueue
    quota and wait-time series and DCGM MIG memory series with instant queries.
  - Series Prometheus does not have (no Kueue metrics, no DCGM pod attribution) are listed in
    RV(figures.missing) and their figures are V(null), never zero.
  - From the figures and the inventory it proposes concrete inventory changes (see RV(proposals)).
  - Runs on the controller and only reads; it never changes anything.
author:
  - gpushare.cluster maintainers (@gpushare)
attributes:
  check_mode:
    description: Can run in check mode and return the same report; it never changes anything.
    support: full
  diff_mode:
    description: Nothing changes, so there is no diff.
    support: none
options:
  url:
    description: Base URL of the Prometheus server, for example V(https://prometheus.example.com).
    type: str
    required: true
  bearer_token:
    description: Bearer token sent in the C(Authorization) header. Mutually exclusive with O(username).
    type: str
  username:
    description: User for HTTP basic authentication.
    type: str
  password:
    description: Password for HTTP basic authentication.
    type: str
  ca_path:
    description: PEM file of CA certificates used to verify the server instead of the system store.
    type: path
  validate_certs:
    description: Verify the server's TLS certificate. Turn off only for test servers.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for each answer of Prometheus.
    type: float
    default: 30
  window:
    description: How far back to look, as a Prometheus duration (V(14d), V(36h), V(1d12h)).
    type: str
    default: 14d
  step:
    description:
      - Resolution of the range queries, as a duration. Default is chosen from the window
        (at most 5000 points per series, V(5m) for 14 days).
      - Must not be longer than O(window).
    type: str
  end:
    description: End of the window as a Unix timestamp or RFC 3339 time. Default is now.
    type: str
  teams:
    description:
      - The inventory's teams (C(gpushare_teams)); entries are team dicts with C(name) or plain names.
      - Every team listed here must have data unless O(missing_teams=warn).
    type: list
    elements: raw
    default: []
  nodes:
    description:
      - Inventory GPUs per host (host name to its C(gpushare_gpus) list), used for the proposals.
      - A host or GPU listed here with no exporter series is reported in RV(figures.missing)
        (at the level of the node and of the GPU) and its figures, and the exporter-based
        figures of its team and of the cluster, are V(null), never zero. The exporter names
        a node by its Node name (C(node_name) in O(plan), else the short host name in lower case).
    type: dict
    default: {}
  plan:
    description:
      - The C(gpushare_plan) fact (or plan.json), used to name the MIG instance behind a slice.
    type: dict
  cluster_queues:
    description: Team name to ClusterQueue name where they differ.
    type: dict
    default: {}
  gpu_resource_regex:
    description:
      - Regular expression (RE2, anchored) of the Kueue resource names whose quota counts as GPU devices.
      - Core resources (C(cpu), C(memory), C(ephemeral-storage), C(pods)) and time-sliced
        replicas (names ending in C(.shared)) are always left out.
    type: str
    default: '.*'
  missing_teams:
    description:
      - What to do with a team of O(teams) that has no data at all.
      - V(fail) stops with a message naming every such team; V(warn) reports them in RV(figures.teams_without_data).
    type: str
    choices: [fail, warn]
    default: fail
  thresholds:
    description:
      - "Overrides of the advice thresholds, for example C({shared_below: 0.05})."
      - Keys are V(shared_below), V(shared_target), V(min_allocated_hours), V(mig_memory_below),
        V(mig_headroom), V(waiting_share), V(wait_p95_seconds), V(saturated_waiting_share), V(donor_efficiency_below).
    type: dict
    default: {}
  include_series:
    description: Return the allocated and busy time series per team in RV(figures.teams).
    type: bool
    default: true
  render_html:
    description: Also return RV(html), a page with the usage section (tables, inline SVG plots, proposals).
    type: bool
    default: false
notes:
  - Needs the monitoring role's recording rules to have run over the window; see docs/usage.md.
"""

EXAMPLES = r"""
- name: Read two weeks of GPU use and propose quota changes
  gpushare.cluster.gpu_usage:
    url: https://prometheus.example.com
    bearer_token: "{{ vault_prometheus_token }}"
    teams: "{{ gpushare_teams }}"
    nodes: "{{ dict(groups['workers'] | zip(groups['workers'] | map('extract', hostvars, 'gpushare_gpus'))) }}"
  register: usage
  delegate_to: localhost
  run_once: true

- name: One day at 10 minute resolution, teams without data only warned about
  gpushare.cluster.gpu_usage:
    url: http://127.0.0.1:9090
    window: 1d
    step: 10m
    teams: [production, data, training]
    missing_teams: warn
"""

RETURN = r"""
figures:
  description: Usage figures. Figures whose series are missing are null.
  returned: success
  type: dict
  contains:
    window:
      description: C(start), C(end) (Unix seconds), C(step_seconds), C(hours), C(samples).
      type: dict
      returned: success
    teams:
      description:
        - Team name to C(gpu_hours_allocated), C(gpu_hours_busy), C(efficiency), C(allocated_peak),
          C(allocated_p95), C(idle_allocated_gpu_hours), C(borrowing_hours), C(borrowed_gpu_hours),
          C(borrowed_peak), C(lending_hours), C(lent_gpu_hours), C(pending_hours), C(pending_peak),
          C(wait_p95_seconds), C(wait_mean_seconds), C(admitted_workloads), C(nominal_quota),
          C(borrowing_limit), C(borrowing_unlimited), C(borrowing_limit_reached), C(coverage),
          C(has_data) and C(series) (allocated and busy over time).
        - C(borrowing_limits) lists the limit per flavor and resource (C(flavor), C(resource), C(limit),
          C(unlimited), C(borrowed_peak), C(reached)), as Kueue enforces it; C(borrowing_limit) is the
          limit the team reached, else the tightest one. A limit is never summed over resources.
        - C(gpus_without_data) lists the team's GPUs with no exporter series (then the exporter-based
          figures are null).
      type: dict
      returned: success
    gpus:
      description:
        - Per GPU or MIG instance C(host), C(gpu), C(uuid), C(mig_profile), C(allocated_hours),
          C(busy_gpu_hours), C(idle_allocated_hours), C(busy_ratio_when_allocated),
          C(memory_used_peak_mib), C(memory_total_mib) (used plus free of one sample of one pod),
          C(has_data) (false for an inventory GPU with no series; its figures are null).
      type: list
      elements: dict
      returned: success
    cluster:
      description: C(gpus), GPU-hours capacity, allocated and busy, C(busy_share), C(saturated_hours), queueing.
      type: dict
      returned: success
    missing:
      description:
        - Series Prometheus did not have, with the figure they feed and where they come from.
        - Entries with C(figure=gpu_data) name a C(host) (and C(node)) and its C(gpus) without
          series; C(figure=team_gpu_data) a C(team) and its C(gpus) without series.
      type: list
      elements: dict
      returned: success
    teams_without_data:
      description: Teams with no data in any series.
      type: list
      elements: str
      returned: success
proposals:
  description:
    - Inventory changes with C(kind), C(team), C(where) (inventory file), C(variable),
      C(current), C(proposed), C(reason) and the C(figures) behind them.
  returned: success
  type: list
  elements: dict
html:
  description: The usage section as a standalone HTML page (inline SVG, no network).
  returned: when O(render_html=true)
  type: str
summary:
  description: One line per team and per proposal, for printing.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.usage.prometheus import (
    PrometheusClient,
    PrometheusError,
)
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.advice import (
    AdviceThresholds,
    propose,
    summary_lines,
)
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.report_html import render_page
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.figures import (
    RANGE_SERIES,
    choose_step,
    parse_duration,
)
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.pipeline import measure, parse_end, team_names


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            bearer_token=dict(type="str", no_log=True),
            username=dict(type="str"),
            password=dict(type="str", no_log=True),
            ca_path=dict(type="path"),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="float", default=30),
            window=dict(type="str", default="14d"),
            step=dict(type="str"),
            end=dict(type="str"),
            teams=dict(type="list", elements="raw", default=[]),
            nodes=dict(type="dict", default={}),
            plan=dict(type="dict"),
            cluster_queues=dict(type="dict", default={}),
            gpu_resource_regex=dict(type="str", default=".*"),
            missing_teams=dict(type="str", choices=["fail", "warn"], default="fail"),
            thresholds=dict(type="dict", default={}),
            include_series=dict(type="bool", default=True),
            render_html=dict(type="bool", default=False),
        ),
        mutually_exclusive=[("bearer_token", "username")],
        required_by={"password": "username"},
        supports_check_mode=True,
    )
    params = module.params
    try:
        thresholds = AdviceThresholds(**params["thresholds"])
    except TypeError as exc:
        module.fail_json(msg=f"thresholds: {exc}")
    try:
        teams = team_names(params["teams"])
        window_seconds = parse_duration(params["window"], "window")
        step = choose_step(window_seconds, parse_duration(params["step"], "step") if params["step"] else None)
        end = parse_end(params["end"])
        client = PrometheusClient(
            params["url"], bearer_token=params["bearer_token"], username=params["username"],
            password=params["password"], ca_path=params["ca_path"],
            validate_certs=params["validate_certs"], timeout=params["timeout"],
        )
        figures = measure(client, teams, window_seconds, step, end, params["gpu_resource_regex"],
                          params["cluster_queues"], params["nodes"], params["plan"])
    except (PrometheusError, ValueError) as exc:
        module.fail_json(msg=str(exc))

    without_data = [t for t in teams if t in figures["teams_without_data"]]
    if without_data and params["missing_teams"] == "fail":
        series = ", ".join(sorted(set(RANGE_SERIES.values())))
        module.fail_json(
            msg=(f"teams: no data for {', '.join(without_data)} at {client.base_url} over the last "
                 f"{params['window']} (no team label value in {series}); check the team's namespace "
                 "label and ClusterQueue name, or set missing_teams: warn"),
            figures=figures,
        )
    try:
        team_entries = [t if isinstance(t, dict) else {"name": t} for t in params["teams"]]
        proposals = propose(figures, team_entries, params["nodes"], plan=params["plan"], thresholds=thresholds)
    except ValueError as exc:
        module.fail_json(msg=str(exc), figures=figures)
    for team in without_data:
        module.warn(f"team {team}: no usage data in the window")
    result = dict(changed=False, proposals=proposals, summary=summary_lines(figures, proposals))
    if params["render_html"]:
        result["html"] = render_page(figures, proposals)
    if not params["include_series"]:
        for team in figures["teams"].values():
            team.pop("series", None)
    module.exit_json(figures=figures, **result)


if __name__ == "__main__":
    main()
