"""`rldse simulate` / `rldse check-replay` end to end on a shipped trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rldse.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRACE = str(ROOT / "traces" / "dqn_cartpole_per.parquet")
SPEC = str(ROOT / "examples" / "dgx1_like.yaml")


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_prints_summary_with_bottleneck(capsys):
    code, out, _ = _run(["simulate", TRACE, "--system", SPEC, "--set",
                         "workload.env_steps=5000"], capsys)
    assert code == 0
    assert "bottleneck:" in out and "steps/J" in out and "gpu" in out


def test_same_seed_gives_byte_identical_json(capsys):
    argv = ["simulate", TRACE, "--system", SPEC, "--set", "workload.env_steps=5000",
            "--seed", "7", "--json"]
    _, first, _ = _run(argv, capsys)
    _, second, _ = _run(argv, capsys)
    assert first == second
    assert json.loads(first)["seed"] == 7


def test_timeline_is_chrome_trace_format(tmp_path, capsys):
    path = tmp_path / "timeline.json"
    code, out, _ = _run(["simulate", TRACE, "--system", SPEC, "--set",
                         "workload.env_steps=2000", "--timeline", str(path),
                         "--timeline-window", "0:1000"], capsys)  # every operation
    assert code == 0 and str(path) in out
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert {"cpu", "gpu0"} <= names  # the DGX-1's first V100
    complete = [e for e in events if e["ph"] == "X"]
    assert complete
    for e in complete:  # the fields Perfetto needs for a complete event
        assert {"name", "ph", "pid", "tid", "ts", "dur"} <= e.keys()
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    phases = {e["name"] for e in complete}
    assert {"learn", "replay_sample", "env_step"} <= phases


def test_validate_prints_measured_and_simulated(capsys):
    code, out, _ = _run(["check-replay", TRACE], capsys)
    assert code == 0
    assert "TOTAL (wall)" in out and "measured_s" in out


@pytest.mark.parametrize("sets,needle", [
    (["gpu.count=0"], "placement.learn: 'gpu' but the system has no gpu"),
    (["workload.actorz=3"], "workload.actorz: not a knob of dqn traces; did you mean 'actors'?"),
    (["gpu.mem_bw_gbs=-1"], "--set gpu.mem_bw_gbs: -1 is out of range"),
    (["placement.replay=disk"], "placement.replay"),
])
def test_bad_spec_is_one_line(capsys, sets, needle):
    code, _, err = _run(["simulate", TRACE, "--system", SPEC, *sum((["--set", s] for s in sets),
                                                                  [])], capsys)
    assert code == 2, err
    assert needle in err and err.count("\n") == 1


def test_bad_yaml_file(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("cpu: {preset: host\nworkload: [")
    code, _, err = _run(["simulate", TRACE, "--system", str(bad)], capsys)
    assert code == 2 and "not valid YAML" in err and err.count("\n") == 1


def test_unused_part_is_named(capsys):
    code, out, _ = _run(["simulate", TRACE, "--system", SPEC, "--set", "gpu.count=2", "--set",
                         "workload.env_steps=2000"], capsys)
    assert code == 0 and "note: gpu1 did no work" in out
    # the whole DGX-1 with one learner: its seven other V100s in one line
    code, out, _ = _run(["simulate", TRACE, "--system", SPEC, "--set",
                         "workload.env_steps=2000"], capsys)
    idle = [line for line in out.splitlines() if "did no work" in line]
    assert code == 0 and len(idle) == 1 and idle[0].startswith(
        "note: 7 devices did no work (gpu1, gpu2,")
