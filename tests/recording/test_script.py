"""`rldse capture script`: a CleanRL-style single-file PyTorch DQN, run unedited, gives a
trace that the simulator accepts."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the 'torch' extra")
pytest.importorskip("stable_baselines3", reason="the 'sb3' extra")

from rldse.cli import main  # noqa: E402
from rldse.trace import load_trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

#: CleanRL's dqn.py loop (vector env, SB3 ReplayBuffer, target copy by load_state_dict),
#: shortened: 600 steps, updates every 2 from step 200, a target copy every 100.
DQN_SCRIPT = textwrap.dedent('''
    import sys
    import gymnasium as gym
    import numpy as np
    import torch
    from torch import nn
    from stable_baselines3.common.buffers import ReplayBuffer

    steps = int(sys.argv[1])
    torch.manual_seed(0)
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
    q = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                      nn.Linear(64, 2))
    target = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                           nn.Linear(64, 2))
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    rb = ReplayBuffer(1000, envs.single_observation_space, envs.single_action_space, "cpu",
                      handle_timeout_termination=False)
    rng = np.random.default_rng(0)
    obs, _ = envs.reset(seed=0)
    for step in range(steps):
        if rng.random() < 0.5:
            actions = np.array([envs.single_action_space.sample()])
        else:
            with torch.no_grad():
                actions = q(torch.tensor(obs)).argmax(1).numpy()
        next_obs, rewards, term, trunc, infos = envs.step(actions)
        rb.add(obs, next_obs, actions, rewards, term, infos)
        obs = next_obs
        if step >= 200 and step % 2 == 0:
            data = rb.sample(32)
            with torch.no_grad():
                y = data.rewards.flatten() + 0.99 * target(data.next_observations).max(1).values \\
                    * (1 - data.dones.flatten())
            old = q(data.observations).gather(1, data.actions).squeeze()
            loss = nn.functional.mse_loss(y, old)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if step % 100 == 0:
            target.load_state_dict(q.state_dict())
''')


class _Bar:
    """Stands in for the capture's progress bar: keeps what it was told."""

    def __init__(self, total, desc, enabled, unit):
        self.desc, self.unit, self.updates = desc, unit, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n):
        self.updates.append(n)


@pytest.fixture(scope="module")
def bars():
    return []


@pytest.fixture(scope="module")
def script_trace(tmp_path_factory, bars):
    import rldse.cli.capture as capture

    folder = tmp_path_factory.mktemp("script")
    script = folder / "dqn.py"
    script.write_text(DQN_SCRIPT)
    out = folder / "run.parquet"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(capture, "progress_bar", lambda *a, **k: bars.append(_Bar(*a, **k))
                   or bars[-1])
        assert main(["capture", "script", str(script), "-o", str(out), "--", "600"]) == 0
    return out


def test_script_capture_counts_env_steps_on_its_bar(script_trace, bars):
    (bar,) = bars
    assert (bar.desc, bar.unit) == ("capture dqn.py", "env step")
    assert bar.updates == [1] * 600  # one vector step of one env per loop pass


def test_script_trace_has_the_dqn_phases_and_work(script_trace):
    trace = load_trace(script_trace)
    assert trace.meta.workload == "dqn" and trace.meta.env_id == "CartPole-v1"
    counts = trace.ops["phase"].astype(str).value_counts()
    assert counts["env_step"] == 600 and counts["replay_add"] == 600
    assert counts["learn"] == 200 and counts["replay_sample"] == 200
    info = trace.meta.workload_info
    assert info["layer_sizes"] == [4, 64, 64, 2] and info["batch_size"] == 32
    assert info["learning_starts"] == 200 and info["learn_every"] == 2
    assert info["target_sync"] == 100 and info["replay_capacity"] == 1000
    learn = trace.ops[trace.ops["phase"] == "learn"]
    # torch's counter on the learned network: forward and dW GEMMs of every layer (2·B·i·o
    # each), dX of all but the first (the observations need no gradient)
    fwd = 2 * 32 * (4 * 64 + 64 * 64 + 64 * 2)
    assert (learn["flops"] == 2 * fwd + 2 * 32 * (64 * 64 + 64 * 2)).all()
    act = trace.ops[trace.ops["phase"] == "act"]
    # an act per env step: a greedy one runs the network, a random one (about half) none
    assert len(act) == 600 and (act["items"] == 1).all()
    greedy = act["flops"] > 0
    assert (act.loc[greedy, "flops"] == 2 * (4 * 64 + 64 * 64 + 64 * 2)).all()
    assert 200 < greedy.sum() < 400 and (act.loc[~greedy, "dur_s"] == 0).all()


def test_script_trace_simulates(script_trace, capsys):
    code = main(["simulate", str(script_trace), "--system",
                 str(ROOT / "examples" / "dgx1_like.yaml"), "--set", "workload.learner=sync"])
    assert code == 0, capsys.readouterr().err


def test_script_that_fails_is_one_line(tmp_path, capsys):
    script = tmp_path / "bad.py"
    script.write_text("import sys\nsys.exit(3)\n")
    code = main(["capture", "script", str(script), "-o", str(tmp_path / "x.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "status 3" in err
