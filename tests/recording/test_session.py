"""rldse.recording: a hand-written PyTorch DQN loop recorded, replayed and simulated."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import rldse
from rldse.cli import main
from rldse.errors import RldseError
from rldse.sim.check_replay import check_replay
from rldse.trace import load_trace

torch = pytest.importorskip("torch", reason="needs the 'torch' extra (pip install rldse[torch])")
gym = pytest.importorskip("gymnasium")

STEPS, BATCH, LEARNING_STARTS, LEARN_EVERY, TARGET_SYNC = 1500, 32, 200, 2, 250


def dqn_cartpole(path, steps: int = STEPS) -> None:
    """A minimal DQN as a user writes it: replay in numpy, a torch Q network and Adam."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    env = gym.make("CartPole-v1")
    q = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    target = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(),
                                 torch.nn.Linear(64, 2))
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    cap = 10_000
    obs_buf = np.zeros((cap, 4), np.float32)
    next_buf = np.zeros((cap, 4), np.float32)
    act_buf = np.zeros(cap, np.int64)
    rew_buf = np.zeros(cap, np.float32)
    done_buf = np.zeros(cap, np.float32)
    with rldse.recording(path, loop="off_policy", env_id="CartPole-v1", network=q,
                         batch_size=BATCH, replay_capacity=cap, learning_starts=LEARNING_STARTS,
                         learn_every=LEARN_EVERY, target_sync=TARGET_SYNC) as rec:
        with rec.phase("env_reset"):
            obs, _ = env.reset(seed=0)
        ep = 0.0
        for step in range(steps):
            eps = max(0.05, 1.0 - step / 1000)
            if rng.random() < eps:
                with rec.phase("act", flops=0, bytes=0):
                    a = int(rng.integers(2))
            else:
                with rec.phase("act"), torch.no_grad():
                    a = int(q(torch.as_tensor(obs).unsqueeze(0)).argmax())
            with rec.phase("env_step"):
                nxt, r, term, trunc, _ = env.step(a)
            with rec.phase("replay_add"):
                i = step % cap
                obs_buf[i], next_buf[i], act_buf[i], rew_buf[i], done_buf[i] = \
                    obs, nxt, a, r, term
            ep += r
            if term or trunc:
                rec.episode(ep)
                ep = 0.0
                with rec.phase("env_reset"):
                    obs, _ = env.reset()
            else:
                obs = nxt
            if step >= LEARNING_STARTS and step % LEARN_EVERY == 0:
                with rec.phase("learn"):
                    with rec.phase("replay_sample"):
                        idx = rng.integers(min(step + 1, cap), size=BATCH)
                        s, s2 = torch.as_tensor(obs_buf[idx]), torch.as_tensor(next_buf[idx])
                        act = torch.as_tensor(act_buf[idx])
                        rew, done = torch.as_tensor(rew_buf[idx]), torch.as_tensor(done_buf[idx])
                    with torch.no_grad():
                        y = rew + 0.99 * (1 - done) * target(s2).max(1).values
                    loss = torch.nn.functional.smooth_l1_loss(
                        q(s).gather(1, act[:, None]).squeeze(1), y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            if step % TARGET_SYNC == 0 and step > 0:
                with rec.phase("sync", items=1):
                    target.load_state_dict(q.state_dict())
    env.close()


@pytest.fixture(scope="module")
def dqn_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "dqn.parquet"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 4-64-2 network: more threads only contend on a busy host
    try:
        dqn_cartpole(path)
    finally:
        torch.set_num_threads(threads)
    return path


def test_hand_written_dqn_trace_is_complete(dqn_trace):
    trace = load_trace(dqn_trace)
    meta, ops = trace.meta, trace.ops
    assert meta.workload == "dqn" and meta.env_id == "CartPole-v1"
    assert meta.workload_info["layer_sizes"] == [4, 64, 2]
    assert meta.workload_info["n_params"] == 4 * 64 + 64 + 64 * 2 + 2
    assert trace.env_steps == STEPS
    assert meta.episode_returns and sum(meta.episode_returns) == STEPS - _open_episode(ops)
    counts = ops["phase"].value_counts()
    updates = len(range(LEARNING_STARTS, STEPS, LEARN_EVERY))
    assert counts["learn"] == counts["replay_sample"] == updates
    # act work from torch's flop counter: 2·B·i·o per Linear at batch 1
    greedy = ops[(ops["phase"] == "act") & (ops["flops"] > 0)]
    assert len(greedy) > 0 and set(greedy["flops"]) == {2 * (4 * 64 + 64 * 2)}
    # learn at batch 32: forward, the weight gradients of both layers and the input
    # gradient of the second (torch skips the first layer's: the input needs none)
    learn = ops[ops["phase"] == "learn"]
    fwd = 2 * BATCH * (4 * 64 + 64 * 2)
    assert set(learn["flops"]) == {fwd + fwd + 2 * BATCH * 64 * 2}
    assert set(learn["items"]) == {BATCH}
    assert meta.recorder_overhead_ns > 0
    # op time covers the loop: the glue between phases is a few statements
    assert ops["dur_s"].sum() <= meta.wall_time_s


def test_iters_count_env_steps_and_updates_and_can_be_given(tmp_path):
    """Env-side rows take the env steps closed before them (a replay_add inside its env
    step takes that step's), learn and sync their own count; ``iter=`` overrides."""
    with _recording(tmp_path) as rec:
        for _ in range(3):
            with rec.phase("act"):
                pass
            with rec.phase("env_step"), rec.phase("replay_add"):
                pass
            with rec.phase("learn"), rec.phase("replay_sample"):
                pass
        with rec.phase("sync", items=1, iter=41):
            pass
    ops = load_trace(tmp_path / "run.parquet").ops
    # empty rows' starts (each less the calibrated cut cost) may tie or swap: compare values
    by = {p: sorted(ops.loc[ops["phase"] == p, "iter"]) for p in set(ops["phase"])}
    assert by["act"] == by["env_step"] == by["replay_add"] == [0, 1, 2]
    assert by["learn"] == [0, 1, 2] and by["sync"] == [41]


def _open_episode(ops) -> int:
    """Env steps after the last episode end (CartPole pays 1 per step)."""
    resets = ops[ops["phase"] == "env_reset"]["start_s"].to_numpy()
    steps = ops[ops["phase"] == "env_step"]["start_s"].to_numpy()
    return int((steps > resets.max()).sum())


def test_hand_written_dqn_replays_and_simulates(dqn_trace, capsys):
    """One process runs every phase in turn, so replayed on its capture host with every
    op at its recorded wall time the run is exactly the sum of its phases: nothing
    overlapped, nothing omitted, no glue added. The real wall time is that plus the
    statements between phases, which a busy host stretches: not checked here."""
    assert main(["trace", "info", str(dqn_trace)]) == 0
    assert main(["simulate", str(dqn_trace), "--system", "examples/dgx1_like.yaml"]) == 0
    assert main(["check-replay", str(dqn_trace)]) == 0
    assert "TOTAL (wall)" in capsys.readouterr().out
    table, result = check_replay(load_trace(dqn_trace))
    phases = table.drop(index="TOTAL (wall)")
    recorded = phases.drop(index="sync")  # sync: the parameter copy, priced by the model
    assert (recorded["error"].abs() < 1e-9).all(), table.to_string()
    assert result.sim_time_s == pytest.approx(phases["simulated_s"].sum(), rel=1e-9)
    assert result.sim_time_s <= load_trace(dqn_trace).meta.wall_time_s


@pytest.mark.parametrize("kwargs, match", [
    ({"loop": "my_loop"},
     r"unknown loop 'my_loop' \(expected one of on_policy, off_policy, tabular\)"),
    ({"loop": "off_policy", "path": "run.csv"}, r"must end in \.parquet"),
    ({"loop": "off_policy", "batch_size": None}, r"hyperparameter 'batch_size'"),
    ({"loop": "on_policy", "network": {"pi": [4, 64, 2]}},
     r"needs network=\{'policy': \.\.\., 'value': \.\.\.\} \(or one network"),
    ({"loop": "off_policy", "device": object()}, r"hyperparameters\.device: a builtins"),
    ({"loop": "off_policy", "network": "q"}, r"expected a torch.nn.Module"),
    ({"loop": "off_policy", "actor": "a/0"}, r"apply to the on_policy loop"),
])
def test_bad_arguments_are_one_line_errors(tmp_path, kwargs, match):
    args = {"path": tmp_path / "run.parquet", "env_id": "CartPole-v1", "network": [4, 64, 2],
            "batch_size": 32, "replay_capacity": 1000, "learning_starts": 0, "learn_every": 1,
            "target_sync": 100, **kwargs}
    args = {k: v for k, v in args.items() if v is not None}
    with pytest.raises(RldseError, match=match) as err:
        rldse.recording(args.pop("path"), **args).__enter__()
    assert "\n" not in str(err.value)


def _recording(tmp_path):
    return rldse.recording(tmp_path / "run.parquet", loop="off_policy", env_id="CartPole-v1",
                           network=[4, 64, 2], batch_size=32, replay_capacity=1000,
                           learning_starts=0, learn_every=1, target_sync=100)


def test_unknown_phase_names_the_vocabulary(tmp_path):
    with pytest.raises(RldseError, match=r"unknown phase 'inference' \(allowed: env_reset, "
                                         r"env_step, act, .*learn"), _recording(tmp_path) as rec:
        rec.phase("inference")
    assert not (tmp_path / "run.parquet").exists()


def test_missing_phase_is_named_at_close(tmp_path):
    with pytest.raises(RldseError, match="recorded no 'act' phase"), \
            _recording(tmp_path) as rec, rec.phase("env_step"):
        pass


class FakeClock:
    """A perf_counter_ns that moves 100 ns per read and as far as ``spin`` says: the
    recorder's bookkeeping checked exactly, whatever else runs on the host."""

    def __init__(self) -> None:
        self.ns = 10**9

    def __call__(self) -> int:
        self.ns += 100
        return self.ns

    def spin(self, seconds: float) -> None:
        self.ns += round(seconds * 1e9)


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    for module in ("rldse.recording.cuts", "rldse.recording.session"):
        monkeypatch.setattr(importlib.import_module(module), "perf_counter_ns", fake)
    return fake


def test_nested_phase_is_exclusive(tmp_path, clock):
    with _recording(tmp_path) as rec:
        for _ in range(3):
            for phase in ("act", "env_step", "replay_add"):
                with rec.phase(phase):
                    pass
        with rec.phase("learn"), rec.phase("replay_sample"):
            clock.spin(2e-3)
    ops = load_trace(tmp_path / "run.parquet").ops
    sample = ops.loc[ops["phase"] == "replay_sample", "dur_s"].iloc[0]
    learn = ops.loc[ops["phase"] == "learn", "dur_s"].iloc[0]
    assert sample == pytest.approx(2e-3, abs=1e-6) and learn < 1e-6


def test_nested_phases_whole_cost_leaves_the_outer_row(tmp_path, clock):
    """5000 empty phases nested in one: the outer row keeps none of their whole cost (the
    calibrated cost of an empty ``with rec.phase``), not merely less their cuts' bias."""
    with _recording(tmp_path) as rec:
        for phase in ("act", "replay_sample", "learn"):
            with rec.phase(phase):
                pass
        with rec.phase("env_step"):
            for _ in range(5000):
                with rec.phase("replay_add"):
                    pass
        inner_cost_s = 5000 * rec.phase_cost_ns / 1e9
    ops = load_trace(tmp_path / "run.parquet").ops
    assert inner_cost_s > 0
    assert ops.loc[ops["phase"] == "env_step", "dur_s"].iloc[0] < 0.01 * inner_cost_s


def test_counting_work_leaves_no_gap_between_rows(tmp_path):
    """Counting a network's work (FlopCounterMode, ms) is the recorder's time: it must not
    appear between rows, where the actor-learner program reads IPC handoffs."""
    net = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    with rldse.recording(tmp_path / "run.parquet", loop="off_policy", env_id="CartPole-v1",
                         network=net, batch_size=32, replay_capacity=1000, learning_starts=0,
                         learn_every=1, target_sync=100) as rec:
        for phase in ("env_step", "act", "replay_add", "env_step", "learn", "replay_sample"):
            with rec.phase(phase):  # the first act and learn count their work
                pass
    ops = load_trace(tmp_path / "run.parquet").ops.sort_values("start_s", kind="stable")
    gaps = ops["start_s"].to_numpy()[1:] - (ops["start_s"] + ops["dur_s"]).to_numpy()[:-1]
    assert gaps.max() < 0.5e-3  # counting the learn work alone takes several ms


def test_rows_keep_cpu_time(tmp_path):
    import numpy as np

    a = np.ones((64, 64))
    with _recording(tmp_path) as rec:
        for _ in range(3):
            with rec.phase("act"):
                for _ in range(20):
                    a = a @ a / 64.0
            with rec.phase("env_step"), rec.phase("replay_add"):
                pass
            with rec.phase("learn"), rec.phase("replay_sample"):
                pass
    ops = load_trace(tmp_path / "run.parquet").ops
    assert ops["cpu_s"].notna().all()
    assert (ops["cpu_s"] <= ops["dur_s"]).all()
    assert (ops.loc[ops["phase"] == "act", "cpu_s"] > 0).all()


def test_one_network_on_policy_and_numpy_hyperparameters(tmp_path):
    """An on-policy loop with one network (REINFORCE's policy, a shared actor-critic body)
    is described as one network; numpy hyperparameters are taken as plain numbers."""
    from rldse.recording.session import Recording

    rec = Recording(tmp_path / "run.parquet", loop="on_policy", env_id="CartPole-v1",
                    network=[4, 128, 2], rollout_len=np.int64(200),
                    minibatch_size=np.int64(200), epochs=1, envs_per_actor=1)
    assert set(rec.nets) == {"policy"}
    assert rec.info["value_sizes"] == [] and "network" in rec.info
    assert type(rec.hyperparameters["rollout_len"]) is int
