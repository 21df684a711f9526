"""Merging arguments into MicroK8s args files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import microk8s_args as m

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "k8s" / "microk8s"


def _read(name):
    return (FIXTURES / name).read_text()


def test_merge_into_existing_feature_gates_keeps_one_line():
    text = _read("kube-apiserver")
    merged = m.merge_args(text, feature_gates={"DRAExtendedResource": True, "DRAConsumableCapacity": True})
    gate_lines = [line for line in merged.splitlines() if line.startswith("--feature-gates")]
    assert gate_lines == [
        "--feature-gates=ListFromCacheSnapshot=false,DRAConsumableCapacity=true,DRAExtendedResource=true"
    ]
    # Everything else is untouched, in the same place.
    before = [line for line in text.splitlines() if not line.startswith("--feature-gates")]
    after = [line for line in merged.splitlines() if not line.startswith("--feature-gates")]
    assert before == after
    assert text.splitlines().index("--feature-gates=ListFromCacheSnapshot=false") == merged.splitlines().index(gate_lines[0])


def test_kubelet_quoted_gates_and_new_args():
    text = _read("kubelet")
    merged = m.merge_args(text, {"max-pods": 250, "feature-gates": "DRAExtendedResource=true"},
                          {"DevicePlugins": True})
    args = m.get_args(merged)
    assert args["max-pods"] == "250"
    assert m.parse_gates(args["feature-gates"]) == {"DevicePlugins": True, "DRAExtendedResource": True}
    assert sum(1 for line in merged.splitlines() if line.startswith("--feature-gates")) == 1
    assert merged.endswith("--max-pods=250\n")


def test_unchanged_quoted_gates_line_is_kept_as_is():
    text = _read("kubelet")
    assert m.merge_args(text, feature_gates={"DevicePlugins": True}) == text


def test_our_gate_wins_and_duplicate_lines_fold():
    text = "--a=1\n--feature-gates=X=true\n--b\n--feature-gates=Y=false\n--a=2\n"
    merged = m.merge_args(text, {"a": "3"}, {"X": False})
    assert merged == "--a=3\n--feature-gates=X=false,Y=false\n--b\n"


def test_bare_flag_and_remove():
    merged = m.merge_args("--x=1\n# comment\n--y=2\n", {"z": None}, remove=["y"])
    assert merged == "--x=1\n# comment\n--z\n"


def test_no_gates_no_line():
    assert "--feature-gates" not in m.merge_args("--x=1\n", {"y": 2})


@pytest.mark.parametrize("gates,match", [
    ({"bad-name": True}, "feature gate 'bad-name'"),
    ({"Good": "yes"}, "feature gate 'Good'='yes'"),
])
def test_bad_gates(gates, match):
    with pytest.raises(m.ArgsError, match=match):
        m.merge_args("", feature_gates=gates, service="kubelet")


def test_bad_existing_line_and_bad_arg_name():
    with pytest.raises(m.ArgsError, match="is not of the form --name=value"):
        m.merge_args("-x 1\n", {"a": 1})
    with pytest.raises(m.ArgsError, match="kube-apiserver: '--v' is not an argument name"):
        m.merge_args("", {"--v": 1}, service="kube-apiserver")
    with pytest.raises(m.ArgsError, match="existing --feature-gates"):
        m.merge_args("--feature-gates=A=maybe\n", {"x": 1})


names = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).filter(lambda n: n != "feature-gates")
gate_names = st.from_regex(r"[A-Z][A-Za-z0-9]{0,10}", fullmatch=True)
values = st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9/=.,_${}-]{0,12}", fullmatch=True))


@given(st.dictionaries(names, values, max_size=6), st.dictionaries(gate_names, st.booleans(), max_size=5),
       st.dictionaries(names, values, max_size=6), st.dictionaries(gate_names, st.booleans(), max_size=5))
def test_merge_is_idempotent_and_never_duplicates(base_args, base_gates, args, gates):
    base = m.merge_args("# header\n", base_args, base_gates)
    once = m.merge_args(base, args, gates)
    assert m.merge_args(once, args, gates) == once
    flags = [m.parse_line(line)[0] for line in once.splitlines() if m.parse_line(line)]
    assert len(flags) == len(set(flags))
    final = m.get_args(once)
    for name, value in args.items():
        assert final[name] == value
    if gates or base_gates:
        assert m.parse_gates(final["feature-gates"]) == {**base_gates, **gates}


def test_enable_cdi_containerd_17_template():
    text = _read("containerd-template.toml")
    out = m.enable_cdi(text)
    assert m.enable_cdi(out) == out
    lines = out.splitlines()
    header = lines.index('[plugins."io.containerd.grpc.v1.cri"]')
    assert lines[header + 1] == "  enable_cdi = true"
    assert lines[header + 2] == '  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]'
    assert out.count("enable_cdi") == 1
    # The snap's placeholders survive.
    assert 'default_runtime_name = "${RUNTIME}"' in out


def test_enable_cdi_matches_reference_keys(reference_dir):
    ref = (reference_dir / "k8s" / "kubeadm" / "containerd-1.7-config.toml").read_text()
    out = m.enable_cdi(_read("containerd-template.toml"))
    assert "enable_cdi = true" in ref and "enable_cdi = true" in out
    assert 'cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]' in ref


def test_enable_cdi_containerd_2_and_missing_section():
    v3 = "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n    enable_cdi = false\n[other]\nx = 1\n"
    out = m.enable_cdi(v3)
    assert "    enable_cdi = true" in out and "enable_cdi = false" not in out and out.endswith("[other]\nx = 1\n")
    with pytest.raises(m.ArgsError, match="no .* section to enable CDI in"):
        m.enable_cdi("version = 2\n")


CONTAINERD_ENV = (FIXTURES / "containerd-env").read_text()
PROXY = {"HTTPS_PROXY": "http://proxy.internal:3128", "NO_PROXY": "localhost,10.1.0.0/16,.internal"}


def test_merge_env_appends_and_keeps_comments_and_ulimits():
    merged = m.merge_env(CONTAINERD_ENV, PROXY)
    assert merged.startswith(CONTAINERD_ENV)
    assert merged.endswith("HTTPS_PROXY=http://proxy.internal:3128\nNO_PROXY=localhost,10.1.0.0/16,.internal\n")
    # The commented example is left alone (it is not an assignment).
    assert "#    HTTPS_PROXY=http://squid.internal:3128\n" in merged
    assert m.merge_env(merged, PROXY) == merged


def test_merge_env_replaces_in_place_and_folds_duplicates():
    text = "export HTTPS_PROXY=http://old:1\nulimit -n 65536 || true\nHTTPS_PROXY=http://older:2\nOTHER=x\n"
    merged = m.merge_env(text, {"HTTPS_PROXY": "http://new:3", "http_proxy": "http://a b"})
    assert merged == "HTTPS_PROXY=http://new:3\nulimit -n 65536 || true\nOTHER=x\nhttp_proxy='http://a b'\n"
    assert m.merge_env("", {}) == ""
    assert m.merge_env(CONTAINERD_ENV, {}) == CONTAINERD_ENV


@pytest.mark.parametrize("env,match", [
    ({"1BAD": "x"}, "containerd-env: '1BAD' is not an environment variable name"),
    ({"A": "x\ny"}, "containerd-env: the value of A must not contain a newline"),
    ({"A": "it's"}, "single quote"),
])
def test_merge_env_bad_input(env, match):
    with pytest.raises(m.ArgsError, match=match):
        m.merge_env("", env)


SNAP_LIST = """Name      Version   Rev   Tracking       Publisher   Notes
core20    20240705  2379  latest/stable  canonical✓  base
microk8s  v1.35.4   8512  1.35/stable    canonical✓  classic,held
"""


def test_snap_list_reads_the_snap_row_with_its_notes():
    assert m.snap_list_entry(SNAP_LIST) == {
        "version": "v1.35.4", "revision": "8512", "channel": "1.35/stable", "publisher": "canonical✓",
        "notes": ["classic", "held"], "held": True}
    assert m.snap_list_entry(SNAP_LIST, "core20")["notes"] == ["base"]


def test_snap_list_side_loaded_not_held_and_missing():
    side_loaded = "Name      Version  Rev   Tracking  Publisher  Notes\nmicrok8s  v1.35.4  x1    -         -          classic\n"
    entry = m.snap_list_entry(side_loaded)
    assert entry["channel"] == "-" and entry["held"] is False and entry["revision"] == "x1"
    plain = "Name Version Rev Tracking Publisher Notes\nmicrok8s v1.34.4 8000 1.34/stable canonical -\n"
    assert m.snap_list_entry(plain)["notes"] == []
    assert m.snap_list_entry("error: no matching snaps installed") == {}
    assert m.snap_list_entry("") == {}
