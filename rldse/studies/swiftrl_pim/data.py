"""The env's transition model (data generation and exact evaluation of a policy) and the
datasets the study learns from."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd

from rldse.studies.swiftrl_pim.params import STREAMS
from rldse.workloads.tabular.swiftrl_format import read_swiftrl
from rldse.workloads.tabular.train import EVAL_MAX_STEPS, greedy_policy


class EnvModel:
    """Gymnasium's tabular model of an env as arrays (outcomes padded to K per (s, a))."""

    def __init__(self, env_id: str) -> None:
        env = gym.make(env_id)
        u = env.unwrapped
        self.env_id = env_id
        self.n_states, self.n_actions = int(env.observation_space.n), int(env.action_space.n)
        self.horizon = env.spec.max_episode_steps or EVAL_MAX_STEPS
        self.init = np.asarray(u.initial_state_distrib, np.float64)
        k = max(len(u.P[s][a]) for s in range(self.n_states) for a in range(self.n_actions))
        shape = (self.n_states, self.n_actions, k)
        self.prob, self.reward = np.zeros(shape), np.zeros(shape)
        self.next, self.term = np.zeros(shape, np.int64), np.zeros(shape, bool)
        for s in range(self.n_states):
            for a in range(self.n_actions):
                for i, (p, sp, r, done) in enumerate(u.P[s][a]):
                    self.prob[s, a, i], self.next[s, a, i] = p, sp
                    self.reward[s, a, i], self.term[s, a, i] = r, done
        # success = terminating at the goal: FrozenLake also terminates in holes (reward 0)
        frozen = env_id.startswith("FrozenLake")
        self.success = self.term & ((self.reward > 0) | (not frozen))

    def generate(self, n: int, seed: int) -> pd.DataFrame:
        """n transitions of the uniform-random policy, episodes cut at the time limit (the
        cut transition is kept; the next row starts a new episode), in STREAMS streams."""
        rng = np.random.default_rng(seed)
        m = min(STREAMS, n)
        length = -(-n // m)
        cum = np.cumsum(self.prob, axis=2)
        cum[..., -1] = 1.0
        out = np.zeros((4, m, length), np.int64)
        rew = np.zeros((m, length))
        s = rng.choice(self.n_states, size=m, p=self.init)
        t_ep = np.zeros(m, np.int64)
        for t in range(length):
            a = rng.integers(self.n_actions, size=m)
            k = (rng.random(m)[:, None] > cum[s, a]).sum(axis=1)
            sp, r, done = self.next[s, a, k], self.reward[s, a, k], self.term[s, a, k]
            out[0, :, t], out[1, :, t], out[3, :, t], rew[:, t] = s, a, sp, r
            t_ep += 1
            reset = done | (t_ep >= self.horizon)
            s = np.where(reset, rng.choice(self.n_states, size=m, p=self.init), sp)
            t_ep[reset] = 0
        flat = out.reshape(4, -1)[:, :n]
        return pd.DataFrame({"state": flat[0].astype(np.int32),
                             "action": flat[1].astype(np.int32),
                             "reward": rew.reshape(-1)[:n].astype(np.float32),
                             "next_state": flat[3].astype(np.int32)})

    def evaluate(self, policy: np.ndarray) -> tuple[float, float]:
        """(success probability, expected return) of a deterministic policy from the
        initial distribution within the time limit: exact, no sampling."""
        idx = np.arange(self.n_states)
        p, sp = self.prob[idx, policy], self.next[idx, policy]
        r, term, win = self.reward[idx, policy], self.term[idx, policy], self.success[idx, policy]
        d, success, ret = self.init.copy(), 0.0, 0.0
        for _ in range(self.horizon):
            mass = d[:, None] * p
            success += float(mass[win].sum())
            ret += float((mass * r).sum())
            d = np.bincount(sp[~term], weights=mass[~term], minlength=self.n_states)
        return success, ret

    def optimal_policy(self, gamma: float, tol: float = 1e-10) -> np.ndarray:
        """Value iteration at the study's discount (terminal outcomes end the sum)."""
        v = np.zeros(self.n_states)
        for _ in range(100_000):
            q = (self.prob * (self.reward + gamma * v[self.next] * ~self.term)).sum(axis=2)
            new = q.max(axis=1)
            if np.abs(new - v).max() < tol:
                break
            v = new
        return greedy_policy(q)


def dataset(study_dir: Path, file: str | None, model: EnvModel, n: int,
             seed: int) -> tuple[pd.DataFrame, str]:
    """SwiftRL's file when one is named (relative paths from the study folder), else n
    generated transitions."""
    if file:
        path = Path(file).expanduser()
        path = path if path.is_absolute() else study_dir / path
        return read_swiftrl(path), path.name
    return model.generate(n, seed), f"{model.env_id.split('-')[0]}_random_{n}_seed{seed}"



def data_stats(env_id: str, name: str, data: pd.DataFrame) -> dict:
    r = data.reward.to_numpy()
    return {"env": env_id, "dataset": name, "transitions": len(data),
            "distinct_states": int(data.state.nunique()),
            "rewards (value: count)": ", ".join(
                f"{v:g}: {c:,}" for v, c in zip(*np.unique(r, return_counts=True),
                                                strict=True))}

