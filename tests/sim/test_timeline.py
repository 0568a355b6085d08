"""The Chrome-trace timeline: worker tracks beside device lanes, args, act events, the
window, and an atomic file (rldse.sim.timeline, --timeline / --timeline-window)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rldse.cli import main
from rldse.errors import RldseError
from rldse.sim import simulate
from rldse.sim.timeline import COARSE_STEPS, TimelineStream, parse_window, tile_starts
from rldse.system import load_spec, parse_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "dgx1_like.yaml"
DQN = ROOT / "traces" / "dqn_cartpole_per.parquet"
ACTOR_LEARNER = ROOT / "traces" / "actor_learner_cartpole_2.parquet"
DQN_UNIFORM = ROOT / "traces" / "dqn_cartpole_uniform.parquet"
EVERYTHING = (0.0, 1e9)  # a window over the whole run: every operation one by one


def _timeline(tmp_path, trace_path, sets, window=None) -> tuple[list[dict], object]:
    trace = load_trace(trace_path)
    system = resolve(load_spec(SPEC, sets), trace)
    path = tmp_path / "t.json"
    result = simulate(trace, system, timeline=path, timeline_window=window)
    return json.loads(path.read_text())["traceEvents"], result


def _tracks(events) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["name"] == "thread_name"}
    return procs, threads


def _worker_events(events) -> dict[str, list[dict]]:
    procs, threads = _tracks(events)
    (wpid,) = [p for p, n in procs.items() if n == "workers"]
    out: dict[str, list[dict]] = {}
    for e in events:
        if e["ph"] == "X" and e["pid"] == wpid:
            out.setdefault(threads[(wpid, e["tid"])], []).append(e)
    return out


def test_offpolicy_has_a_named_track_per_worker_with_args_and_act(tmp_path):
    events, _ = _timeline(tmp_path, DQN, {"workload.env_steps": 2000, "workload.actors": 2},
                          window=EVERYTHING)
    by_worker = _worker_events(events)
    assert {"actor 0", "actor 1", "learner"} <= by_worker.keys()
    assert "act" in {e["name"] for e in by_worker["actor 0"]}
    learn = [e for e in by_worker["learner"] if e["name"] == "learn"]
    assert learn and all(e["args"]["phase"] == "learn" and e["args"]["items"] >= 1
                         and e["args"]["device"] for e in learn)
    # every worker event is a copy of one on a device lane (same name, start, length)
    procs, _ = _tracks(events)
    on_lanes = {(e["name"], e["ts"], e["dur"]) for e in events
                if e["ph"] == "X" and procs[e["pid"]] != "workers"}
    assert all((e["name"], e["ts"], e["dur"]) in on_lanes
               for evs in by_worker.values() for e in evs)


def test_central_inference_books_act_batches_on_the_server_track(tmp_path):
    events, _ = _timeline(tmp_path, ACTOR_LEARNER, {"workload.env_steps": 4000,
                                                    "workload.inference": "central"})
    by_worker = _worker_events(events)
    servers = [w for w in by_worker if w.startswith("inference server")]
    assert servers
    acts = [e for w in servers for e in by_worker[w] if e["name"] == "act"]
    assert acts and all(e["args"]["batch"] >= 1 for e in acts)
    assert any(w.startswith("actor ") for w in by_worker)
    assert "learn" in {e["name"] for e in by_worker["learner"]}


@pytest.mark.parametrize("learner", ["sync", "async"])
def test_window_keeps_only_overlapping_events_and_leaves_the_result(tmp_path, learner):
    """A window's events are the per-operation events of the whole run that overlap it."""
    sets = {"workload.env_steps": 2000, "workload.learner": learner, "workload.actors": 2}
    full, plain = _timeline(tmp_path, DQN, sets, window=EVERYTHING)
    t_end = max(e["ts"] + e["dur"] for e in full if e["ph"] == "X") / 1e6
    lo, hi = 0.25 * t_end, 0.5 * t_end
    part, windowed = _timeline(tmp_path, DQN, sets, window=(lo, hi))
    kept = [e for e in part if e["ph"] == "X"]
    expect = [e for e in full if e["ph"] == "X"
              and e["ts"] / 1e6 < hi and (e["ts"] + e["dur"]) / 1e6 >= lo]
    assert 0 < len(kept) == len(expect) < len([e for e in full if e["ph"] == "X"])
    key = lambda e: json.dumps(e, sort_keys=True)  # noqa: E731
    assert sorted(map(key, kept)) == sorted(map(key, expect))
    assert windowed.model_dump() == plain.model_dump()


def _by_name(events) -> dict[str, set[str]]:
    return {w: {e["name"] for e in evs} for w, evs in _worker_events(events).items()}


@pytest.mark.parametrize("learner", ["sync", "async"])
def test_merged_offpolicy_run_is_coarse_without_a_window(tmp_path, learner):
    """Without a window each actor's rollouts cover exactly its env steps, and the busy
    seconds and updates the coarse events carry are those of the per-operation events."""
    sets = {"workload.env_steps": 20_000, "workload.learner": learner,
            "workload.actors": 2}
    coarse, result = _timeline(tmp_path, DQN_UNIFORM, sets)
    fine, _ = _timeline(tmp_path, DQN_UNIFORM, sets, window=EVERYTHING)
    names = _by_name(coarse)
    assert names["actor 0"] == names["actor 1"] == {"rollout"}
    assert names["learner"] == {"updates"}
    assert {"env_step", "act"} <= _by_name(fine)["actor 0"]
    detail, blocks = _worker_events(fine), _worker_events(coarse)
    assert sum(len(v) for v in blocks.values()) * 20 < sum(len(v) for v in detail.values())
    total = 0
    for actor in ("actor 0", "actor 1"):
        steps = sum(e["args"]["steps"] for e in blocks[actor])
        assert steps == sum(e["args"]["items"] for e in detail[actor]
                            if e["name"] == "env_step") > COARSE_STEPS
        total += steps
        for phase in ("env_step", "act"):
            busy = sum(e["args"][f"{phase}_us"] for e in blocks[actor])
            parts = [e["dur"] for e in detail[actor] if e["name"] == phase]
            assert abs(busy - sum(parts)) <= 1e-3 * (len(parts) + len(blocks[actor]))
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in blocks[actor])
        assert all(a[1] <= b[0] + 1e-3 for a, b in zip(spans, spans[1:], strict=False))
    assert total == result.env_steps
    assert sum(e["args"]["updates"] for e in blocks["learner"]) == result.updates
    learn = sum(e["args"]["learn_us"] for e in blocks["learner"])
    parts = [e["dur"] for e in detail["learner"] if e["name"] == "learn"]
    assert learn == pytest.approx(sum(parts), abs=1e-3 * len(parts))


@pytest.mark.parametrize(("text", "expected"), [
    ("1.5", "expected START:END"), ("a:2", "expected START:END"),
    ("1:2:3", "expected START:END"), ("2:1", "END must be greater than START"),
    ("1:1", "END must be greater than START"), ("-1:2", "finite seconds >= 0"),
    ("0:inf", "finite seconds >= 0"),
])
def test_bad_window_is_one_line_naming_the_flag(text, expected):
    with pytest.raises(RldseError, match=expected) as err:
        parse_window(text)
    assert str(err.value).startswith(f"--timeline-window {text}") and "\n" not in str(err.value)


def test_cli_window_flag(tmp_path, capsys):
    base = ["simulate", str(DQN), "--system", str(SPEC), "--set", "workload.env_steps=2000"]
    assert main(base + ["--timeline-window", "0:1"]) == 2
    assert "give --timeline FILE.json too" in capsys.readouterr().err
    path = tmp_path / "w.json"
    assert main(base + ["--timeline", str(path), "--timeline-window", "3:1"]) == 2
    assert "END must be greater than START" in capsys.readouterr().err
    assert not path.exists()
    assert main(base + ["--timeline", str(path), "--timeline-window", "0:0.01"]) == 0
    assert json.loads(path.read_text())["traceEvents"]


def test_failed_run_leaves_no_file(tmp_path, monkeypatch):
    trace = load_trace(DQN)
    system = resolve(load_spec(SPEC, {"workload.env_steps": 2000}), trace)

    def fail(self, outcome):
        raise RuntimeError("boom")

    monkeypatch.setattr("rldse.sim.machine.Machine.result", fail)
    with pytest.raises(RuntimeError):
        simulate(trace, system, timeline=tmp_path / "t.json")
    assert list(tmp_path.iterdir()) == []


def test_stream_tags_device_bookings_and_escapes_names(tmp_path):
    stream = TimelineStream(tmp_path / "t.json", ["cpu"])
    stream.tag = ('actor "0" 100%', {"items": 3})
    stream.append(("cpu", 2, "env_%step", 1e-6, 2e-6))
    stream.tag = (None, None)
    stream.append(("cpu", -1, "load", 0.0, 1e-6))
    doc = json.loads(stream.close().read_text())
    x = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(x) == 3 and {e["name"] for e in x} == {"env_%step", "load"}
    (copy,) = [e for e in x if "device" in e.get("args", {})]
    assert copy["args"] == {"device": "cpu", "lane": 2, "phase": "env_%step", "items": 3}
    assert copy["ts"] == 1.0 and copy["dur"] == 2.0
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"}
    assert names == {"cpu", "workers", 'actor "0" 100%'}


def test_window_must_be_valid_in_the_api(tmp_path):
    trace = load_trace(DQN)
    with pytest.raises(RldseError, match="give a timeline file"):
        simulate(trace, load_spec(SPEC, {"workload.env_steps": 2000}), timeline_window=(0, 1))
    with pytest.raises(RldseError, match="END must be greater"):
        TimelineStream(tmp_path / "t.json", ["cpu"], window_s=(2.0, 1.0))
    assert list(tmp_path.iterdir()) == []


def _x_events(path) -> list[tuple]:
    """Complete events as sorted tuples (order in the file is not part of the format)."""
    doc = json.loads(Path(path).read_text())
    return sorted((e["pid"], e["tid"], e["name"], e["ts"], e["dur"],
                   json.dumps(e.get("args", {}), sort_keys=True))
                  for e in doc["traceEvents"] if e["ph"] == "X")


def test_extend_and_columns_write_what_append_writes_to_the_ns(tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    lanes = rng.integers(-1, 12, n)
    starts = rng.random(n) * 10.0 ** rng.integers(-6, 4, n)  # 1 ns to hours
    durs = rng.random(n) * 10.0 ** rng.integers(-9, 2, n)
    who = rng.integers(0, 3, n)
    batch = rng.integers(0, 100_000, n)
    names = ["actor 0", 'actor "1"', "learner"]
    by_append = TimelineStream(tmp_path / "a.json", ["cpu", "gpu"], buffer_events=7)
    for k in range(n):
        by_append.append(("gpu", int(lanes[k]), "act", float(starts[k]), float(durs[k]),
                          names[who[k]], {"batch": int(batch[k])}))
    by_extend = TimelineStream(tmp_path / "e.json", ["cpu", "gpu"], buffer_events=64)
    by_extend.extend("gpu", "act", lanes, starts, durs, names, who, {"batch": batch})
    by_columns = TimelineStream(tmp_path / "c.json", ["cpu", "gpu"], buffer_events=50)
    col = by_columns.columns("gpu", "act", names, "batch")
    for k in range(n):
        col.lane.append(int(lanes[k]))
        col.start_s.append(float(starts[k]))
        col.dur_s.append(float(durs[k]))
        col.who.append(int(who[k]))
        col.value.append(int(batch[k]))
        by_columns.spill(col)
        assert len(col.start_s) < 50
    events = [_x_events(s.close()) for s in (by_append, by_extend, by_columns)]
    assert events[0] == events[1] == events[2] and len(events[0]) == 2 * n
    # times are the seconds rounded to integer ns, written as microseconds
    expect = sorted((round(s * 1e9) / 1e3, round(d * 1e9) / 1e3, max(int(lane), 0), int(b))
                    for s, d, lane, b in zip(starts, durs, lanes, batch, strict=True))
    got = sorted((e[3], e[4], json.loads(e[5])["lane"], json.loads(e[5])["batch"])
                 for e in events[0] if e[0] == 3)
    assert got == expect


def test_untagged_events_and_a_window_in_bulk(tmp_path):
    starts, durs = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.5, 0.5, 1.5, 0.5])
    stream = TimelineStream(tmp_path / "t.json", ["cpu"], window_s=(1.6, 2.5))
    stream.extend("cpu", "load", 0, starts, durs)
    doc = json.loads(stream.close().read_text())
    (kept,) = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert (kept["ts"], kept["dur"], "args" in kept) == (2e6, 1.5e6, False)


CASES = {
    "offpolicy sync": (DQN_UNIFORM, {"workload.learner": "sync", "workload.env_steps": 3000}),
    "offpolicy async": (DQN_UNIFORM, {"workload.learner": "async",
                                      "workload.env_steps": 3000}),
    "actor-learner local": (ACTOR_LEARNER, {"workload.inference": "local",
                                            "workload.env_steps": 4000}),
    "actor-learner central": (ACTOR_LEARNER, {"workload.inference": "central",
                                              "workload.env_steps": 4000}),
}


@pytest.mark.parametrize("window", [None, EVERYTHING])
@pytest.mark.parametrize("case", list(CASES))
def test_a_timeline_leaves_the_result_bit_identical(tmp_path, case, window):
    path, sets = CASES[case]
    trace = load_trace(path)
    system = resolve(load_spec(SPEC, sets), trace)
    plain = simulate(trace, system)
    streamed = simulate(trace, system, timeline=tmp_path / "t.json", timeline_window=window)
    assert streamed.model_dump() == plain.model_dump()
    by_worker = _worker_events(json.loads((tmp_path / "t.json").read_text())["traceEvents"])
    assert "learner" in by_worker and any(w.startswith("actor") for w in by_worker)


def test_tabular_timeline_leaves_the_result_bit_identical(tmp_path):
    trace = load_trace(ROOT / "traces" / "tabular_frozenlake.parquet")
    spec = parse_spec({"name": "cpu-only", "cpu": {"preset": "xeon-silver-4215"},
                       "workload": {"env_steps": 20_000}})
    plain = simulate(trace, spec)
    streamed = simulate(trace, spec, timeline=tmp_path / "t.json")
    assert streamed.model_dump() == plain.model_dump()
    doc = json.loads((tmp_path / "t.json").read_text())
    assert [e for e in doc["traceEvents"] if e["ph"] == "X"]


def test_merged_offpolicy_timeline_shows_chunks_and_updates_in_order(tmp_path):
    """The merged sync rounds (one actor, no lag): each round's chunk parts, then its
    update's sample and learn, back to back on the worker tracks."""
    events, result = _timeline(tmp_path, DQN_UNIFORM, {"workload.learner": "sync",
                                                       "workload.env_steps": 3000},
                               window=EVERYTHING)
    by_worker = _worker_events(events)
    actor = sorted((e["ts"], e["dur"], e["name"]) for e in by_worker["actor 0"])
    assert {n for _, _, n in actor} >= {"env_step", "act"}
    for (t0, d0, _), (t1, _, _) in zip(actor, actor[1:], strict=False):
        assert t1 >= t0 + d0 - 2e-3  # parts never overlap (each rounded to the ns)
    learner = [e for e in by_worker["learner"] if e["pid"]]
    assert {"replay_sample", "learn"} <= {e["name"] for e in learner}
    assert sum(e["args"]["items"] for e in learner if e["name"] == "learn"
               and e["args"]["device"] == "gpu0") == result.updates
    assert max(e["ts"] + e["dur"] for es in by_worker.values() for e in es) <= \
        result.sim_time_s * 1e6 + 1e-3


def test_tiles_hold_at_least_their_weight_and_end_at_breaks():
    w = np.full(100, 3)
    assert tile_starts(w, 30).tolist() == list(range(0, 100, 10))
    starts = tile_starts(w, 30, breaks=np.arange(7, 100, 7))
    assert starts[0] == 0 and (starts[1:] % 7 == 0).all()
    # each tile starts at the first break past a new multiple of 30 of the weight before it
    assert starts.tolist() == [0, 14, 21, 35, 42, 56, 63, 70, 84, 91]
    assert (np.diff(3 * starts // 30) >= 1).all() and len(starts) <= 300 // 30 + 1
    assert tile_starts(w, 30, breaks=np.array([], dtype=np.int64)).tolist() == [0]
    assert tile_starts(np.array([5, 1, 1, 9]), 4).tolist() == [0, 1]
    assert tile_starts(np.zeros(0, dtype=np.int64), 4).tolist() == []


def test_float_args_are_seconds_written_as_microseconds(tmp_path):
    stream = TimelineStream(tmp_path / "t.json", ["cpu"])
    stream.extend("cpu", "rollout", 1, [0.5], [0.25], "actor 0",
                  args={"steps": np.array([7]), "env_step_us": np.array([0.125000001])})
    doc = json.loads(stream.close().read_text())
    (copy,) = [e for e in doc["traceEvents"] if e["ph"] == "X" and "device" in e["args"]]
    assert copy["args"]["steps"] == 7 and copy["args"]["env_step_us"] == 125000.001
    with pytest.raises(TypeError, match="must be numbers"):
        TimelineStream(tmp_path / "u.json", ["cpu"]).extend(
            "cpu", "x", 0, [0.0], [1.0], "a", args={"bad": np.array(["s"])})
