"""The study's data (swiftrl_pim.data): its generator and exact policy evaluation agree
with Gymnasium, and SwiftRL-format files are read by path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rldse.studies.swiftrl_pim.data import EnvModel, dataset
from rldse.workloads.tabular.swiftrl_format import read_swiftrl, write_swiftrl
from tests.workloads.tabular.sampled import evaluate_greedy

SWIFTRL = Path("/work/shared/data/swiftrl")


@pytest.mark.parametrize("env_id", ["FrozenLake-v1", "Taxi-v4"])
def test_generated_data_follow_the_env(env_id):
    """Every generated transition is possible under the env's model, each stream starts
    from the initial distribution and restarts there after a terminal step."""
    model = EnvModel(env_id)
    data = model.generate(20_000, seed=3)
    s, a, sp = (data[c].to_numpy() for c in ("state", "action", "next_state"))
    possible = (model.next[s, a] == sp[:, None]) & (model.prob[s, a] > 0)
    assert possible.any(axis=1).all()
    assert set(np.unique(a)) == set(range(model.n_actions))
    k = possible.argmax(axis=1)
    ended = model.term[s, a, k][:-1]
    after = s[1:][ended]
    assert len(after) > 0 and (model.init[after] > 0).all()
    assert data.equals(model.generate(20_000, seed=3))


def test_generated_frozenlake_matches_swiftrl_rate():
    """A random policy on slippery 4x4 FrozenLake reaches the goal about 1.8 times per
    1,000 transitions (SwiftRL's 1M file: 1,826)."""
    data = EnvModel("FrozenLake-v1").generate(200_000, seed=0)
    rate = float((data.reward > 0).mean())
    assert 0.0014 < rate < 0.0023
    if (SWIFTRL / "FrozenLake_trajectories_100k.txt").is_file():
        theirs = read_swiftrl(SWIFTRL / "FrozenLake_trajectories_100k.txt")
        assert abs(rate - float((theirs.reward > 0).mean())) < 0.0006


def test_exact_evaluation_matches_sampled_episodes():
    model = EnvModel("FrozenLake-v1")
    policy = model.optimal_policy(0.95)
    success, ret = model.evaluate(policy)
    q = np.eye(model.n_actions)[policy]
    sampled = evaluate_greedy("FrozenLake-v1", q, episodes=3000, seed=1)
    se = (success * (1 - success) / 3000) ** 0.5
    assert abs(sampled.success_rate - success) < 4 * se
    assert ret == pytest.approx(success)  # FrozenLake pays 1 at the goal only
    assert 0.7 < success < 0.76


def test_swiftrl_files_are_read_by_path(tmp_path):
    """data.files / multi_agent.file: a path relative to the study folder, or absolute."""
    model = EnvModel("Taxi-v4")
    data = model.generate(1_000, seed=0)
    write_swiftrl(data, tmp_path / "Taxi_trajectories_1k.txt")
    for path in ("Taxi_trajectories_1k.txt", str(tmp_path / "Taxi_trajectories_1k.txt")):
        got, name = dataset(tmp_path, path, model, 10, 0)
        assert name == "Taxi_trajectories_1k.txt" and len(got) == 1_000
        assert got.equals(data)
