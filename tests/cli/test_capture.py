"""`rldse capture WORKLOAD`: one subcommand per registered workload, other workloads' flags
and unusable outputs refused in one line before any training."""

from __future__ import annotations

from pathlib import Path

import pytest

import rldse.workloads
from rldse.cli import main


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if a capture starts: every refusal must come before training."""
    def refuse(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(rldse.workloads, "capture", refuse)


def _err(argv, capsys):
    code = main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("argv, flag", [
    (["capture", "dqn", "--env", "CartPole-v1", "--dtype", "int32"], "--dtype"),
    (["capture", "dqn", "--env", "CartPole-v1", "--actors", "4"], "--actors"),
    (["capture", "tabular", "--env", "FrozenLake-v1", "--replay", "per"], "--replay"),
    (["capture", "ddpg", "--env", "Pendulum-v1", "--agents", "2"], "--agents"),
])
def test_another_workloads_flag_is_refused(argv, flag, tmp_path, capsys, no_training):
    code, err = _err([*argv, "-o", str(tmp_path / "t.parquet")], capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("rldse: error: ")
    assert flag in err and "does not apply" in err


def test_output_folder_is_refused_before_training(tmp_path, capsys, no_training):
    folder = tmp_path / "out.parquet"
    folder.mkdir()
    for out in (tmp_path, folder):
        code, err = _err(["capture", "dqn", "--env", "CartPole-v1", "-o", str(out)], capsys)
        assert code == 2 and err.count("\n") == 1 and str(out) in err


def test_existing_output_needs_force(tmp_path, capsys, no_training):
    out = tmp_path / "t.parquet"
    out.write_bytes(b"old")
    code, err = _err(["capture", "dqn", "--env", "CartPole-v1", "-o", str(out)], capsys)
    assert code == 2 and "--force" in err and out.read_bytes() == b"old"


def test_output_must_be_parquet(tmp_path, capsys, no_training):
    code, err = _err(["capture", "dqn", "--env", "CartPole-v1", "-o",
                      str(tmp_path / "t.csv")], capsys)
    assert code == 2 and ".parquet" in err and err.count("\n") == 1


def test_negative_seed_is_one_line(tmp_path, capsys, no_training):
    code, err = _err(["capture", "dqn", "--env", "CartPole-v1", "--seed", "-1", "-o",
                      str(tmp_path / "t.parquet")], capsys)
    assert code == 2 and err.count("\n") == 1 and "--seed" in err


def test_each_workload_help_lists_its_own_options(capsys):
    for workload in rldse.workloads.WORKLOADS.values():
        with pytest.raises(SystemExit):
            main(["capture", workload.name, "--help"])
        out = capsys.readouterr().out
        for option in workload.config.model_fields:
            if option not in ("env_id", "steps", "seed", "replay", "actors"):
                assert f"  {option} (default" in out
    with pytest.raises(SystemExit):
        main(["capture", "dqn", "--help"])
    out = capsys.readouterr().out
    assert "--replay" in out and "--dtype" not in out and "batch_size" in out
    assert "epsilon_decay" not in out  # tabular's


def test_capture_writes_a_trace_and_force_overwrites(tmp_path, capsys):
    out = tmp_path / "t.parquet"
    argv = ["capture", "tabular", "--env", "FrozenLake-v1", "--steps", "300", "-o", str(out)]
    assert main(argv) == 0
    assert main([*argv, "--force"]) == 0
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("extra, flag", [
    (["--seeds", "0"], "--seeds 0: must be at least 1"),
    (["--seeds", "2", "--dataset", "x.txt"], "--seeds: an offline capture"),
])
def test_bad_seeds_is_one_line_before_training(tmp_path, capsys, no_training, extra, flag):
    code, err = _err(["capture", "tabular", "--env", "FrozenLake-v1", *extra, "-o",
                      str(tmp_path / "t.parquet")], capsys)
    assert code == 2 and err.count("\n") == 1 and flag in err


def test_seeds_keep_every_runs_learning_curve(tmp_path, capsys):
    """--seeds 3: the ops are seed 0's run, the curves of seeds 1 and 2 ride along."""
    from rldse.sim.target import learning_curve
    from rldse.trace import load_trace

    out, one = tmp_path / "three.parquet", tmp_path / "one.parquet"
    base = ["capture", "tabular", "--env", "FrozenLake-v1", "--steps", "2000"]
    assert main([*base, "--seeds", "3", "-o", str(out)]) == 0
    assert main([*base, "-o", str(one)]) == 0
    three, single = load_trace(out), load_trace(one)
    assert [c.seed for c in three.meta.seed_curves] == [1, 2]
    assert three.meta.episode_returns == single.meta.episode_returns  # seed 0's run
    for c in three.meta.seed_curves:
        assert len(c.end_steps) == len(c.returns) > 0 and c.end_steps == sorted(c.end_steps)
    assert learning_curve(three).returns.tolist() == single.meta.episode_returns
    main(["trace", "info", str(out)])
    assert "learning curves of 2 more seeds (1, 2)" in capsys.readouterr().out


def test_a_capture_projected_past_the_limit_stops_in_one_line(monkeypatch):
    """Bounded: once the steps past the warm-up have taken PROBE_CPU_S of CPU time, their
    rate times the steps left; over CAPTURE_LIMIT_S it stops the training (fake clocks:
    1 ms of CPU per step, wall twice that; nothing timed)."""
    import rldse.host
    from rldse.cli.capture import CAPTURE_LIMIT_S, Bounded
    from rldse.errors import RldseError

    monkeypatch.setattr(rldse.host.os, "getloadavg", lambda: (7.0, 7.0, 7.0))
    now = [0.0]
    clocks = {"cpu_clock": lambda: now[0], "wall_clock": lambda: 2 * now[0]}
    seen = []
    bounded = Bounded(seen.append, steps=10**9, allow_long=False, warm_steps=1_000, **clocks)
    with pytest.raises(RldseError, match=r"--steps 1,000,000,000: this capture would train "
                                         r"for about 556 h .* over the 1 h limit; give "
                                         r"--allow-long"):
        for _ in range(100):
            now[0] += 0.1
            bounded(100)
    assert 1_900 < sum(seen) <= 2_100 and CAPTURE_LIMIT_S < 2e-3 * 10**9  # stopped early
    allowed = Bounded(seen.append, steps=10**9, allow_long=True, **clocks)
    for _ in range(100):
        now[0] += 0.1
        allowed(100)  # no projection at all


def test_many_seeds_are_priced_from_the_first_run_before_the_others(monkeypatch):
    """--seeds N: the first run's projection times N, over the limit, stops in one line;
    a first run that ends before its probe is priced whole (`Bounded.check_runs`)."""
    import rldse.host
    from rldse.cli.capture import Bounded
    from rldse.errors import RldseError

    monkeypatch.setattr(rldse.host.os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    now = [0.0]
    clocks = {"cpu_clock": lambda: now[0], "wall_clock": lambda: now[0]}
    bounded = Bounded(lambda n: None, steps=10_000, allow_long=False, runs=1_000_000,
                      **clocks)
    with pytest.raises(RldseError, match=r"--seeds 1,000,000 would take about .* \(1,000,000 "
                                         r"runs of about .*over the 60 min limit"):
        for _ in range(100):
            now[0] += 0.1
            bounded(100)  # 1 ms of CPU per step: 10 s a run
    short = Bounded(lambda n: None, steps=500, allow_long=False, runs=1_000_000, **clocks)
    for _ in range(5):
        now[0] += 0.1
        short(100)  # 0.5 s in all: never probed
    with pytest.raises(RldseError, match=r"--seeds 1,000,000"):
        short.check_runs()



def test_a_capture_the_free_space_cannot_hold_is_refused_before_training(
        tmp_path, capsys, no_training, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(1, 1, 10**5))
    out = tmp_path / "run.parquet"
    code, err = _err(["capture", "dqn", "--env", "CartPole-v1", "--steps", "10000", "-o",
                      str(out)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"rldse: error: -o {out}: would write about 1.3 MB (a trace of "
                          "10,000 steps")
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_at_the_write_names_the_output_not_its_temporary(tmp_path, monkeypatch):
    import errno
    import os

    import pyarrow.parquet as pq

    from rldse.cli.capture import save_trace
    from rldse.errors import RldseError
    from rldse.trace import load_trace

    trace = load_trace(Path(__file__).parents[2] / "traces" / "pong_ppo.parquet")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(pq, "write_table", full)
    out = tmp_path / "run.parquet"
    with pytest.raises(RldseError) as exc:
        save_trace(trace, out)
    assert str(exc.value) == f"{out}: cannot write: the disk is full"
    assert list(tmp_path.iterdir()) == []
