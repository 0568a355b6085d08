"""RldseCallback: SB3 training recorded with no other change, replayed and simulated."""

from __future__ import annotations

import pytest

from rldse.cli import main
from rldse.errors import RldseError
from rldse.sim.check_replay import check_replay
from rldse.trace import load_trace

torch = pytest.importorskip("torch", reason="needs the 'sb3' extra (pip install rldse[sb3])")
sb3 = pytest.importorskip("stable_baselines3",
                          reason="needs the 'sb3' extra (pip install rldse[sb3])")
from rldse.integrations.sb3 import RldseCallback  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks: more threads only contend on a busy host
    yield
    torch.set_num_threads(threads)


def learn(algo: str, env_id: str, steps: int, path, **kwargs):
    model = getattr(sb3, algo)("MlpPolicy", env_id, seed=0, device="cpu", **kwargs)
    model.learn(steps, callback=RldseCallback(path))
    return model


def replays_consistently(path, capsys) -> None:
    """`rldse check-replay` runs, and its replay on the capture host (every op at its recorded
    wall time) is at least the sum of its phases (one process: nothing overlaps) and at
    most the run's wall time (what the program adds is measured glue, never invented).
    How close to the wall it comes depends on the host's load: benchmarks/speed/sb3_*.py."""
    assert main(["check-replay", str(path)]) == 0
    assert "TOTAL (wall)" in capsys.readouterr().out
    trace = load_trace(path)
    table, result = check_replay(trace)
    phases = table.drop(index="TOTAL (wall)")["simulated_s"].sum()
    assert phases <= result.sim_time_s * (1 + 1e-9) <= trace.meta.wall_time_s * (1 + 1e-9)


def test_ppo_cartpole_records_and_replays(tmp_path, capsys):
    path = tmp_path / "ppo.parquet"
    model = learn("PPO", "CartPole-v1", 2048, path, n_steps=1024, batch_size=64, n_epochs=4)
    trace = load_trace(path)
    info, ops = trace.meta.workload_info, trace.ops
    assert trace.meta.workload == "actor_learner" and trace.meta.algorithm == "ppo"
    assert info["policy_sizes"] == [4, 64, 64, 2] and info["value_sizes"] == [4, 64, 64, 1]
    assert trace.env_steps == 2048
    counts = ops["phase"].value_counts()
    assert counts["act"] == 2 * (1024 + 1)  # a forward per step and a bootstrap per rollout
    assert counts["learn"] == 2 * 4 * 1024 // 64
    assert counts["rollout_add"] == 2 and counts["sync"] == 2
    # every finished episode: a return, and an empty env_reset after the first reset
    resets = ops[ops["phase"] == "env_reset"]
    assert len(trace.meta.episode_returns) == len(resets) - 1 > 0
    assert resets["dur_s"].iloc[1:].median() < 50e-6  # empty: recorder bias only (a
    # preempted one on a loaded host may be longer)
    assert trace.meta.episode_returns[-1] == model.ep_info_buffer[-1]["r"]
    assert set(ops.loc[ops["phase"] == "learn", "worker"]) == {"learner"}
    # the operators of its minibatch steps, from the policy's modules: the 4-64-64-2 policy
    # and 4-64-64-1 value at batch 64, a forward, weight-gradient and (above the first
    # layer) input-gradient GEMM per layer: 2 × (3 + 3 + 2) = 16, by shape
    linear = {tuple(o.shape): o.count for o in trace.meta.operators
              if o.phase == "learn" and o.items == 64 and o.op == "linear"}
    assert sum(linear.values()) == 16
    assert linear[(1, 64, 4, 64)] == 2 and linear[(1, 4, 64, 64)] == 2  # first layers
    assert {o.source for o in trace.meta.operators} == {"modules"}
    assert main(["trace", "info", str(path)]) == 0
    assert main(["simulate", str(path), "--system", "examples/dgx1_like.yaml"]) == 0
    capsys.readouterr()
    replays_consistently(path, capsys)
    assert "forward" not in vars(model.policy)  # the callback restored the model


@pytest.mark.parametrize("algo, env_id, steps, kwargs, workload", [
    ("DQN", "CartPole-v1", 400, {"learning_starts": 100, "batch_size": 32}, "dqn"),
    ("A2C", "CartPole-v1", 500, {}, "actor_learner"),  # 100 rollouts of 5 steps
    ("SAC", "Pendulum-v1", 250, {"learning_starts": 100, "batch_size": 32}, "ddpg"),
])
def test_other_algorithms_record_and_simulate(tmp_path, capsys, algo, env_id, steps, kwargs,
                                              workload):
    path = tmp_path / "run.parquet"
    learn(algo, env_id, steps, path, **kwargs)
    trace = load_trace(path)
    assert trace.meta.workload == workload and trace.env_steps == steps
    ops = trace.ops
    if workload != "actor_learner":
        acts = ops[ops["phase"] == "act"]
        # warm-up actions are random: no network ran; afterwards it does (DQN: but for its
        # 5 % epsilon-greedy random actions)
        assert (acts["flops"].iloc[:100] == 0).all()
        assert (acts["flops"].iloc[100:] > 0).mean() > 0.8
        assert (ops["phase"] == "replay_sample").sum() == (ops["phase"] == "learn").sum() > 0
    assert main(["simulate", str(path), "--system", "examples/dgx1_like.yaml"]) == 0
    capsys.readouterr()
    replays_consistently(path, capsys)


def test_bad_path_and_gradient_steps_are_one_line_errors(tmp_path):
    with pytest.raises(RldseError, match=r"must end in \.parquet"):
        RldseCallback(tmp_path / "run.csv")
    existing = tmp_path / "old.parquet"
    existing.write_bytes(b"a finished run")
    with pytest.raises(RldseError, match=r"old\.parquet: exists \(pass force=True"):
        RldseCallback(existing)  # refused before any training, as the CLI refuses
    assert existing.read_bytes() == b"a finished run"
    RldseCallback(existing, force=True)  # asked for: allowed
    model = sb3.DQN("MlpPolicy", "CartPole-v1", gradient_steps=2, device="cpu")
    with pytest.raises(RldseError, match="gradient_steps=2"):
        model.learn(10, callback=RldseCallback(tmp_path / "run.parquet"))


def test_counting_work_is_not_an_ipc_handoff(tmp_path):
    """The actor-learner program replays sync and rollout_add as the gaps on the trace's
    clock (trace_handoffs); the first act and learn count their work (FlopCounterMode,
    ms), which must not show up there (it once added 20-30 ms to an A2C replay)."""
    from rldse.workloads import workload_of
    from rldse.workloads.actor_learner.program.handoffs import trace_handoffs

    path = tmp_path / "a2c.parquet"
    learn("A2C", "CartPole-v1", 100, path)
    trace = load_trace(path)
    ops = trace.ops
    deliver, handoff = trace_handoffs(trace, workload_of(trace).read_info(trace).rollout_len)
    sync = ops.loc[ops["phase"] == "sync", "dur_s"].to_numpy()
    send = ops.loc[ops["phase"] == "rollout_add", "dur_s"].to_numpy()
    assert len(deliver) == len(sync) == len(handoff) == len(send) == 20
    assert deliver[0] - sync[0] < 1e-3 and handoff[0] - send[0] < 1e-3


@pytest.mark.parametrize("algo, kwargs", [
    ("DQN", {"learning_starts": 50, "batch_size": 16}),
    ("PPO", {"n_steps": 64, "batch_size": 32, "n_epochs": 2}),
])
def test_a_spilled_log_records_the_same_rows(tmp_path, monkeypatch, algo, kwargs):
    """The per-step wrappers cut inline and spill once a step: with blocks of 7 cuts (the
    lists overrun them between spills) the trace holds the same rows as unspilled."""
    from rldse.recording import cuts

    columns = ["worker", "phase", "iter", "items", "flops", "bytes", "dtype"]
    learn(algo, "CartPole-v1", 256, tmp_path / "whole.parquet", **kwargs)
    monkeypatch.setattr(cuts, "SPILL", 7)
    model = getattr(sb3, algo)("MlpPolicy", "CartPole-v1", seed=0, device="cpu", **kwargs)
    callback = RldseCallback(tmp_path / "spilled.parquet")
    model.learn(256, callback=callback)
    assert len(callback.cuts._blocks) > 50
    whole, spilled = (load_trace(tmp_path / f"{n}.parquet").ops[columns]
                      for n in ("whole", "spilled"))
    assert whole.equals(spilled) and len(whole) > 500


def test_torch_threads_pinned_for_training_and_recorded(tmp_path):
    """The callback runs training on one torch thread unless told otherwise, restores the
    count after, and the trace says which count ran and who chose it."""
    torch.set_num_threads(2)
    seen = []

    class Spy(sb3.common.callbacks.BaseCallback):
        def _on_step(self) -> bool:
            seen.append(torch.get_num_threads())
            return True

    for threads, expect in ((1, (1, "rldse")), (3, (3, "user"))):
        path = tmp_path / f"a2c{threads}.parquet"
        model = sb3.A2C("MlpPolicy", "CartPole-v1", seed=0, device="cpu", n_steps=5)
        seen.clear()
        model.learn(20, callback=[RldseCallback(path, torch_threads=threads), Spy()])
        assert set(seen) == {threads} and torch.get_num_threads() == 2
        load = load_trace(path).meta.host.load
        assert (load.torch_threads, load.torch_threads_set_by) == expect
    with pytest.raises(RldseError, match="torch_threads"):
        RldseCallback(tmp_path / "x.parquet", torch_threads=0)
