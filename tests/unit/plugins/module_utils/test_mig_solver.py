# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG planner: NVIDIA's own named layouts, rejections, needs, fill, and search completeness."""
from __future__ import annotations

import itertools

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.catalog import MODELS, mig_models
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.mig_solver import (
    MigLayoutError,
    layout_problems,
    place_profiles,
    plan_node_layout,
    slice_usage,
)

MIG_KEYS = [model.key for model in mig_models()]


def _plan_one(model, mig, host="gpu1", index=1):
    return plan_node_layout([{"index": index, "model": model, "use": "mig", "mig": mig}], "cfg", host=host)


def _slots(result, index=1):
    gpu = next(g for g in result["gpus"] if g["index"] == index)
    return [(i["profile"], i["start"]) for i in gpu["instances"]]


# --- NVIDIA's named configs ------------------------------------------------------------


def _applicable(config_default):
    """(config name, model key, mig-devices) for every config entry that applies to a catalog model."""
    cases = []
    for config, entries in config_default["mig-configs"].items():
        for entry in entries:
            devices = entry.get("mig-devices") or {}
            if not entry["mig-enabled"] or not devices:
                continue
            filters = entry.get("device-filter")
            if isinstance(filters, str):
                filters = [filters]
            for model in mig_models():
                if filters:
                    if not {f.upper() for f in filters} & {d.upper() for d in model.device_ids}:
                        continue
                    names = {p.name for p in model.profiles}
                    # A filtered entry names the model: every profile it uses must be in the catalog.
                    assert set(devices) <= names, (config, model.key, set(devices) - names)
                elif not set(devices) <= {p.name for p in model.profiles}:
                    continue
                cases.append((config, model.key, devices))
    return cases


def _load_named_configs(reference_dir, source):
    with open(reference_dir / "mig" / source, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    if document.get("kind") == "ConfigMap":  # the GPU Operator ships the same configs in a ConfigMap
        document = yaml.safe_load(next(iter(document["data"].values())))
    return document


@pytest.mark.parametrize("source", ["config-default.yaml", "gpu-operator-0400_configmap.yaml"])
def test_every_named_nvidia_config_is_accepted_as_explicit_layout(reference_dir, source):
    cases = _applicable(_load_named_configs(reference_dir, source))
    covered = {key for _c, key, _d in cases}
    assert covered == set(MIG_KEYS), set(MIG_KEYS) - covered
    assert len(cases) > 100
    for config, key, devices in cases:
        result = _plan_one(key, {"profiles": dict(devices)})
        slots = _slots(result)
        assert layout_problems(MODELS[key], slots) == [], (config, key)
        counted = {}
        for name, _start in slots:
            counted[name] = counted.get(name, 0) + 1
        assert counted == devices, (config, key)
        assert result["mig_parted"]["mig-configs"]["cfg"][0]["mig-devices"] == devices


# --- explicit layouts ------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, profiles, message",
    [
        ("H100-80GB", {"1g.10gb": 8}, "1g.10gb x8 requested but at most 7 fit on H100-80GB"),
        ("H100-80GB", {"1g.10gb+me": 2}, "at most 1 fit"),
        ("H100-80GB", {"3g.40gb": 2, "4g.40gb": 1}, "use 12 of 8 memory slices"),
        ("H100-80GB", {"7g.80gb": 1, "1g.10gb": 1}, "memory slices"),
        ("A100-40GB", {"2g.10gb": 3, "3g.20gb": 1}, "memory slices"),
        ("H100-80GB", {"1g.20gb": 3, "3g.40gb": 1}, "use 10 of 8 memory slices"),
        ("RTX-PRO-6000", {"2g.48gb": 1, "1g.24gb": 3}, "memory slices"),
        ("A30", {"2g.12gb": 2, "1g.6gb": 1}, "memory slices"),
        ("H100-80GB", {"3g.20gb": 1}, "profile '3g.20gb' does not exist on H100-80GB"),
        ("H100-80GB", {"1g.10gb": -1}, "non-negative integer"),
        ("H100-80GB", {"1g.10gb": 0}, "asks for no instance"),
    ],
)
def test_explicit_layouts_rejected(model, profiles, message):
    with pytest.raises(MigLayoutError, match=message) as raised:
        _plan_one(model, {"profiles": profiles})
    assert "host gpu1, GPU 1 (%s), field mig.profiles" % model in str(raised.value)


def test_explicit_layout_placed_exactly_and_created_largest_first():
    result = _plan_one("H100-80GB", {"profiles": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}})
    instances = result["gpus"][0]["instances"]
    assert [i["profile"] for i in instances] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    assert layout_problems(MODELS["H100-80GB"], _slots(result)) == []
    assert all(i["name"] is None for i in instances)


def test_four_g_with_three_g_warns_about_driver():
    result = _plan_one("A100-80GB", {"profiles": {"4g.40gb": 1, "3g.40gb": 1}})
    assert _slots(result) == [("4g.40gb", 0), ("3g.40gb", 4)]
    assert any("R510" in w for w in result["warnings"])


# --- needs -----------------------------------------------------------------------------


def test_design_example_on_rtx_pro_6000_with_fill():
    result = _plan_one("RTX-PRO-6000", {"instances": [
        {"name": "embeddings", "memory": "10GiB"},
        {"name": "classifier", "memory": "10GiB"},
        {"name": "speech-to-text", "memory": "20GiB"},
    ]})
    instances = result["gpus"][0]["instances"]
    assert [(i["profile"], i["name"]) for i in instances] == [
        ("1g.24gb", "embeddings"), ("1g.24gb", "classifier"), ("1g.24gb", "speech-to-text"), ("1g.24gb", None)]
    assert sorted(i["start"] for i in instances) == [0, 3, 6, 9]
    assert result["warnings"] == []


def test_fill_false_leaves_free_slices():
    result = _plan_one("RTX-PRO-6000", {"fill": False, "instances": [{"name": "a", "memory": "10Gi"}]})
    assert _slots(result) == [("1g.24gb", 0)]


def test_usable_memory_not_the_name_decides():
    # 10 GiB does not fit 1g.10gb (9.75 GiB usable) on H100: the 2-memory-slice 1g is chosen.
    result = _plan_one("H100-80GB", {"fill": False, "instances": [{"name": "a", "memory": "10Gi"}]})
    assert _slots(result) == [("1g.20gb", 0)]
    result = _plan_one("H100-80GB", {"fill": False, "instances": [{"name": "a", "memory": "9Gi"}]})
    assert _slots(result) == [("1g.10gb", 0)]


def test_compute_need_picks_a_larger_profile():
    result = _plan_one("H100-80GB", {"fill": False, "instances": [{"name": "a", "memory": "5Gi", "compute": 2}]})
    assert _slots(result) == [("2g.20gb", 0)]
    result = _plan_one("H100-80GB", {"fill": False, "instances": [{"name": "a", "memory": "5Gi", "compute": "3g"}]})
    assert _slots(result) == [("3g.40gb", 0)]


def test_media_need_picks_the_variant():
    result = _plan_one("H100-80GB", {"fill": False, "instances": [{"name": "video", "memory": "5Gi", "media": "me"}]})
    assert _slots(result) == [("1g.10gb+me", 0)]


def test_larger_profile_tried_when_the_smallest_cannot_be_placed_together():
    # RTX PRO 6000: 1g.24gb+me.all exists once per GPU, so the second need for all media
    # engines is moved up to 2g.48gb+me.all, and the planner says so.
    result = _plan_one("RTX-PRO-6000", {"fill": False, "instances": [
        {"name": "v1", "memory": "10Gi", "media": "me.all"}, {"name": "v2", "memory": "10Gi", "media": "me.all"}]})
    assert sorted(_slots(result)) == [("1g.24gb+me.all", 6), ("2g.48gb+me.all", 0)]
    assert any("'v2' gets 2g.48gb+me.all instead of 1g.24gb+me.all" in w for w in result["warnings"])
    assert any("+me.all instance takes all media engines" in w for w in result["warnings"])


def test_four_needs_of_19_gib_take_the_two_slice_1g():
    four = [{"name": "n%d" % i, "memory": "19Gi"} for i in range(4)]
    result = _plan_one("H100-80GB", {"fill": False, "instances": four})
    assert sorted(_slots(result)) == [("1g.20gb", 0), ("1g.20gb", 2), ("1g.20gb", 4), ("1g.20gb", 6)]


def test_max_count_of_media_variant_without_a_larger_one_fails():
    with pytest.raises(MigLayoutError, match="at most 1 1g.10gb\\+me per GPU"):
        _plan_one("H100-80GB", {"instances": [{"name": "v1", "memory": "1Gi", "media": "me"},
                                              {"name": "v2", "memory": "1Gi", "media": "me"}]})


def test_upgrade_when_max_count_blocks_the_smallest():
    # A30: 1g.6gb max 4; five 5 GiB needs cannot fit 4 units at all.
    with pytest.raises(MigLayoutError, match="A30"):
        _plan_one("A30", {"instances": [{"name": "n%d" % i, "memory": "5Gi"} for i in range(5)]})
    # A100-40GB: 3 needs of 9 GiB -> 1g.10gb (2-slice, max 4) x3; with a 19 GiB need a 3g.20gb.
    result = _plan_one("A100-40GB", {"fill": False, "instances": [
        {"name": "big", "memory": "19Gi"}, {"name": "a", "memory": "9Gi"}, {"name": "b", "memory": "9Gi"}]})
    assert sorted(p for p, _s in _slots(result)) == ["1g.10gb", "1g.10gb", "3g.20gb"]


def test_search_upgrades_a_need_to_find_a_layout():
    # H100: 2g.20gb max 3 at starts 0,2,4. Needs: 4 x (compute 2). Smallest is 2g.20gb x4 (over max);
    # one need must move to 3g.40gb? 3 x 2g (6 units) + 3g (4 units) exceeds 8 -> impossible; the
    # planner must say so, naming the need.
    with pytest.raises(MigLayoutError, match="for 'c3' does not fit"):
        _plan_one("H100-80GB", {"instances": [{"name": "c%d" % i, "memory": "1Gi", "compute": 2} for i in range(4)]})
    # Two needs of 2 compute and one of 3: 2g@0, 2g@2, 3g@4.
    result = _plan_one("H100-80GB", {"fill": False, "instances": [
        {"name": "a", "memory": "1Gi", "compute": 2}, {"name": "b", "memory": "1Gi", "compute": 2},
        {"name": "c", "memory": "1Gi", "compute": 3}]})
    assert sorted(_slots(result)) == [("2g.20gb", 0), ("2g.20gb", 2), ("3g.40gb", 4)]


def test_slot_seven_is_used_by_the_fill():
    # 3g.40gb at 0 leaves units 4-7; unit 7 is reachable only by the 2-slice 1g at 6.
    result = _plan_one("H100-80GB", {"instances": [{"name": "big", "memory": "38Gi"}]})
    assert sorted(_slots(result)) == [("1g.10gb", 4), ("1g.10gb", 5), ("1g.20gb", 6), ("3g.40gb", 0)]


def test_design_error_message_names_profiles_and_need():
    with pytest.raises(MigLayoutError) as raised:
        _plan_one("H100-80GB", {"instances": [{"name": "a", "memory": "39Gi"}, {"name": "b", "memory": "39Gi"},
                                              {"name": "speech", "memory": "9Gi"}]})
    message = str(raised.value)
    assert message.startswith("host gpu1, GPU 1 (H100-80GB), field mig.instances: ")
    assert "3g.40gb for 'a', 3g.40gb for 'b' take 8 of 8 memory slices" in message
    assert "1g.10gb (9.75 GiB usable) for 'speech' does not fit" in message


def test_name_rounding_is_explained():
    with pytest.raises(MigLayoutError, match="3g.40gb holds 39.5 GiB, less than its name suggests"):
        _plan_one("H100-80GB", {"instances": [{"name": "x", "memory": "40Gi"}, {"name": "y", "memory": "40Gi"}]})


def test_unconfirmed_geometry_warns():
    result = _plan_one("H200", {"profiles": {"3g.71gb": 2}})
    assert any("3g.71gb on H200 rests on unconfirmed geometry (placements)" in w for w in result["warnings"])
    assert result["warnings"][0].startswith("host gpu1, GPU 1 (H200): ")


# --- bad input, collected ------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry, field, message",
    [
        ({"model": "H999"}, "model", "unknown GPU model 'H999'"),
        ({"model": "L40S", "use": "mig", "mig": {"profiles": {"1g.10gb": 1}}}, "use", "L40S does not support MIG"),
        ({"model": "H100-80GB", "use": "mig", "mig": {"instances": [{"name": "x", "memory": "100Gi"}]}},
         "mig.instances[0].memory", "more than the largest profile"),
        ({"model": "H100-80GB", "use": "mig", "mig": {"instances": [{"name": "x", "memory": "ten"}]}},
         "mig.instances[0].memory", "malformed memory quantity 'ten'"),
        ({"model": "H100-80GB", "use": "mig", "mig": {"profiles": {"1g.5gb": 1}}}, "mig.profiles[1g.5gb]",
         "does not exist on H100-80GB"),
        ({"model": "H100-80GB", "use": "mig"}, "mig", "needs mig.instances or mig.profiles"),
        ({"model": "H100-80GB", "use": "mig", "mig": {"profiles": {"1g.10gb": 1}, "instances": []}}, "mig",
         "exactly one of"),
        ({"model": "H100-80GB", "use": "mig", "mig": {"profiles": {"1g.10gb": 1}, "fill": True}}, "mig.fill",
         "instances only"),
        ({"model": "H100-80GB", "use": "mig",
          "mig": {"instances": [{"name": "a", "memory": "1Gi"}, {"name": "a", "memory": "1Gi"}]}},
         "mig.instances[1].name", "duplicate instance name"),
        ({"model": "H100-80GB", "use": "mig", "mig": {"instances": [{"name": "a", "memory": "1Gi", "media": "x"}]}},
         "mig.instances[0].media", "unknown media variant"),
        ({"model": "H100-80GB", "use": "mig", "mig": {"instances": [{"name": "a", "memory": "1Gi", "compute": 9}]}},
         "mig.instances[0].compute", "needs 9 compute slices"),
        ({"model": "H100-80GB", "use": "sliced"}, "use", "must be one of whole, mig, shared"),
        ({"model": "H100-80GB", "use": "whole", "mig": {"profiles": {"7g.80gb": 1}}}, "mig", "only applies to use: mig"),
        ({"model": "H100-80GB", "use": "mig", "mig": {"profiles": {1: 1, "1g.10gb": 1}}}, "mig", "must be plain data"),
    ],
)
def test_bad_input_names_gpu_and_field(entry, field, message):
    with pytest.raises(MigLayoutError) as raised:
        plan_node_layout([dict(entry, index=3)], "cfg", host="gpu7")
    text = str(raised.value)
    assert text.startswith("host gpu7, GPU 3")
    assert "field %s: " % field in text
    assert message in text


def test_errors_are_collected_for_the_node():
    with pytest.raises(MigLayoutError) as raised:
        plan_node_layout([
            {"index": 0, "model": "H999"},
            {"index": 0, "model": "H100-80GB"},
            {"index": 2, "model": "L40S", "use": "mig", "mig": {"profiles": {"1g.10gb": 1}}},
            {"count": 8, "model": "H100-80GB"},
        ], "cfg", host="gpu1")
    text = str(raised.value)
    assert "GPU 0, field model: unknown GPU model" in text
    assert "GPU 0, field index: duplicate index" in text
    assert "GPU 2 (L40S), field use" in text
    assert "expand 'count' shorthand" in text


# --- node output / mig-parted --------------------------------------------------------------


def test_mixed_node_mig_parted_config():
    result = plan_node_layout([
        {"index": 0, "model": "H100-80GB", "use": "whole"},
        {"index": 1, "model": "NVIDIA A100-SXM4-80GB", "use": "mig", "mig": {"profiles": {"7g.80gb": 1}}},
        {"index": 2, "model": "L40S", "use": "shared"},
    ], "gpu1-layout", host="gpu1")
    assert [g["model"] for g in result["gpus"]] == ["H100-80GB", "A100-80GB", "L40S"]
    specs = result["mig_parted"]["mig-configs"]["gpu1-layout"]
    assert result["mig_parted"]["version"] == "v1"
    assert specs == [
        {"device-filter": list(MODELS["H100-80GB"].device_ids), "devices": [0], "mig-enabled": False},
        {"device-filter": list(MODELS["A100-80GB"].device_ids), "devices": [1], "mig-enabled": True,
         "mig-devices": {"7g.80gb": 1}},
    ]  # L40S has no MIG: no spec, so mig-parted leaves it alone


def test_node_without_mig_gpus_has_no_config():
    result = plan_node_layout([{"index": 0, "model": "L4", "use": "whole"}], "x")
    assert result["mig_parted"] == {"version": "v1", "mig-configs": {}}
    assert result["gpus"] == [{"index": 0, "model": "L4", "mig_enabled": False, "instances": []}]


# --- properties --------------------------------------------------------------------------

SMALL_MODELS = ["H100-80GB", "A30", "RTX-PRO-6000", "A100-40GB", "GB200"]


def _brute_force(model, needs, candidates):
    """Minimal number of upgrades over all choices and all placements; None if none fits."""
    best = None
    for ranks in itertools.product(*[range(len(c)) for c in candidates]):
        if best is not None and sum(ranks) >= best:
            continue
        profiles = [candidates[i][r] for i, r in enumerate(ranks)]
        for starts in itertools.product(*[p.starts for p in profiles]):
            if not layout_problems(model, list(zip([p.name for p in profiles], starts))):
                best = sum(ranks)
                break
    return best


def _candidates(model, need_mib, compute, media=""):
    return sorted((p for p in model.profiles
                   if p.media == media and p.memory_mib >= need_mib and p.compute_slices >= compute),
                  key=lambda p: (p.memory_mib, p.compute_slices, p.size, p.name))


# Media variants matter: on real geometry only their max count of 1 ever forces a larger profile.
need_strategy = st.tuples(st.integers(min_value=1, max_value=60), st.integers(min_value=1, max_value=4),
                          st.sampled_from(["", "", "", "+me", "+me.all"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL_MODELS), st.lists(need_strategy, min_size=1, max_size=4), st.booleans())
def test_planner_finds_a_layout_whenever_brute_force_does(key, raw_needs, fill):
    _check_against_brute_force(key, raw_needs, fill)


# Where larger choices are really needed: several needs for the one-per-GPU media variants.
media_need_strategy = st.tuples(st.integers(min_value=1, max_value=60), st.integers(min_value=1, max_value=2),
                                st.sampled_from(["+me.all", "+me.all", "+me", "-me", ""]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(media_need_strategy, min_size=2, max_size=4), st.booleans())
def test_upgrades_agree_with_brute_force_on_media_variants(raw_needs, fill):
    _check_against_brute_force("RTX-PRO-6000", raw_needs, fill)


def _check_against_brute_force(key, raw_needs, fill):
    model = MODELS[key]
    largest = max(p.memory_mib for p in model.profiles)
    needs = [(min(gib * 1024 // 2, largest), min(compute, model.compute_slices), media)
             for gib, compute, media in raw_needs]
    candidates = [_candidates(model, mib, compute, media) for mib, compute, media in needs]
    if any(not c for c in candidates):
        return
    expected = _brute_force(model, needs, candidates)
    request = {"fill": fill, "instances": [{"name": "n%d" % i, "memory": mib, "compute": c, "media": media}
                                           for i, (mib, c, media) in enumerate(needs)]}
    if expected is None:
        with pytest.raises(MigLayoutError):
            _plan_one(key, request)
        return
    result = _plan_one(key, request)
    slots = _slots(result)
    assert layout_problems(model, slots) == []
    named = {i["name"]: i for i in result["gpus"][0]["instances"] if i["name"]}
    upgrades = 0
    for i, (mib, compute, _media) in enumerate(needs):
        instance = named["n%d" % i]
        assert instance["memory_mib"] >= mib
        profile = model.profile(instance["profile"])
        assert profile.compute_slices >= compute
        upgrades += [p.name for p in candidates[i]].index(profile.name)
    assert upgrades == expected  # smallest choices first, larger only when needed
    if fill:
        # Nothing more of the smallest profiles fits after fill.
        for extra in [p for p in model.profiles if p.media == "" and p.compute_slices == 1]:
            for start in extra.starts:
                assert layout_problems(model, slots + [(extra.name, start)]), (extra.name, start)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MIG_KEYS), st.data())
def test_explicit_layouts_agree_with_brute_force(key, data):
    model = MODELS[key]
    names = [p.name for p in model.profiles]
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=4))
    wanted = {}
    for name in chosen:
        wanted[name] = wanted.get(name, 0) + 1
    profiles = [model.profile(n) for n in chosen]
    exists = any(not layout_problems(model, list(zip(chosen, starts)))
                 for starts in itertools.product(*[p.starts for p in profiles]))
    placed = place_profiles(key, tuple(sorted(wanted.items())))
    assert (placed is not None) is exists
    if placed is not None:
        assert layout_problems(model, list(placed)) == []
        result = _plan_one(key, {"profiles": wanted})
        assert sorted(_slots(result)) == sorted(placed)
    else:
        with pytest.raises(MigLayoutError, match="field mig.profiles"):
            _plan_one(key, {"profiles": wanted})


def test_layout_problems_detects_each_rule():
    model = MODELS["H100-80GB"]
    assert layout_problems(model, [("3g.40gb", 2)]) == ["3g.40gb cannot start at 2 (allowed starts: 0, 4)"]
    assert layout_problems(model, [("3g.40gb", 0), ("1g.10gb", 3)]) == ["1g.10gb at 3 overlaps another instance"]
    assert layout_problems(model, [("1g.10gb+me", 0), ("1g.10gb+me", 1)]) == ["1g.10gb+me x2 exceeds its max count 1"]


# --- trade-offs: slices a layout leaves that no instance can use ------------------------


def test_needs_in_gib_strand_compute_and_the_warning_says_how_gb_would_fit():
    # H100-80GB: 1g.10gb holds 9.75 GiB, so a 10 GiB need takes the 2-memory-slice 1g.20gb;
    # with the fill, every memory slice is taken while 5 of 7 compute slices work.
    result = _plan_one("H100-80GB", {"instances": [{"name": "a", "memory": "10GiB"}, {"name": "b", "memory": "10GiB"}]})
    assert sorted(_slots(result)) == [("1g.10gb", 4), ("1g.10gb", 5), ("1g.20gb", 0), ("1g.20gb", 2), ("1g.20gb", 6)]
    assert result["warnings"] == [
        "host gpu1, GPU 1 (H100-80GB): 2 of 7 compute slices stay idle: the instances (3 x 1g.20gb, 2 x 1g.10gb) "
        "take all 8 memory slices but only 5 compute slices, so no further instance fits; 'a', 'b' ask for 10 GiB "
        "each, more than 1g.10gb holds (9.75 GiB usable), so each takes 1g.20gb (2 memory slices for 1 compute "
        "slice); a need of at most 9.75 GiB, such as memory: 10GB (decimal gigabytes), would take 1g.10gb"]
    # The advice holds: the same needs in decimal gigabytes use every slice.
    advised = _plan_one("H100-80GB", {"instances": [{"name": "a", "memory": "10GB"}, {"name": "b", "memory": "10GB"}]})
    assert advised["warnings"] == []
    usage = slice_usage(MODELS["H100-80GB"], _slots(advised))
    assert (usage["compute_used"], usage["memory_used"]) == (7, 8)


def test_compute_needs_strand_memory_and_the_warning_names_them():
    result = _plan_one("H100-80GB", {"instances": [{"name": "big", "memory": "10GB", "compute": 4},
                                                   {"name": "mid", "memory": "10GB", "compute": 2},
                                                   {"name": "small", "memory": "5GB"}]})
    assert sorted(_slots(result)) == [("1g.10gb", 6), ("2g.20gb", 4), ("4g.40gb", 0)]
    assert result["warnings"] == [
        "host gpu1, GPU 1 (H100-80GB): 1 of 8 memory slices stay unused (about 9.75 GiB): the instances (4g.40gb, "
        "2g.20gb, 1g.10gb) take all 7 compute slices but only 7 memory slices, so no further instance fits; 'big' "
        "asks for 4 compute slices and takes 4g.40gb; 'mid' asks for 2 compute slices and takes 2g.20gb"]


def test_explicit_profiles_that_strand_compute_warn_too():
    result = _plan_one("A100-40GB", {"profiles": {"1g.10gb": 4}})
    assert result["warnings"] == [
        "host gpu1, GPU 1 (A100-40GB): 3 of 7 compute slices stay idle: the instances (4 x 1g.10gb) take all 8 "
        "memory slices but only 4 compute slices, so no further instance fits"]


def test_room_left_on_purpose_is_not_stranded():
    # fill: false keeps the rest of the GPU free for later: nothing is stranded.
    result = _plan_one("H100-80GB", {"instances": [{"name": "a", "memory": "10GiB"}], "fill": False})
    assert result["warnings"] == []
    usage = slice_usage(MODELS["H100-80GB"], _slots(result))
    assert usage == {"compute_used": 1, "compute_total": 7, "memory_used": 2, "memory_total": 8,
                     "stranded_compute": 0, "stranded_memory": 0}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MIG_KEYS), st.data())
def test_stranded_slices_agree_with_trying_every_further_instance(key, data):
    model = MODELS[key]
    chosen = data.draw(st.lists(st.sampled_from([p.name for p in model.profiles]), min_size=1, max_size=5))
    wanted = {}
    for name in chosen:
        wanted[name] = wanted.get(name, 0) + 1
    placed = place_profiles(key, tuple(sorted(wanted.items())))
    if placed is None:
        return
    usage = slice_usage(model, list(placed))
    assert usage["compute_used"] == sum(model.profile(n).compute_slices for n in chosen)
    assert usage["memory_used"] == sum(model.profile(n).memory_slices for n in chosen)
    # Oracle: a slice is stranded exactly when no profile at any start can be added validly.
    room = any(not layout_problems(model, list(placed) + [(p.name, start)]) for p in model.profiles for start in p.starts)
    if room:
        assert (usage["stranded_compute"], usage["stranded_memory"]) == (0, 0)
    else:
        assert usage["stranded_compute"] == model.compute_slices - usage["compute_used"]
        assert usage["stranded_memory"] == model.memory_slices - usage["memory_used"]


def test_the_worked_example_of_docs_mig_md_is_what_the_planner_says():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[4] / "docs" / "mig.md").read_text(encoding="utf-8")
    quoted = re.search(r"```\n(host hgx1, GPU 4 \(H100-80GB\): 2 of 7 compute.*?)```", text, re.S).group(1)
    result = _plan_one("H100-80GB", {"instances": [{"name": "embeddings", "memory": "10GiB"},
                                                   {"name": "guard", "memory": "10GiB"}]}, host="hgx1", index=4)
    assert result["warnings"] == [" ".join(quoted.split())]
