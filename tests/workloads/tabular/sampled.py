"""Sampled episodes of a greedy policy: the independent check on the study's exact
evaluation (rldse.studies.swiftrl_pim.data.EnvModel) and on what training learns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.workloads.tabular.train import EVAL_MAX_STEPS, greedy_policy, make_env


@dataclass(frozen=True)
class Evaluation:
    success_rate: float
    mean_return: float
    episodes: int


def evaluate_greedy(env_id: str, q: np.ndarray, episodes: int = 1000, seed: int = 0,
                    map_name: str | None = None) -> Evaluation:
    """Run the greedy policy of ``q``; success = reaching the goal (FrozenLake also ends
    in holes, reward 0; Taxi and CliffWalking end only at their goal)."""
    from gymnasium.wrappers import TimeLimit

    env = make_env(env_id, map_name)
    if env.spec.max_episode_steps is None:
        env = TimeLimit(env, EVAL_MAX_STEPS)
    policy = greedy_policy(q).tolist()
    frozen = env_id.startswith("FrozenLake")
    successes, total = 0, 0.0
    state, _ = env.reset(seed=seed)
    for _ in range(episodes):
        done = False
        while not done:
            state, reward, terminated, truncated, _ = env.step(policy[state])
            total += reward
            done = terminated or truncated
        successes += terminated and (reward > 0 or not frozen)
        state, _ = env.reset()
    return Evaluation(successes / episodes, total / episodes, episodes)
