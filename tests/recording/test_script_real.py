"""`rldse capture script` on scripts written as their authors write them (tests/recording/
data: DQN, PPO and continuous-action SAC in CleanRL's style, a DQN with its own numpy ring
buffer class, one with its buffer in bare numpy arrays, PyTorch's REINFORCE example), run
without edits: what each learned (episode returns, target copies, seed, arguments) is kept,
each trace is validated and simulated, a target return works on each; a run whose trace
cannot be written leaves its raw record; torch's thread count is pinned and recorded."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the 'torch' extra")
pytest.importorskip("stable_baselines3", reason="the 'sb3' extra")

import torch  # noqa: E402

from rldse.cli import main  # noqa: E402
from rldse.trace import load_trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SYSTEM = str(ROOT / "examples" / "dgx1_like.yaml")


CPU_ONLY = str(ROOT / "examples" / "cpu_only.yaml")
#: The scripts written the way CleanRL's are, and the hand-written array-buffer DQN.
CLEANRL_STYLE = ("dqn", "ppo", "sac_continuous_action", "dqn_arrays")


def capture(tmp_path: Path, name: str, *flags: str) -> Path:
    out = tmp_path / f"{name}.parquet"
    code = main(["capture", "script", str(DATA / f"{name}.py"), "-o", str(out), *flags])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """Each script's trace, and the episodic returns it printed as it ran."""
    folder = tmp_path_factory.mktemp("real")
    runs = {}
    for name in ("dqn_numpy_buffer", "reinforce", *CLEANRL_STYLE):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            out = capture(folder, name)
        runs[name] = (out, [float(r) for r in
                            re.findall(r"episodic_return=([-0-9.e]+)", text.getvalue())])
    return runs


@pytest.fixture(scope="module")
def traces(printed):
    return {name: out for name, (out, _) in printed.items()}


def phases(trace) -> dict[str, int]:
    return trace.ops["phase"].astype(str).value_counts().to_dict()


def test_dqn_with_its_numpy_buffer_class(traces):
    trace = load_trace(traces["dqn_numpy_buffer"])
    assert trace.meta.workload == "dqn"
    counts = phases(trace)
    # 400 steps; learning from step 101 (> learning_starts 100) at even steps: 149 updates
    assert counts["env_step"] == counts["replay_add"] == counts["act"] == 400
    assert counts["learn"] == counts["replay_sample"] == 149
    info, hp = trace.meta.workload_info, trace.meta.hyperparameters
    # QNetwork sized by numpy integers (single_action_space.n), stored as plain ints
    assert info["layer_sizes"] == [4, 120, 84, 2]
    assert all(type(w) is int for w in info["layer_sizes"])
    assert info["replay_capacity"] == 1000 and info["batch_size"] == 32
    assert info["learning_starts"] == 102 and info["learn_every"] == 2
    assert hp["replay_classes"] == ["__main__.ReplayBuffer"]


def test_cleanrl_style_dqn(traces):
    trace = load_trace(traces["dqn"])
    info, hp = trace.meta.workload_info, trace.meta.hyperparameters
    assert trace.meta.workload == "dqn"
    # 1600 steps, an update every 10 after step 400 (batch 64), SB3's buffer of 2000
    assert (info["learn_every"], info["learning_starts"], info["batch_size"]) == (10, 410, 64)
    assert info["replay_capacity"] == 2000 and info["layer_sizes"] == [4, 120, 84, 2]
    assert hp["replay_classes"] == ["stable_baselines3.common.buffers.ReplayBuffer"]


def test_cleanrl_style_ppo_agent_with_actor_and_critic(traces):
    trace = load_trace(traces["ppo"])
    info = trace.meta.workload_info
    assert trace.meta.workload == "actor_learner"
    # 2 iterations of 32 steps × 4 envs, 2 epochs of 4 minibatches of 32
    assert (info["rollout_len"], info["envs_per_actor"]) == (32, 4)
    assert (info["batch_size"], info["epochs"]) == (32, 2)
    assert info["policy_sizes"] == [4, 64, 64, 2] and info["value_sizes"] == [4, 64, 64, 1]
    counts = phases(trace)
    assert counts["learn"] == 16 and counts["act"] == 2 * 32 and counts["sync"] == 2


def test_cleanrl_style_sac_trains_critics_actor_and_temperature_as_one_update(traces):
    """SAC's critic step, its delayed actor steps and the temperature's form one learn per
    env step; every trained network's work is counted, the critics' on observation and
    action."""
    trace = load_trace(traces["sac_continuous_action"])
    info = trace.meta.workload_info
    counts = phases(trace)
    assert trace.meta.workload == "dqn"
    # 600 steps, an update at every step after step 100: 499
    assert counts["learn"] == counts["replay_sample"] == 499
    layers = {layer["name"] for layer in info["network"]["layers"]}
    assert {"q.fc1", "part1.fc1", "part2.fc_mean"} <= layers  # qf1, qf2, the actor
    assert info["batch_size"] == 32 and info["replay_capacity"] == 5000


@pytest.mark.parametrize("name, seed, target_sync", [
    ("dqn", 1, 500),  # param.data.copy_ every 500 steps
    ("sac_continuous_action", 1, 1),  # Polyak by param.data.copy_ at every step
    ("dqn_arrays", 3, 250),  # load_state_dict every 250 steps
    ("dqn_numpy_buffer", 1, 50),
    ("ppo", 1, None),
    ("reinforce", 543, None),
])
def test_what_the_run_learned_is_kept(printed, name, seed, target_sync):
    """The returns the script printed from ``infos`` (REINFORCE prints none: its returns
    are its rewards' sums), the target copy however it is written, the script's seed (its
    first env reset's) and its parsed arguments."""
    out, returns = printed[name]
    meta = load_trace(out).meta
    if name != "reinforce":
        assert returns and meta.episode_returns == pytest.approx(returns, rel=1e-6)
    else:  # 4 episodes, each one's return its steps' reward sum (1 per CartPole step)
        assert len(meta.episode_returns) == 4
        assert sum(meta.episode_returns) == phases(load_trace(out))["env_step"]
    assert meta.seed == seed and meta.hyperparameters["seed_from"] == \
        "the script's first env reset"
    assert meta.hyperparameters["script_options"]["seed"] == seed
    assert meta.workload_info.get("target_sync") == target_sync
    assert "target_sync" not in meta.hyperparameters["inferred"]


def test_exploring_acts_run_no_network(traces):
    """Every env step has an act; an epsilon-random one ran no forward: no work, no
    time (the forwards the script ran are the acts that carry work)."""
    ops = load_trace(traces["dqn"]).ops
    acts = ops[ops["phase"] == "act"]
    explored = acts[acts["flops"] == 0]
    assert len(acts) == phases(load_trace(traces["dqn"]))["env_step"]
    assert 0 < len(explored) < len(acts) and (explored["dur_s"] == 0).all()
    assert (acts.loc[acts["flops"] > 0, "dur_s"] > 0).all()


def test_a_replay_buffer_in_bare_numpy_arrays(traces):
    """Arrays written in place and sampled by np.random.randint: the arrays' length is the
    capacity, each index draw a sample of its batch, the writes untimed adds."""
    trace = load_trace(traces["dqn_arrays"])
    info, counts = trace.meta.workload_info, phases(trace)
    assert trace.meta.workload == "dqn" and info["replay_capacity"] == 1500
    assert counts["replay_sample"] == counts["learn"] and info["batch_size"] == 32
    # 2000 steps, an update every 4 from step 300: 425
    assert counts["learn"] == 425 and (info["learn_every"], info["learning_starts"]) == (4, 300)
    assert "replay_add" in trace.meta.hyperparameters["inferred"]
    samples = trace.ops[trace.ops["phase"] == "replay_sample"]
    assert (samples["items"] == 32).all() and (samples["dur_s"] > 0).all()


@pytest.mark.parametrize("name", CLEANRL_STYLE)
def test_check_replay_reads_act_and_learn_within_10_percent(traces, name):
    from rldse.sim.check_replay import check_replay

    table, _ = check_replay(load_trace(traces[name]))
    for phase in ("act", "learn"):
        assert abs(table.loc[phase, "error"]) < 0.1, (phase, table.loc[phase])


@pytest.mark.parametrize("name", CLEANRL_STYLE)
def test_target_return_on_each_capture(traces, name, capsys):
    """A return the run reached (its median episode's) is reached in simulation too."""
    import statistics

    goal = statistics.median(load_trace(traces[name]).meta.episode_returns)
    code = main(["simulate", str(traces[name]), "--system", CPU_ONLY, "--target-return",
                 f"{goal:g}", "--smoothing-episodes", "1"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert f"target return {goal:g}" in out.out


def test_seed_flag_overrides_the_scripts(tmp_path):
    out = capture(tmp_path, "reinforce", "--seed", "7", "--", "--episodes", "1")
    meta = load_trace(out).meta
    assert meta.seed == 7 and meta.hyperparameters["seed_from"] == "--seed"
    assert meta.hyperparameters["script_args"] == ["--episodes", "1"]


def test_reinforce_one_policy_network(traces):
    trace = load_trace(traces["reinforce"])
    info = trace.meta.workload_info
    assert trace.meta.workload == "actor_learner"
    assert info["value_sizes"] == [] and "network" in info  # the policy, described
    assert info["epochs"] == 1
    ops = trace.ops
    learn = ops[ops["phase"] == "learn"]
    acts = ops[ops["phase"] == "act"]
    assert len(learn) == 4  # one update per episode (--episodes 4)
    # each update trains on its episode's acts: its batch is their count
    assert learn["items"].sum() == len(acts) == phases(trace)["env_step"]
    assert (learn["flops"] > 0).all() and (learn["dur_s"] > 0).all()


@pytest.mark.parametrize("name", ["dqn", "dqn_numpy_buffer", "ppo", "reinforce",
                                  "sac_continuous_action", "dqn_arrays"])
def test_real_script_traces_simulate(traces, name, capsys):
    learner = ["--set", "workload.learner=sync"] if "dqn" in name else []
    code = main(["simulate", str(traces[name]), "--system", SYSTEM,
                 "--set", "workload.env_steps=2000", *learner])
    assert code == 0, capsys.readouterr().err


def test_torch_threads_pinned_and_recorded(traces, tmp_path):
    load = load_trace(traces["reinforce"]).meta.host.load
    assert (load.torch_threads, load.torch_threads_set_by) == (1, "rldse")
    before = torch.get_num_threads()
    out = capture(tmp_path, "reinforce", "--torch-threads", "2", "--", "--episodes", "1")
    load = load_trace(out).meta.host.load
    assert (load.torch_threads, load.torch_threads_set_by) == (2, "user")
    assert torch.get_num_threads() == before  # restored


def test_bad_thread_count_and_unknown_replay_class_refused_before_training(tmp_path,
                                                                          capsys):
    script = tmp_path / "never.py"
    script.write_text("class Memory:\n    pass\nraise SystemExit(3)\n")  # 3: it ran
    for flags, word in ((["--torch-threads", "-1"], "--torch-threads"),
                        (["--replay", "Buffer"], "--replay Buffer")):
        code = main(["capture", "script", str(script), "-o", str(tmp_path / "x.parquet"),
                     *flags])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and word in err and "status 3" not in err


def test_a_run_whose_trace_cannot_be_written_leaves_its_raw_record(tmp_path, monkeypatch,
                                                                   capsys):
    import pyarrow.parquet as pq

    from rldse.trace import Trace

    def fail(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Trace, "save", fail)
    out = tmp_path / "run.parquet"
    code = main(["capture", "script", str(DATA / "reinforce.py"), "-o", str(out), "--",
                 "--episodes", "2"])
    err = capsys.readouterr().err
    raw = tmp_path / "run.raw.parquet"
    assert code == 2 and err.count("\n") == 1 and str(raw) in err
    assert not out.exists()
    table = pq.read_table(raw)
    kinds = set(table.column("kind").to_pylist())
    assert {"env_step", "forward", "backward", "opt"} <= kinds
    context = json.loads(table.schema.metadata[b"rldse.raw"])
    assert context["script"] == "reinforce.py" and context["args"] == ["--episodes", "2"]
    assert context["modules"][0]["class"] == "Policy"
    assert len(context["episode_returns"]) == 2 and context["seed"] == 543


LIST_DQN = '''
import random
from collections import deque

import gymnasium as gym
import numpy as np
import torch
from torch import nn

env = gym.make("CartPole-v1")
q = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(q.parameters())
memory = deque(maxlen=500)
obs, _ = env.reset(seed=0)
for step in range(120):
    with torch.no_grad():
        action = int(q(torch.as_tensor(obs).unsqueeze(0)).argmax())
    next_obs, reward, term, trunc, _ = env.step(action)
    memory.append((obs, action, reward, next_obs, term))
    obs = next_obs if not (term or trunc) else env.reset()[0]
    if step >= 40:
        batch = random.sample(memory, 16)
        o = torch.as_tensor(np.array([b[0] for b in batch]))
        a = torch.as_tensor([b[1] for b in batch]).unsqueeze(1)
        loss = q(o).gather(1, a).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
'''


def test_a_deque_replay_buffer_sampled_by_random_sample(tmp_path):
    script = tmp_path / "list_dqn.py"
    script.write_text(LIST_DQN)
    out = tmp_path / "list.parquet"
    assert main(["capture", "script", str(script), "-o", str(out)]) == 0
    trace = load_trace(out)
    counts = phases(trace)
    assert trace.meta.workload == "dqn" and counts["replay_sample"] == counts["learn"] == 80
    assert trace.meta.workload_info["replay_capacity"] == 500  # the deque's maxlen
    assert "replay_add" in trace.meta.hyperparameters["inferred"]  # appends: untimed
    adds = trace.ops[trace.ops["phase"] == "replay_add"]
    assert len(adds) == 120 and (adds["dur_s"] == 0).all()


def test_a_buffer_with_other_method_names_is_named_by_flag(tmp_path, capsys):
    """Unrecognised storage is refused saying how to name it (the raw record kept); a
    named class with other method names is refused before training unless its methods
    are named; named, the loop records as off-policy."""
    script = tmp_path / "memory_dqn.py"
    script.write_text(LIST_DQN.replace("memory = deque(maxlen=500)", "memory = Memory()")
                      .replace("memory.append(", "memory.remember(")
                      .replace("random.sample(memory, 16)", "memory.recall(16)")
                      .replace("env = gym.make", '''
class Memory:
    def __init__(self):
        self.data = deque(maxlen=500)

    def remember(self, t):
        self.data.append(t)

    def recall(self, k):
        return [self.data[i] for i in np.random.randint(0, len(self.data), k)]


env = gym.make''', 1))
    out = tmp_path / "m.parquet"
    assert main(["capture", "script", str(script), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--replay CLASS" in err and (tmp_path / "m.raw.parquet").exists()
    assert main(["capture", "script", str(script), "--replay", "Memory", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "CLASS:ADD,SAMPLE" in err and err.count("\n") == 1
    assert main(["capture", "script", str(script), "--replay", "Memory:remember,recall",
                 "-o", str(out)]) == 0
    trace = load_trace(out)
    counts = phases(trace)
    assert trace.meta.workload == "dqn" and counts["replay_add"] == 120
    assert counts["replay_sample"] == counts["learn"] == 80
    assert trace.meta.workload_info["replay_capacity"] == 500  # the deque it holds


def test_a_script_that_raises_mid_run_keeps_what_ran(tmp_path, capsys):
    script = tmp_path / "crash.py"
    script.write_text(LIST_DQN.replace("    if step >= 40:", "    if step == 30:\n"
                                       "        raise ValueError('diverged')\n"
                                       "    if step >= 40:"))
    out = tmp_path / "c.parquet"
    assert main(["capture", "script", str(script), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    line = LIST_DQN.splitlines().index("    if step >= 40:") + 2  # the raise's line
    assert err.count("\n") == 1 and f"raised ValueError at line {line}: diverged" in err
    raw = tmp_path / "c.raw.parquet"
    assert str(raw) in err and not out.exists()
    import pyarrow.parquet as pq

    kinds = pq.read_table(raw).column("kind").to_pylist()
    assert kinds.count("env_step") == 31


@pytest.mark.slow
@pytest.mark.parametrize("name, args", [
    ("dqn", ["--total-timesteps", "3000", "--learning-starts", "500"]),
    ("ppo", ["--total-timesteps", "2048", "--num-steps", "128"]),
])
def test_longer_cleanrl_runs_replay_their_loop(tmp_path, name, args):
    """Longer runs replayed on the capture host: the loop's wall time (first hooked call to
    the end) within 30 % (code outside the hooks, GAE and bookkeeping, is not recorded;
    measured on a loaded 2-core host: DQN -7 %, PPO -15 %)."""
    from rldse.sim.check_replay import check_replay

    out = capture(tmp_path, name, "--", *args)
    table, _ = check_replay(load_trace(out))
    assert abs(table.loc["TOTAL (wall)", "error"]) < 0.3


#: An A2C-style loop whose one module has a shared body and two heads (its forward returns
#: logits and value), trained twice per rollout.
SHARED_AC = '''import gymnasium as gym
import torch
from torch import nn
from torch.distributions import Categorical


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 64), nn.Tanh())
        self.pi = nn.Linear(64, 2)
        self.v = nn.Linear(64, 1)

    def forward(self, x):
        h = self.body(x)
        return self.pi(h), self.v(h)


envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
net = ActorCritic()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
obs, _ = envs.reset(seed=0)
for it in range(3):
    buf_obs, buf_a, buf_r = [], [], []
    for t in range(8):
        x = torch.as_tensor(obs)
        with torch.no_grad():
            logits, v = net(x)
        a = Categorical(logits=logits).sample()
        obs, r, term, trunc, _ = envs.step(a.numpy())
        buf_obs.append(x)
        buf_a.append(a)
        buf_r.append(torch.as_tensor(r))
    X, A, R = torch.cat(buf_obs), torch.cat(buf_a), torch.cat(buf_r).float()
    for epoch in range(2):
        logits, v = net(X)
        adv = R - v.squeeze(-1)
        loss = -(Categorical(logits=logits).log_prob(A) * adv.detach()).mean() + adv.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
'''


def test_a_shared_actor_critic_body(tmp_path, capsys):
    script = tmp_path / "shared_ac.py"
    script.write_text(SHARED_AC)
    out = tmp_path / "ac.parquet"
    assert main(["capture", "script", str(script), "-o", str(out)]) == 0
    trace = load_trace(out)
    info = trace.meta.workload_info
    assert trace.meta.workload == "actor_learner" and info["value_sizes"] == []
    layers = [layer["name"] for layer in info["network"]["layers"]]
    assert layers[0] == "body.0" and {"pi", "v"} <= set(layers)  # one network, both heads
    assert (info["rollout_len"], info["envs_per_actor"], info["epochs"]) == (8, 2, 2)
    code = main(["simulate", str(out), "--system", SYSTEM, "--set", "workload.env_steps=2000"])
    assert code == 0, capsys.readouterr().err
