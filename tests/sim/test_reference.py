"""The fast engine against the reference engine (rldse.sim.agreement) on contended
configurations of the three program families: makespan, throughput, every device's busy
time, energy and p95 of the per-iteration time within 1 %. The default suite runs the
small sizes; the ``slow`` variant 4x the env steps (benchmarks/fidelity/reference_agreement.py
prints the whole table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.errors import RldseError
from rldse.sim import simulate
from rldse.sim.agreement import CONFIGS, TOLERANCE, run
from rldse.sim.machine import Machine
from rldse.system import parse_spec, resolve
from rldse.trace import load_trace

TRACES = Path(__file__).resolve().parents[2] / "traces"


def check(name: str, scale: int) -> None:
    a = run(name, TRACES, scale)
    assert set(a.fast) == set(a.reference)
    assert "makespan_s" in a.errors and "energy_j" in a.errors
    assert any(k.startswith("busy_s:") for k in a.errors)
    key, err = a.worst
    assert abs(err) <= TOLERANCE, f"{name}: {key} fast/reference - 1 = {err:+.3%}"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_fast_paths_agree_with_the_reference(name):
    check(name, 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
def test_fast_paths_agree_with_the_reference_on_longer_runs(name):
    check(name, 4)


def test_the_configurations_cover_the_three_families_and_contention():
    traces = {trace for trace, _, _ in CONFIGS.values()}
    assert len(CONFIGS) >= 12
    assert any(t.startswith("dqn") for t in traces) and "ddpg_pendulum" in traces
    assert any(t.startswith("actor_learner") or t == "pong_ppo" for t in traces)
    assert any(t.startswith("tabular") for t in traces)


def test_the_reference_engine_takes_no_merged_path():
    """A configuration the fast engine merges (actors on their own cores, async): the
    reference engine books every step, so it schedules many more events."""
    trace = load_trace(TRACES / "dqn_cartpole_per.parquet")
    system = resolve(parse_spec({"name": "x", "cpu": {"preset": "epyc-7742"},
                                 "placement": {"act": "cpu", "learn": "cpu", "replay": "cpu"},
                                 "workload": {"learner": "async", "actors": 2,
                                              "env_steps": 3000}}), trace)
    counts = {}
    for engine in ("fast", "reference"):
        m = Machine(trace, system, engine=engine)
        schedule, n = m.env.schedule, [0]

        def counted(*args, schedule=schedule, n=n, **kwargs):
            n[0] += 1
            return schedule(*args, **kwargs)

        m.env.schedule = counted
        system.workload.program(m)
        counts[engine] = n[0]
    assert counts["reference"] > 10 * counts["fast"]


def test_an_unknown_engine_is_one_line():
    trace = load_trace(TRACES / "tabular_taxi.parquet")
    with pytest.raises(RldseError, match="engine"):
        simulate(trace, parse_spec({"name": "x", "cpu": {"preset": "epyc-7742"}}),
                 engine="exact")
