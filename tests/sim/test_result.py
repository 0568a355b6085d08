"""What a Result says beside its numbers: notes on start-up and warm-up that dominate a
run, and the device's busy time per phase next to the workers' time."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.sim import simulate
from rldse.sim.result import RAMP_SHARE, ramp_warnings
from rldse.system import load_spec
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
DGX = str(ROOT / "examples" / "dgx1_like.yaml")


@pytest.mark.parametrize("breakdown, noted", [
    ({"startup_s": 30.0}, ["start-up takes 30 s, 30% of the 100 s run"]),
    ({"startup_s": 25.0, "learn_s": 70.0}, []),  # a quarter exactly: not more than it
    ({"warmup_s": 60.0, "load_s": 26.0}, ["loading takes 26 s, 26%", "warm-up takes 60 s, 60%"]),
])
def test_ramp_over_a_quarter_of_the_run_is_noted(breakdown, noted):
    notes = ramp_warnings(breakdown, 100.0)
    assert RAMP_SHARE == 0.25 and len(notes) == len(noted)
    for note, start in zip(notes, noted, strict=True):
        assert note.startswith(start)


def test_start_up_that_is_most_of_a_short_run_gets_the_note():
    """Pong in one iteration: starting its processes (the learner's set-up, which imports
    torch and makes a probe env, then each actor's envs, from the capture's CPU time) is
    most of the run, so its steps/s would describe the start-up; a long run has no note.
    (Many actors no longer make a short run mostly start-up: each adds only the learner's
    fork of it, and they start side by side on their own cores.)"""
    trace = load_trace(ROOT / "traces" / "pong_ppo.parquet")
    short, long = (simulate(trace, load_spec(DGX, {"workload.env_steps": steps}))
                   for steps in (1024, 100_000))
    assert short.breakdown_s["startup_s"] > 0.25 * short.sim_time_s
    assert any(w.startswith("start-up takes") for w in short.warnings)
    assert long.breakdown_s["startup_s"] == short.breakdown_s["startup_s"]
    assert not any(w.startswith("start-up takes") for w in long.warnings)


def test_off_policy_warm_up_is_its_time_to_the_first_update():
    trace = load_trace(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
    r = simulate(trace, load_spec(DGX, {"workload.env_steps": 2000}))
    assert 0 < r.breakdown_s["warmup_s"] < r.sim_time_s
    assert (r.breakdown_s["warmup_s"] > 0.25 * r.sim_time_s) == any(
        w.startswith("warm-up takes") for w in r.warnings)


def test_device_busy_per_phase_adds_up_to_its_busy_time():
    trace = load_trace(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
    r = simulate(trace, load_spec(DGX, {"workload.env_steps": 2000}))
    for d in r.devices:
        assert sum(d.phase_busy_s.values()) == pytest.approx(d.busy_s, rel=1e-9)


def test_a_run_that_never_leaves_its_warm_up_says_so():
    trace = load_trace(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
    r = simulate(trace, load_spec(DGX, {"workload.env_steps": 1000}))  # < learning_starts
    assert r.updates == 0 and r.breakdown_s["warmup_s"] == r.sim_time_s
    assert any(w.startswith("warm-up takes") and "100% of" in w for w in r.warnings)
