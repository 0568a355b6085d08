"""The up-front estimate of a simulation's cost (rldse.sim.budget)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rldse.errors import RldseError
from rldse.sim import Limits, simulate
from rldse.sim.budget import Budget, Meter, _fit, _Pilot, check, estimate, is_small
from rldse.sim.machine import Machine
from rldse.system import load_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "dgx1_like.yaml"


@pytest.fixture(scope="module")
def dqn():
    return load_trace(ROOT / "traces" / "dqn_cartpole_uniform.parquet")


def _system(trace, **sets):
    return resolve(load_spec(SPEC, {f"workload.{k}": v for k, v in sets.items()}), trace)


def test_fit_recovers_a_linear_cost():
    """a + b·steps + c·workers from three pilots, extrapolated exactly."""
    def cost(s, w):
        return 0.1 + 2e-6 * s + 3e-3 * w

    pilots = [_Pilot(s, w, cost(s, w), 0, None) for s, w in [(2000, 4), (32000, 4), (2000, 16)]]
    assert _fit(pilots, "wall_s", 10**9, 65536) == pytest.approx(cost(10**9, 65536), rel=1e-9)


def test_fit_never_extrapolates_below_the_pilots():
    """A noisy pilot that ran faster when longer gives a flat estimate, not a negative one."""
    pilots = [_Pilot(2000, 1, 0.3, 0, None), _Pilot(32000, 1, 0.2, 0, None)]
    assert _fit(pilots, "wall_s", 10**10, 1) >= 0.2


def test_check_refuses_over_the_limits_in_one_line():
    budget = Budget(events=4, wall_s=3600 * 15, memory_bytes=2e12, env_steps=10**10, workers=1)
    with pytest.raises(RldseError) as info:
        check(budget, Limits(memory_bytes=10**9))
    text = str(info.value)
    assert "\n" not in text and "15 h" in text and "10,000,000,000 env steps" in text
    assert "over the 10 min limit" in text and "memory limit of 1.00 GB" in text
    check(budget, Limits(allow_long=True))
    check(Budget(4, 1.0, 1e6, 1000, 1), Limits())


def test_events_are_estimated_from_the_designs_own_program(dqn):
    """More actors (64) than the DGX-1's 40 cores on a sync learner: one event per round
    of actors; the estimate is within 5 % of the count of the real run."""
    system = _system(dqn, actors=64, learner="sync", env_steps=60_000)
    budget = estimate(dqn, system, memory=False)
    machine = Machine(dqn, system)
    meter = Meter(machine)
    machine.result(system.workload.program(machine))
    assert budget.events == pytest.approx(meter.events, rel=0.05)


def test_env_steps_1e10_is_over_the_limit(dqn):
    with pytest.raises(RldseError, match="this run would take about"):
        estimate(dqn, _system(dqn, env_steps=10**10), Limits())


def test_limits_leave_the_result_unchanged(dqn):
    """Pilots run on their own machines: the result is bit-identical with or without."""
    system = _system(dqn, env_steps=5000, actors=65)
    assert not is_small(dqn, system)
    plain = simulate(dqn, system, seed=3)
    assert simulate(dqn, system, seed=3, limits=Limits()).to_json() == plain.to_json()


def test_small_runs_are_their_own_estimate(dqn):
    assert is_small(dqn, _system(dqn, env_steps=200_000, actors=64))
    assert not is_small(dqn, _system(dqn, env_steps=1000, actors=65))
    assert not is_small(dqn, _system(dqn, env_steps=200_001, actors=1))


def test_the_longer_pilot_grows_until_its_slope_is_measurable(monkeypatch):
    """Pilots of 0.1 s are mostly fixed set-up: the longer one is regrown until it takes
    SLOPE_CPU_S more CPU time than the short one, so the per-step cost is not the host's
    noise."""
    import rldse.sim.budget as budget

    def fake_run(trace, system, steps, knob, workers, memory):
        cpu_s = 0.1 + 1e-6 * steps
        return _Pilot(steps, workers, 2 * cpu_s, steps // 100, None, cpu_s)

    monkeypatch.setattr(budget, "_run", fake_run)
    timed = [fake_run(None, None, 2_000, None, 1, False), fake_run(None, None, 32_000, None, 1,
                                                                   False)]
    grown = budget._resolved_slope(None, None, timed, 10**10, None, 1)
    assert grown[1].cpu_s - grown[0].cpu_s >= budget.SLOPE_CPU_S
    assert grown[1].steps == 32_000 * budget.SLOPE_GROWTH ** 2  # 0.512 M steps: 0.51 s more
    assert _fit(grown, "cpu_s", 10**10, 1) == pytest.approx(0.1 + 1e-6 * 10**10)
    # never past the design's own steps
    assert budget._resolved_slope(None, None, timed, 100_000, None, 1)[1].steps == 100_000
    # a design surely over a limit (its slope less the noise: over 2 x 1e4 s of wall
    # time) stops growing there; one that may be under it grows as before
    assert budget._resolved_slope(None, None, timed, 10**10, None, 1, 600.0) == timed
    assert budget._resolved_slope(None, None, timed, 10**10, None, 1, 1e5) == grown


def test_wall_time_is_the_cpu_cost_times_the_hosts_load_during_the_pilots(monkeypatch, dqn):
    """A host at half speed for this process (wall = 2 x CPU) doubles the wall estimate,
    not the program's cost; a design over the limits by time alone is refused before the
    (slower, tracemalloc) memory pilots run."""
    import rldse.host
    import rldse.sim.budget as budget

    monkeypatch.setattr(rldse.host.os, "getloadavg", lambda: (64.0, 64.0, 64.0))  # no cap
    ran = []

    def fake_run(trace, system, steps, knob, workers, memory):
        ran.append(memory)
        cpu_s = 0.1 + 1e-6 * steps
        return _Pilot(steps, workers, 2 * cpu_s, steps // 100, 1000 if memory else None, cpu_s)

    monkeypatch.setattr(budget, "_run", fake_run)
    got = estimate(dqn, _system(dqn, env_steps=10**8))
    assert got.cpu_s == pytest.approx(0.1 + 100.0) and got.wall_s == pytest.approx(2 * got.cpu_s)
    assert any(ran)
    ran.clear()
    with pytest.raises(RldseError, match="over the 10 min limit"):
        estimate(dqn, _system(dqn, env_steps=10**9), Limits())
    assert ran and not any(ran)  # no memory pilot


@pytest.mark.parametrize("name", ["actor_learner_cartpole_2", "ddpg_pendulum"])
def test_env_steps_1e10_is_refused_on_the_per_step_families(name):
    """The refusal comes from the estimate (before any run), in one line. The limit is five
    seconds, hundreds of times under these runs' estimates on any host (25-120 min here):
    the pilots stop once even the slope less its noise is over the limit, so a limit near
    the estimate (a minute, once) could let a noisy busy host's rough slope under it."""
    trace = load_trace(ROOT / "traces" / f"{name}.parquet")
    with pytest.raises(RldseError, match="over the 5 s limit") as info:
        estimate(trace, _system(trace, env_steps=10**10), Limits(wall_s=5.0), memory=False)
    assert "\n" not in str(info.value)


def test_tabular_online_events_scale_with_steps_and_its_estimate_follows():
    """The online tabular loop merges ONLINE_CHUNK steps per event, so its events (and
    cost) are proportional to env steps with a small slope: 1e10 steps are about 1e4
    events, estimated as such and so not refused; the estimate is the run's count."""
    from rldse.workloads.tabular.program.online import ONLINE_CHUNK

    trace = load_trace(ROOT / "traces" / "tabular_frozenlake.parquet")

    def events(steps):
        system = resolve(load_spec(ROOT / "examples" / "cpu_only.yaml",
                                   {"workload.env_steps": steps}), trace)
        machine = Machine(trace, system)
        meter = Meter(machine)
        machine.result(system.workload.program(machine))
        return system, meter.events

    _, at_1e8 = events(10**8)
    system, at_1e10 = events(10**10)
    assert at_1e10 - at_1e8 == (10**10 - 10**8) // ONLINE_CHUNK
    budget = estimate(trace, system, memory=False)
    assert budget.events == pytest.approx(at_1e10, rel=0.05)
    check(budget, Limits())  # not refused: its cost is 1e4 events



# ---- sizes priced in closed form, before any pilot ---------------------------------------

AL = Path(__file__).resolve().parents[2] / "traces" / "actor_learner_cartpole_2.parquet"


@pytest.mark.parametrize(("sets", "units"), [
    ({"rollout_len": 10**7, "actors": 65536}, 65536 * 4 * 10**7),
    ({"envs_per_actor": 65536, "actors": 65536}, 65536 * 65536 * 128)])
def test_an_actor_learner_iteration_over_the_limit_is_refused_before_pilots(sets, units,
                                                                            monkeypatch):
    import rldse.sim.budget as budget

    monkeypatch.setattr(budget, "_run", lambda *a, **k: pytest.fail("a pilot ran"))
    trace = load_trace(AL)
    system = _system(trace, **sets)
    with pytest.raises(RldseError, match=re.escape(f"simulate {units:.3g} env steps (one iter")):
        simulate(trace, system, limits=Limits())
    budget.check_size(system, Limits(allow_long=True))  # allowed: nothing raised


def test_the_grid_workers_and_runs_refusals_name_their_size():
    import os

    from rldse.sim.budget import check_grid, check_runs, check_workers

    with pytest.raises(RldseError, match=r"4,294,967,296 points .* about 22.9 min and 275 GB"):
        check_grid(65536 * 65536, 2, Limits(memory_bytes=10**9), "s.yaml")
    check_grid(100, 2, Limits(), "s.yaml")
    check_workers(os.cpu_count() or 1, Limits(), "s.yaml")
    with pytest.raises(RldseError, match="--workers 100,000: more than"):
        check_workers(100_000, Limits(), "s.yaml")
    with pytest.raises(RldseError, match=r"--seeds 1,000 would take about 2.78 h"):
        check_runs(10.0, 1000, Limits(), "--seeds 1,000", "")


def test_a_timeline_is_priced_against_the_limit_and_the_free_space(tmp_path, monkeypatch):
    import shutil

    from rldse.sim.budget import TIMELINE_BYTES_PER_EVENT, check_timeline

    check_timeline(1e6, tmp_path / "t.json", Limits())
    with pytest.raises(RldseError, match="over the 1 GB limit"):
        check_timeline(1e9 / TIMELINE_BYTES_PER_EVENT * 2, tmp_path / "t.json", Limits())
    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(1, 1, 10**6))
    with pytest.raises(RldseError, match="more than the 1 MB free there"):
        check_timeline(1e6, tmp_path / "new" / "t.json", Limits(allow_long=True))


def test_an_offline_runs_estimate_names_its_updates_not_env_steps():
    """An offline tabular run's work is transitions x passes (its family's Workload.work);
    the estimate's words say so instead of 'env steps'."""
    from rldse.sim.budget import work
    from rldse.system import parse_spec

    trace = load_trace(ROOT / "traces" / "tabular_taxi_offline_7.parquet")
    spec = {"name": "cpu", "cpu": {"preset": "epyc-7742"},
            "workload": {"transitions": 1000, "passes": 3}}
    system = resolve(parse_spec(spec), trace)
    assert work(system) == (3000.0, "updates (1,000 transitions x 3 passes)")
    budget = estimate(trace, system, memory=False)
    assert budget.describe().endswith("for 3,000 updates (1,000 transitions x 3 passes)")
    assert "env steps" not in budget.describe()


def test_memory_that_grows_with_steps_is_read_off_the_regrown_long_pilot(dqn, monkeypatch):
    """A sync DQN's max-plus chunks hold about 33 B a step (70 MB at 2e6 steps): at the
    short pilots' few thousand steps the peak is the set-up's, noisy (8 MB at 2,000, 4.6
    MB at 8,000), so the memory pilots' long one runs as long as the regrown timed one."""
    import rldse.sim.budget as budget
    from rldse.sim.budget import PILOT_STEPS, _Pilot

    def pilot(trace, system, steps, knob, workers, memory):
        peak = (8e6 if steps <= PILOT_STEPS else 4e6 + 33 * steps) if memory else None
        cpu_s = 0.1 + 3e-7 * steps
        return _Pilot(steps, workers, cpu_s, 4, peak, cpu_s)

    monkeypatch.setattr(budget, "_run", pilot)
    result = estimate(dqn, _system(dqn, env_steps=10**9), memory=True)
    assert result.memory_bytes == pytest.approx(33e9, rel=0.1)  # the short pilot: noise
