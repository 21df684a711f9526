# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad data: every problem names the host, the file and line or the GPU; nothing is dropped silently."""

from __future__ import annotations

import pytest

from assess_worlds import APP_HEADER, GPU_HEADER, L40S, RTX, TEAMS, World
from ansible_collections.gpushare.cluster.plugins.module_utils.assess import analysis, files, samples
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.samples import AssessDataError


def _world():
    world = World({"gpu1": [(0, L40S[0], L40S[1])]}, days=1, interval=300)
    world.daily("gpu1", 0, "trainer", 100, 2, 20, 10, 90, weekdays_only=False)
    return world


def _run(root, hosts=("gpu1",), today=None):
    problems = []
    found = files.read_samples(str(root), list(hosts), problems)
    return analysis.assess(found, today or {"gpu1": [{"index": 0, "team": "training"}]}, TEAMS, {}, problems=problems)


def _edit(path, change):
    lines = path.read_text().splitlines()
    change(lines)
    path.write_text("\n".join(lines) + "\n")


def test_parse_timestamp_reads_nvidia_smi_clock():
    assert samples.parse_timestamp("2026/03/02 08:00:00.500") - samples.parse_timestamp("2026/03/02 00:00:00") \
        == 8 * 3600 + 0.5
    with pytest.raises(ValueError, match="not a timestamp"):
        samples.parse_timestamp("2026/13/02 08:00:00")


def test_a_truncated_or_garbled_line_is_named_and_skipped(tmp_path):
    root = _world().write(tmp_path)
    gpus = root / "gpu1" / "gpus-00.csv"
    _edit(gpus, lambda lines: lines.__setitem__(5, lines[5][:25]))
    _edit(gpus, lambda lines: lines.__setitem__(29, lines[29].replace(", 90,", ", lots,")))
    result = _run(root)
    assert any(p.startswith("host gpu1, file gpus-00.csv, line 6: expected 7 fields, got 2") for p in result["problems"])
    assert any(p.startswith("host gpu1, file gpus-00.csv, line 30: unreadable value") for p in result["problems"])
    assert result["gpus"][0]["figures"]["samples"] == 24 * 12 - 2


def test_a_file_that_is_not_nvidia_smi_csv_fails_naming_file_and_line(tmp_path):
    root = _world().write(tmp_path)
    _edit(root / "gpu1" / "apps-00.csv", lambda lines: lines.__setitem__(0, "pid, memory"))
    with pytest.raises(AssessDataError, match=r"host gpu1, file apps-00.csv, line 1: header 'pid, memory' is not "):
        _run(root)
    (root / "gpu1" / "apps-00.csv").write_text(APP_HEADER + "\nrubbish\nmore rubbish\n")
    with pytest.raises(AssessDataError, match=r"host gpu1, file apps-00.csv: no readable sample in 2 line\(s\); "
                                              r"first problem: host gpu1, file apps-00.csv, line 2"):
        _run(root)


def test_a_host_without_samples_is_reported_and_keeps_nothing_invented(tmp_path):
    root = _world().write(tmp_path)
    today = {"gpu1": [{"index": 0, "team": "training"}], "gpu2": [{"index": 0, "model": "L4", "team": "data"}]}
    result = _run(root, hosts=("gpu1", "gpu2"), today=today)
    assert "host gpu2: no samples (no file under the samples directory); its GPUs keep their inventory entries" \
        in result["problems"]
    assert [g["host"] for g in result["gpus"]] == ["gpu1"]
    with pytest.raises(AssessDataError, match="no host has samples"):
        _run(root, hosts=("gpu2",))


def test_gaps_and_clock_jumps_are_named(tmp_path):
    root = _world().write(tmp_path)
    gpus = root / "gpu1" / "gpus-00.csv"
    # 04:05 to 06:00 missing, and a clock set back 10 minutes (5 before the sample before it) near the end.
    _edit(gpus, lambda lines: lines.__delitem__(slice(50, 74)))
    _edit(gpus, lambda lines: lines.__setitem__(-3, lines[-3].replace(lines[-3][11:16], "%02d:%02d" % (
        int(lines[-3][11:13]), int(lines[-3][14:16]) - 10))))
    problems = _run(root)["problems"]
    assert any(p.startswith("host gpu1, GPU 0: gap of 2.1 h without samples, 2026-03-02 04:00 to 2026-03-02 06:05")
               for p in problems), problems
    assert any(p.startswith("host gpu1, GPU 0: clock went back 300 s at 2026-03-02 23:35 (after 2026-03-02 23:40)") for p in problems), problems


def test_rotated_files_are_read_in_order_of_their_samples(tmp_path):
    world = _world()
    world.days = 2
    root = world.write(tmp_path)
    # Names that sort the wrong way round: the first sample decides.
    (root / "gpu1" / "gpus-00.csv").rename(root / "gpu1" / "gpus-zz.csv")
    result = _run(root)
    assert not [p for p in result["problems"] if "clock" in p]
    assert result["gpus"][0]["figures"]["samples"] == 2 * 24 * 12


def test_an_unknown_gpu_name_fails_unless_the_inventory_names_the_model(tmp_path):
    root = _world().write(tmp_path)
    for path in (root / "gpu1").glob("gpus*.csv"):
        path.write_text(path.read_text().replace("NVIDIA L40S", "NVIDIA Mystery 9000"))
    with pytest.raises(AssessDataError, match=r"host gpu1, file gpus-00.csv:2, GPU 0: unknown GPU name "
                                              r"'NVIDIA Mystery 9000'; set its model in gpushare_gpus"):
        _run(root)
    result = _run(root, today={"gpu1": [{"index": 0, "model": "L40S", "team": "training"}]})
    assert result["gpus"][0]["model"] == "L40S"
    assert any("'NVIDIA Mystery 9000', which the catalog does not know; using the inventory's model L40S" in p
               for p in result["problems"])


def test_a_card_replaced_during_the_window_is_named(tmp_path):
    world = World({"gpu1": [(0, RTX[0], RTX[1])]}, days=1, interval=300)
    world.steady("gpu1", 0, "serve", 1, 80, 70)
    world.replaced[("gpu1", 0)] = 12 * 3600
    result = _run(world.write(tmp_path), today={"gpu1": [{"index": 0, "team": "production"}]})
    (card,) = result["gpus"]
    assert card["uuids"] == [world.uuid("gpu1", 0), world.uuid("gpu1", 0, 12 * 3600)]
    assert card["uuid"] == card["uuids"][-1]
    assert any(p.startswith("host gpu1, GPU 0: card replaced during the window (%s" % card["uuids"][0])
               for p in result["problems"])
    assert card["figures"]["samples"] == 24 * 12


def test_processes_on_a_gpu_no_file_lists_are_named(tmp_path):
    root = _world().write(tmp_path)
    (root / "gpu1" / "apps-99.csv").write_text(APP_HEADER + "\n2026/03/02 03:00:00.000, GPU-ffff, 7, 100, x\n")
    problems = _run(root)["problems"]
    assert "host gpu1: 1 process sample(s) on GPU-ffff, a GPU no gpus*.csv file lists; not counted" in problems


def test_a_user_mapped_to_an_unknown_team_fails(tmp_path):
    root = _world().write(tmp_path)
    problems = []
    found = files.read_samples(str(root), ["gpu1"], problems)
    with pytest.raises(AssessDataError, match="user 'trainer' maps to team 'research', which is not in gpushare_teams"):
        analysis.assess(found, {}, TEAMS, {"trainer": "research"})


def test_a_card_used_only_by_unknown_users_without_a_team_fails_naming_them(tmp_path):
    root = _world().write(tmp_path)
    with pytest.raises(AssessDataError, match=r"host gpu1, GPU 0: no team today and used only by trainer; map the "
                                              r"users in gpushare_assess_users"):
        _run(root, today={"gpu1": [{"index": 0}]})


def test_headers_are_nvidia_smis():
    assert samples.GPU_HEADER == GPU_HEADER and samples.APP_HEADER == APP_HEADER


def _gpu_lines(order_by_sample):
    """gpus*.csv lines: one sample a minute, the cards of each sample in the order given."""
    lines = [GPU_HEADER]
    for minute, cards in enumerate(order_by_sample):
        lines.extend("2026/03/02 08:%02d:00.%03d, GPU-%d, %d, NVIDIA L40S, %d, %d, 46068"
                     % (minute, card, card, card, 10 * card + minute, 1000 * card + minute) for card in cards)
    return lines


def _read_both_ways(monkeypatch, gpu_lines, app_lines):
    """(column by column, line by line) readings of one host's files."""
    fast = samples.read_host("gpu1", [samples.SampleFile("gpus.csv", gpu_lines)],
                             [samples.SampleFile("apps.csv", app_lines)])
    with monkeypatch.context() as patch:
        patch.setattr(samples, "_read_gpu_columns", lambda *_args: False)
        patch.setattr(samples, "_read_app_columns", lambda *_args: False)
        careful = samples.read_host("gpu1", [samples.SampleFile("gpus.csv", gpu_lines)],
                                    [samples.SampleFile("apps.csv", app_lines)])
    return fast, careful


@pytest.mark.parametrize("order", [
    [[0, 1, 2]] * 4,  # every sample lists the cards in one order: a card's rows are a slice
    [[0, 1, 2], [2, 0, 1], [0, 1], [1, 2, 0]],  # another order, a card missing from one sample
    [[1]] * 3,
], ids=["same-order", "varying-order", "one-card"])
def test_files_read_column_by_column_as_line_by_line(monkeypatch, order):
    gpu_lines = _gpu_lines(order)
    app_lines = [APP_HEADER] + ["2026/03/02 08:%02d:00.000, GPU-%d, %d, %d, user%d" % (minute, card, 100 + card, 500 + minute, card)
                                for minute, cards in enumerate(order) for card in cards]
    # The same text with an appended file's header and a blank line, as `cat` of two files gives:
    # read line by line, so that a problem's line number is right.
    appended = gpu_lines[:4] + ["", GPU_HEADER] + gpu_lines[4:]
    for lines, by_columns in ((gpu_lines, True), (appended, False)):
        assert samples._read_gpu_columns(samples.HostSamples("gpu1"), samples.SampleFile("gpus.csv", lines)) \
            is by_columns
        fast, careful = _read_both_ways(monkeypatch, lines, app_lines)
        assert fast.gpus == careful.gpus and fast.processes == careful.processes
        assert sorted(len(series.times) for series in fast.gpus.values()) == \
            sorted(sum(card in cards for cards in order) for card in {c for cards in order for c in cards})
