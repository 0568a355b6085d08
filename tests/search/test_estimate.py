"""The analytic first look bounds what the simulation finds, and prunes only losers."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rldse.search.constraints import parse_constraint
from rldse.search.estimate import Estimate, Incumbents, calibration, estimate, prune_reason
from rldse.sim import simulate
from rldse.system import parse_spec, resolve
from rldse.trace import load_trace
from rldse.workloads import workload_of
from tests.search import stand_in

TRACES = Path(__file__).parents[2] / "traces"


def _assert_bounds(est: Estimate, result) -> None:
    rel = 1e-9
    v = est.values
    assert result.cost_usd == pytest.approx(v["cost_usd"])
    assert result.avg_power_w >= v["avg_power_w"] * (1 - rel)
    if "sim_time_s" in v:
        assert result.sim_time_s >= v["sim_time_s"] * (1 - rel)
        assert result.energy_j >= v["energy_j"] * (1 - rel)
        assert result.env_steps_per_s <= v["env_steps_per_s"] * (1 + rel)
        assert result.steps_per_joule <= v["steps_per_joule"] * (1 + rel)


@pytest.mark.parametrize(("actors", "cores", "gpus", "learn"),
                         [*itertools.product([1, 8, 64], [4, 64], [1, 4], ["gpu"]),
                          (16, 8, 0, "cpu"), (3, 64, 0, "cpu")])
def test_bound_holds_on_the_stand_in(host_fp, actors, cores, gpus, learn):
    trace = stand_in.make_trace(host_fp, steps=512)
    spec = parse_spec({"cpu": {"preset": "epyc-7742"},
                       "gpu": {"preset": "a100-40g", "count": gpus},
                       "placement": {"learn": learn},
                       "workload": {"actors": actors, "cores": cores, "env_steps": 2048}})
    _assert_bounds(estimate(trace, resolve(spec, trace)), simulate(trace, spec))


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.parquet")), ids=lambda p: p.name)
def test_bound_holds_on_shipped_traces(path):
    trace = load_trace(path)
    workload = workload_of(trace)
    gpu_only = [r for r in workload.placements if not workload.places(r, "cpu")]
    for gpus in (0, 2) if not gpu_only else (2,):  # a GPU-only family (llm_rl) needs one
        knobs = workload.knobs.model_fields
        raw = {"cpu": {"preset": "epyc-7742"},
               "workload": {"actors": 4} if "actors" in knobs else {"cores": 4}}
        if gpus:
            placed = {"learn": "gpu"} if "learn" in workload.placements else {}
            placed.update({role: "gpu" for role in gpu_only})
            raw.update(gpu={"preset": "a100-40g", "count": gpus}, placement=placed)
        spec = parse_spec(raw)
        _assert_bounds(estimate(trace, resolve(spec, trace)), simulate(trace, spec))


def test_cost_and_power_are_known_without_env_steps(host_fp):
    trace = stand_in.make_trace(host_fp, steps=64)
    trace.ops = trace.ops[trace.ops["phase"] == "learn"].reset_index(drop=True)
    est = estimate(trace, resolve(parse_spec({"cpu": {"preset": "epyc-7742"}}), trace))
    assert set(est.values) == {"avg_power_w", "cost_usd"}


EST = Estimate({"steps_per_joule": 100.0, "cost_usd": 50_000.0, "avg_power_w": 800.0,
                "sim_time_s": 2.0})
MAX_SPJ = [("steps_per_joule", "maximize")]


def test_prunes_a_point_whose_bound_loses_to_a_simulated_one():
    assert prune_reason(EST, MAX_SPJ, [], {}, Incumbents([(101.0,)], {}), 0.0).startswith(
        "dominated by estimate: steps_per_joule ≤ 100")
    assert prune_reason(EST, MAX_SPJ, [], {}, Incumbents([(99.0,)], {}), 0.0) is None
    assert prune_reason(EST, MAX_SPJ, [], {}, Incumbents([(101.0,)], {}), 0.05) is None


def test_calibration_widens_a_bound_the_simulation_beat():
    cal = calibration([({"steps_per_joule": 10.0}, {"steps_per_joule": 12.0}),
                       ({"sim_time_s": 1.0}, {"sim_time_s": 2.0})])
    assert cal == {"steps_per_joule": 1.2, "sim_time_s": 1.0}  # a lower bound that held
    assert prune_reason(EST, MAX_SPJ, [], {}, Incumbents([(110.0,)], cal), 0.0) is None


def test_many_objectives_prune_only_when_dominated():
    objectives = [("steps_per_joule", "maximize"), ("cost_usd", "minimize")]
    better = Incumbents([(120.0, 40_000.0)], {})
    assert prune_reason(EST, objectives, [], {}, better, 0.0) is not None
    trade_off = Incumbents([(120.0, 60_000.0)], {})
    assert prune_reason(EST, objectives, [], {}, trade_off, 0.0) is None
    # an objective the estimate cannot bound never lets a point be pruned
    assert prune_reason(EST, [("updates_per_s", "maximize")], [], {},
                        Incumbents([(1e9,)], {}), 0.0) is None


def test_prunes_a_surely_infeasible_point_before_any_incumbent():
    none = Incumbents([], {})
    cost = parse_constraint("cost_usd <= 40000", "c")
    assert prune_reason(EST, MAX_SPJ, [cost], {}, none, 0.0).startswith(
        "infeasible by estimate: cost_usd <= 40000")
    power = parse_constraint("avg_power_w <= 1000", "c")
    assert prune_reason(EST, MAX_SPJ, [power], {}, none, 0.0) is None
    slots = parse_constraint("spec.pim.dimms <= 16", "c")
    assert prune_reason(EST, MAX_SPJ, [slots], {"spec.pim.dimms": 20.0}, none, 0.0) is not None
