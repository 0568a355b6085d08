"""Turbo in simulate: the clock a busy core runs at follows the cores the family's program
keeps busy at once (rldse.sim.machine.busy_cores, Workload.busy_processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.sim import simulate
from rldse.sim.machine import Machine, busy_cores
from rldse.system import load_spec, parse_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"


def _busy(trace: str, raw: dict) -> int:
    return busy_cores(resolve(parse_spec(raw), load_trace(TRACES / trace)))


def test_single_core_mhz_moves_a_one_actor_dqn_run_on_a_cpu_system():
    """The README's CPU-only system (examples/cpu_only.yaml, one EPYC 7742): one actor,
    sync learner, so one busy core at the single-core boost; a higher boost is faster."""
    trace = load_trace(TRACES / "dqn_cartpole_uniform.parquet")
    sets = {"workload.env_steps": 3000}
    times = {}
    for mhz in (None, 3400.0, 5000.0):
        extra = {} if mhz is None else {"cpu.single_core_mhz": mhz}
        spec = load_spec(ROOT / "examples" / "cpu_only.yaml", {**sets, **extra})
        m = Machine(trace, resolve(spec, trace))
        assert m.busy_cores == 1
        assert m.models["cpu"].core.clock_mhz == (mhz or 3400.0)  # the preset's max boost
        times[mhz] = simulate(trace, spec).sim_time_s
    assert times[None] == times[3400.0]
    assert times[5000.0] < times[3400.0]
    # at the base clock (the boost set to it) the run is slower still
    base = load_spec(ROOT / "examples" / "cpu_only.yaml", {**sets, "cpu.single_core_mhz": 2250})
    assert simulate(trace, base).sim_time_s > times[3400.0]


def test_two_busy_cores_run_at_the_clock_the_preset_interpolates():
    """Two sync actors on an EPYC 7742 (presets/cpu.yaml: 64 cores, base 2250 MHz, max
    boost 3400 MHz): 3400 − (3400 − 2250) × 1/63 MHz on the CPU model and on the
    GPU's issuing core."""
    trace = load_trace(TRACES / "dqn_cartpole_uniform.parquet")
    spec = parse_spec({"cpu": {"preset": "epyc-7742"}, "gpu": {"preset": "a100-40g"},
                       "placement": {"learn": "gpu"},
                       "workload": {"actors": 2, "env_steps": 2000}})
    m = Machine(trace, resolve(spec, trace))
    want_mhz = 3400 - (3400 - 2250) * 1 / 63
    assert m.busy_cores == 2
    assert m.models["cpu"].core.clock_mhz == pytest.approx(want_mhz)
    host = m.models["cpu"].capture_host
    assert m.models["cpu"].interp_scale == pytest.approx(
        host.clock_mhz * host.ipc_factor / (want_mhz * 0.84))


@pytest.mark.parametrize(("workload", "want"), [
    ({"actors": 1}, 1),  # sync: the learner runs while the actors wait
    ({"actors": 4}, 4),
    ({"actors": 4, "learner": "async"}, 6),  # + learner + replay manager
    ({"actors": 8, "cores": 3, "learner": "async"}, 5),  # actors on 3 cores
    ({"actors": 100, "learner": "async"}, 64),  # capped at the cores (SMT adds none)
])
def test_offpolicy_busy_processes(workload, want):
    assert _busy("dqn_cartpole_uniform.parquet",
                 {"cpu": {"preset": "epyc-7742"}, "workload": workload}) == want


@pytest.mark.parametrize(("raw", "want"), [
    ({"workload": {"actors": 3}}, 3),
    ({"workload": {"actors": 3, "learner": "async"}}, 4),
    ({"gpu": {"preset": "a100-40g", "count": 2}, "placement": {"act": "gpu"},
      "workload": {"actors": 3, "inference": "central"}}, 5),  # one server per GPU
    ({"workload": {"actors": 3, "inference": "central"}}, 4),  # one server on a core
])
def test_actor_learner_busy_processes(raw, want):
    assert _busy("actor_learner_cartpole_2.parquet",
                 {"cpu": {"preset": "epyc-7742"}, **raw}) == want


def test_tabular_busy_processes():
    offline = load_trace(TRACES / "tabular_taxi_offline_7.parquet")
    workers = resolve(parse_spec({"cpu": {"preset": "epyc-7742"}}), offline).info.workers
    assert _busy("tabular_taxi_offline_7.parquet", {"cpu": {"preset": "epyc-7742"}}) == workers
    assert _busy("tabular_taxi_offline_7.parquet",
                 {"cpu": {"preset": "epyc-7742"}, "workload": {"cores": 2}}) == 2
    assert _busy("tabular_taxi_offline_7.parquet",
                 {"cpu": {"preset": "epyc-7742"}, "pim": {"preset": "upmem-p21"},
                  "placement": {"q_update": "pim"}}) == 1  # the host drives the DPUs
    assert _busy("tabular_frozenlake.parquet", {"cpu": {"preset": "epyc-7742"}}) == 1
