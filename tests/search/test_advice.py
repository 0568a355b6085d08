"""The search's answer says why: one recommendation and its rule, the binding constraint
with its slack, idle parts flagged, and designs differing only in absent parts collapsed,
all from hand-built trial tables."""

from __future__ import annotations

import math

import pandas as pd

from rldse.search.advice import absent_parts, advise, collapse, device_kind, idle_parts
from rldse.search.constraints import parse_constraint

NAN = math.nan
CAP = parse_constraint("avg_power_w <= 400", "test")
MEMORY = parse_constraint("gpu_memory_ok", "test")
PARAMS = ["gpu.count", "gpu.preset"]
COLUMNS = ["number", "source", "feasible", "gpu.count", "gpu.preset", "env_steps_per_s",
           "cost_usd", "avg_power_w", "util.cpu", "util.gpu",
           "constraint: avg_power_w <= 400", "constraint: gpu_memory_ok"]


def _row(n, count, preset, rate, cost, power, gpu_util, source="simulated"):
    violation = (power - 400) / 400
    return (n, source, violation <= 0, count, preset, rate, cost, power, 0.4, gpu_util,
            violation, 0.0)


def _table(*rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["feasible"] = frame["feasible"].astype("boolean")
    return frame


TRIALS = [
    _row(0, 1, "a100-40g", 10_050.0, 20_000.0, 300.0, 0.5),   # the best
    _row(1, 2, "a100-40g", 15_000.0, 35_000.0, 500.0, 0.4),   # +50 %, but 500 W: over the cap
    _row(2, 0, "a100-40g", 8_000.0, 10_000.0, 200.0, NAN),    # no GPU: its preset means nothing
    _row(3, 0, "v100-sxm2", 8_000.0, 10_000.0, 200.0, NAN),   # ... so this is trial 2 again
    _row(4, 1, "v100-sxm2", 10_000.0, 18_000.0, 380.0, 0.0),  # -0.5 %, cheaper; GPU idle
]
RATE = [("env_steps_per_s", "maximize")]


def test_the_binding_constraint_is_named_with_its_slack_at_the_recommendation():
    advice = advise(RATE, PARAMS, [CAP, MEMORY], _table(*TRIALS))
    assert advice.number == 4
    lines = "\n".join(advice.lines)
    assert advice.lines[0].startswith("recommendation: trial 4 [gpu.count=1, "
                                      "gpu.preset=v100-sxm2]: 10,000 env steps/s; 380 W; $18,000")
    assert "rule: the cheapest (cost_usd then avg_power_w, each within 1% of its lowest), " \
           "the best env_steps_per_s among those, of the 2 feasible designs within 1% of the " \
           "best env_steps_per_s (trial 0: 10,050 env steps/s)" in lines
    binding = next(line for line in advice.lines if "binding constraint" in line)
    assert binding == ("  binding constraint: avg_power_w <= 400, slack 20 W (5.0% of the "
                       "bound) at trial 4: 1 of the 1 infeasible trial(s) better than trial 4 "
                       "(by more than 1%) break it")
    assert "slack at trial 4: avg_power_w <= 400: 20 W (5.0% of the bound); 1 check(s) met" \
        in lines


def test_an_idle_part_of_the_recommended_design_is_flagged():
    advice = advise(RATE, PARAMS, [CAP], _table(*TRIALS))
    idle = [line for line in advice.lines if "idle" in line]
    assert len(idle) == 1 and idle[0].startswith("  idle in trial 4: gpu (utilisation 0")
    busy = advise(RATE, PARAMS, [CAP], _table(*TRIALS[:4]))  # trial 0 wins: its GPU works
    assert busy.number == 0 and not any("idle" in line for line in busy.lines)
    assert idle_parts(_table(*TRIALS).iloc[4]) == ["gpu"]


def test_designs_differing_only_in_an_absent_part_are_one_design():
    frame = _table(*TRIALS)
    assert absent_parts(frame.iloc[3], frame) == {"gpu"}
    assert absent_parts(frame.iloc[0], frame) == set()
    designs, same = collapse(frame, PARAMS, frame)
    assert list(designs["number"]) == [0, 1, 2, 4] and same[2] == [3]
    # with no GPU recorded anywhere, nothing is known absent: the presets stay apart
    bare = frame.drop(columns=["util.gpu"])
    assert len(collapse(bare, PARAMS, bare)[0]) == 5
    assert device_kind("util.node1/gpu3") == "gpu" and device_kind("util.cpu") == "cpu"


def test_the_collapsed_trials_are_said_and_the_cheapest_no_gpu_design_recommended():
    cheap = [("cost_usd", "minimize")]
    advice = advise(cheap, PARAMS, [CAP], _table(*TRIALS))
    assert advice.number == 2
    assert "the same design as trial(s) 3: they differ at most in parts the design does " \
           "not have" in "\n".join(advice.lines)
    assert advice.lines[0].startswith("recommendation: trial 2 [gpu.count=0]:")


def test_no_constraint_binds_when_no_infeasible_trial_does_better():
    advice = advise(RATE, PARAMS, [CAP], _table(*[t for t in TRIALS if t[0] != 1]))
    line = next(line for line in advice.lines if "binds" in line)
    assert line.startswith("  no constraint binds: no evaluated trial that breaks one is "
                           "better than trial 4 (by more than 1%)")
    assert line.endswith("the least slack: avg_power_w <= 400: 20 W (5.0% of the bound)")


def test_one_recommendation_on_a_pareto_set_nearest_the_ideal_point():
    objectives = [("env_steps_per_s", "maximize"), ("cost_usd", "minimize")]
    frame = _table(_row(0, 1, "a", 1_000.0, 1_000.0, 100.0, 0.5),
                   _row(1, 2, "a", 5_000.0, 5_000.0, 200.0, 0.5),
                   _row(2, 3, "a", 10_000.0, 10_000.0, 300.0, 0.5),
                   _row(3, 4, "a", 4_000.0, 9_000.0, 350.0, 0.5),    # dominated by trial 1
                   _row(4, 4, "b", 20_000.0, 12_000.0, 900.0, 0.5))  # off the front, over the cap
    advice = advise(objectives, PARAMS, [CAP], frame)
    assert advice.number == 1
    assert [line for line in advice.lines if line.startswith("recommendation")] == \
        [advice.lines[0]]
    assert "of the 3 feasible Pareto designs, the one nearest the ideal point" in advice.lines[1]
    assert any(line.startswith("  binding constraint: avg_power_w <= 400") for line in
               advice.lines)


def test_nothing_feasible_recommends_nothing():
    frame = _table(TRIALS[1])
    assert advise(RATE, PARAMS, [CAP], frame).lines == []


def test_a_near_tie_at_the_same_cost_and_power_goes_to_the_best_not_the_last_watt():
    # the same parts: equal cost; power 0.1 W apart (under the model's resolution)
    frame = _table(_row(0, 1, "a", 14_671.0, 16_950.0, 178.2, 0.3),
                   _row(1, 1, "a", 14_569.0, 16_950.0, 178.1, 0.3))
    frame["gpu.preset"] = ["x", "y"]  # two designs
    assert advise(RATE, PARAMS, [CAP], frame).number == 0
    frame.loc[1, "avg_power_w"] = 150.0  # 16 % less power: that counts
    frame.loc[1, "constraint: avg_power_w <= 400"] = (150.0 - 400) / 400
    assert advise(RATE, PARAMS, [CAP], frame).number == 1
