"""Learning-aware metrics (rldse.sim.target) on the shipped traces: steps to a target
against a hand computation from the curve, time and energy against the simulated run,
the hourly price, and the one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rldse.cli import main
from rldse.errors import RldseError
from rldse.sim import simulate
from rldse.sim.target import (
    Target,
    learning_curve,
    steps_to_target,
    target_steps,
    to_target,
    with_target,
)
from rldse.system import parse_spec
from rldse.trace import load_trace
from tests.sim.steady import steady

TRACES = Path(__file__).parents[2] / "traces"
DQN = TRACES / "dqn_cartpole_uniform.parquet"
PPO = TRACES / "actor_learner_cartpole_2.parquet"
SPEC = {"name": "box", "cpu": {"preset": "epyc-7742"}, "gpu": {"preset": "a100-40g"},
        "placement": {"act": "cpu", "learn": "gpu"}}


@pytest.fixture(scope="module")
def dqn():
    return load_trace(DQN)


def test_dqn_episode_ends_are_the_cumulative_returns(dqn):
    # CartPole pays 1 per step, so an episode's return is its length: the env steps at
    # each episode's end are the running sum of the returns, independent of the ops.
    curve = learning_curve(dqn)
    returns = np.asarray(dqn.meta.episode_returns)
    assert np.array_equal(curve.end_steps, np.cumsum(returns).astype(np.int64))


@pytest.mark.parametrize("k", [1, 10, 25])
def test_steps_to_target_matches_a_hand_computation(dqn, k):
    returns = list(dqn.meta.episode_returns)
    ends, total = [], 0
    for r in returns:
        total += int(r)
        ends.append(total)
    for i in range(k - 1, len(returns)):  # first full window whose mean reaches 195
        if sum(returns[i - k + 1:i + 1]) / k >= 195:
            expected = ends[i]
            break
    assert steps_to_target(dqn, Target(195.0, k)) == expected


def test_ppo_curve_covers_every_return():
    trace = load_trace(PPO)
    curve = learning_curve(trace)
    assert len(curve.end_steps) == len(trace.meta.episode_returns)
    assert curve.end_steps[0] > 0 and curve.end_steps[-1] <= trace.env_steps


def test_time_and_energy_to_target_are_the_run_to_the_target(dqn):
    target = Target(195.0)
    steps = steps_to_target(dqn, target)
    spec = parse_spec({**SPEC, "price_usd_per_hour": 3.6})
    result = with_target(simulate(dqn, to_target(spec, steps)), steps, target)
    assert result.env_steps == steps == result.steps_to_target
    assert result.time_to_target_s == pytest.approx(result.sim_time_s)
    assert result.energy_to_target_j == pytest.approx(result.energy_j)
    assert result.cost_to_target_usd == pytest.approx(result.sim_time_s / 1000.0)
    assert {"steps_to_target", "time_to_target_s", "energy_to_target_j",
            "cost_to_target_usd"} <= set(result.metrics())


def test_steady_run_is_linear_in_steps():
    """On a steady trace (every iteration alike: tests/sim/steady.py) time and energy are
    start-up plus a fixed amount per iteration: the run to the target, a longer one and
    the full run lie on one line, and the target is reached at the run's rate within its
    last iteration."""
    trace = steady(load_trace(PPO))
    target = Target(195.0)
    steps = steps_to_target(trace, target)
    spec = parse_spec(SPEC)
    per_iteration = 2 * 4 * 128  # actors × envs per actor × rollout length
    to = with_target(simulate(trace, to_target(spec, steps)), steps, target)
    assert 0 <= to.env_steps - steps < per_iteration  # whole iterations: less than one more
    assert to.time_to_target_s == pytest.approx(to.sim_time_s * steps / to.env_steps)
    assert to.energy_to_target_j == pytest.approx(to.energy_j * steps / to.env_steps)
    full = simulate(trace, spec)
    middle = simulate(trace, to_target(spec, (to.env_steps + full.env_steps) // 2
                                       // per_iteration * per_iteration))
    (n0, t0, e0), (n1, t1, e1), (n2, t2, e2) = [
        (r.env_steps, r.sim_time_s, r.energy_j) for r in (to, middle, full)]
    assert n0 < n1 < n2
    # 1 %: consecutive iterations differ by 0.3 % (a rollout's T + 1 acts are the trace's
    # act rows in turn, holding a varying number of its bootstrap rows, priced apart)
    assert (t1 - t0) / (n1 - n0) == pytest.approx((t2 - t1) / (n2 - n1), rel=0.01)
    assert (e1 - e0) / (n1 - n0) == pytest.approx((e2 - e1) / (n2 - n1), rel=0.01)
    assert to.cost_to_target_usd is None and "cost_to_target_usd" not in to.metrics()


def test_unreached_target_is_one_line(dqn):
    with pytest.raises(RldseError, match=r"400 is never reached .* \(best trailing mean over "
                                         r"10 episodes: 256\.1"):
        steps_to_target(dqn, Target(400.0))


def test_cli_target(tmp_path, capsys):
    system = tmp_path / "box.yaml"
    system.write_text("name: box\ncpu: {preset: epyc-7742}\ngpu: {preset: a100-40g}\n"
                      "placement: {act: cpu, learn: gpu}\n")
    main(["simulate", str(DQN), "--system", str(system), "--target-return", "195"])
    out = capsys.readouterr().out
    assert "target return 195 (trailing mean over 10 episodes) at 6,463 env steps" in out
    # a design with another batch per update has another learning curve: refused, naming it
    assert main(["simulate", str(DQN), "--system", str(system), "--target-return", "195",
                 "--set", "workload.batch_size=128"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "workload.batch_size: 128 changes what" in err
    assert main(["simulate", str(DQN), "--system", str(system), "--target-return", "400"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("rldse: error: --target-return: 400 is never reached")
    # an hourly price without a target prices the rate: env steps per rented dollar
    main(["simulate", str(DQN), "--system", str(system), "--json",
          "--set", "price_usd_per_hour=3"])
    result = json.loads(capsys.readouterr().out)
    assert result["steps_per_usd_hour"] == pytest.approx(result["env_steps_per_s"] * 1200)
    assert result["cost_to_target_usd"] is None


def _with_seeds(trace, *curves):
    """``trace`` with further seeds' curves: (end_steps, returns) pairs."""
    import dataclasses

    from rldse.trace import SeedCurve

    seeds = [SeedCurve(seed=i + 1, end_steps=list(s), returns=list(r))
             for i, (s, r) in enumerate(curves)]
    return dataclasses.replace(trace, meta=trace.meta.model_copy(update={"seed_curves": seeds}),
                               _digest=None)


def test_several_seeds_give_the_median_and_the_range(dqn):
    own = target_steps(dqn, Target(195.0)).steps  # 6,463 on the shipped trace
    early = ([1000 * i for i in range(1, 31)], [200.0] * 30)  # reaches at the 10th episode
    late = ([1000 * i for i in range(1, 31)], [0.0] * 20 + [200.0] * 10)  # at the 30th
    spread = target_steps(_with_seeds(dqn, early, late), Target(195.0))
    assert own == 6_463
    assert (spread.steps, spread.low, spread.high) == (10_000, own, 30_000)
    assert (spread.seeds, spread.reached) == (3, 3)
    never = ([1000 * i for i in range(1, 31)], [0.0] * 30)
    spread = target_steps(_with_seeds(dqn, early, never), Target(195.0))
    assert (spread.steps, spread.low, spread.high, spread.reached) == (10_000, own, None, 2)
    with pytest.raises(RldseError, match="reached by only 1 of the 3 seeds"):
        target_steps(_with_seeds(dqn, never, never), Target(195.0))


def test_the_range_over_seeds_reaches_the_result_at_the_runs_rate(dqn):
    """Own curve at 6,463 steps, two more seeds at 10,000: the run goes to the median
    (10,000), the Result carries 6,463-10,000 and the times at the run's rate."""
    early = ([1000 * i for i in range(1, 31)], [200.0] * 30)
    trace = _with_seeds(dqn, early, early)
    assert trace.digest != dqn.digest  # the curves are part of the trace
    spread = target_steps(trace, Target(195.0))
    result = simulate(trace, to_target(parse_spec({"name": "box", "cpu": {"preset": "epyc-7742"}}),
                                       spread.steps))
    r = with_target(result, spread.steps, Target(195.0), spread=spread)
    assert (r.target_seeds, r.target_seeds_reached) == (3, 3)
    assert (r.steps_to_target, r.steps_to_target_low, r.steps_to_target_high) == \
        (10_000, 6_463, 10_000)
    rate = result.sim_time_s / result.env_steps
    assert r.time_to_target_s_low == pytest.approx(6_463 * rate)
    assert r.time_to_target_s_high == pytest.approx(10_000 * rate)
    assert "steps_to_target_high" in r.metrics()
