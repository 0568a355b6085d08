"""SwiftRL's dataset format: reading, validation errors, writing, round trips, import."""

from __future__ import annotations

from pathlib import Path
from time import perf_counter

import numpy as np
import pandas as pd
import pytest

from rldse.errors import RldseError
from rldse.trace import load_trace
from rldse.workloads.common.base import CaptureConfig
from rldse.workloads.tabular.swiftrl_format import (
    COLUMNS,
    export_swiftrl,
    import_swiftrl,
    read_swiftrl,
    write_swiftrl,
)
from rldse.workloads.tabular.train import capture

SWIFTRL_DATA = Path("/work/shared/data/swiftrl")


def dataset(n: int, seed: int = 0, n_states: int = 16, n_actions: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "state": rng.integers(n_states, size=n).astype(np.int32),
        "action": rng.integers(n_actions, size=n).astype(np.int32),
        "reward": rng.integers(-10, 21, size=n).astype(np.float32),
        "next_state": rng.integers(n_states, size=n).astype(np.int32),
    })


def test_read_accepts_any_whitespace_and_blank_lines(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"0 1 0 4\r\n\n  4\t2  -1 5 \n+3 0 20 15")
    df = read_swiftrl(path)
    assert list(df.columns) == list(COLUMNS)
    assert df.dtypes.to_dict() == {"state": np.int32, "action": np.int32,
                                   "reward": np.float32, "next_state": np.int32}
    assert df.to_numpy().tolist() == [[0, 1, 0, 4], [4, 2, -1, 5], [3, 0, 20, 15]]


@pytest.mark.parametrize(("bad", "needle"), [
    ("4 2 0", "expected 4 integers 'state action reward next_state', got '4 2 0'"),
    ("4 2 0 5 6", "expected 4 integers 'state action reward next_state', got '4 2 0 5 6'"),
    ("a b c", "expected 4 integers 'state action reward next_state', got 'a b c'"),
    ("4 2 0.5 5", "got '4 2 0.5 5'"),
    ("-4 2 0 5", "state must be an integer in 0..2147483647, got -4"),
    ("4 -2 0 5", "action must be an integer in 0..2147483647, got -2"),
    ("4 2 0 -5", "next_state must be an integer in 0..2147483647, got -5"),
    ("4 2 0 99999999999", "next_state must be an integer in 0..2147483647"),
    ("4 2 99999999 5", "reward must be within ±16777216"),
])
def test_malformed_line_names_file_and_line(tmp_path, bad, needle):
    path = tmp_path / "data.txt"
    path.write_text("0 1 0 4\n\n4 2 0 5\n" + bad + "\n1 1 0 2\n")
    with pytest.raises(RldseError) as err:
        read_swiftrl(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: line 4: ")
    assert needle in message


@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_empty_file_is_one_line_error(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_text(content)
    with pytest.raises(RldseError, match="file is empty") as err:
        read_swiftrl(path)
    assert "\n" not in str(err.value)


def test_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(RldseError, match="no such file"):
        read_swiftrl(tmp_path / "nope.txt")


def test_read_write_read_round_trip(tmp_path):
    first = read_swiftrl(write_swiftrl(dataset(5000), tmp_path / "a.txt"))
    second = read_swiftrl(write_swiftrl(first, tmp_path / "b.txt"))
    pd.testing.assert_frame_equal(first, second)
    pd.testing.assert_frame_equal(first, dataset(5000))
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()


def test_write_refuses_fractional_rewards(tmp_path):
    df = dataset(10)
    df.loc[7, "reward"] = 0.5
    with pytest.raises(RldseError, match="integers only.*transition 7"):
        write_swiftrl(df, tmp_path / "x.txt")


def test_captured_transitions_export_and_reimport(tmp_path):
    trace = capture(CaptureConfig(workload="tabular", env_id="CliffWalking-v1", steps=2000))
    loaded = load_trace(trace.save(tmp_path / "cliff.parquet"))
    back = read_swiftrl(export_swiftrl(loaded, tmp_path / "cliff.txt"))
    pd.testing.assert_frame_equal(back, trace.transitions[list(COLUMNS)])


def test_import_runs_offline_training_and_infers_env(tmp_path):
    path = write_swiftrl(dataset(3000, n_states=500, n_actions=6), tmp_path / "Taxi_small.txt")
    calls = []
    trace = import_swiftrl(path, agents=3, passes=2, dtype="int32", progress=calls.append)
    assert sum(calls) == 3000 * 2
    assert (trace.meta.env_id, trace.meta.algorithm) == ("Taxi-v4", "q_learning")
    info = trace.meta.workload_info
    assert (info["n_states"], info["n_actions"], info["agents"], info["rounds"]) == (500, 6, 3, 2)
    pd.testing.assert_frame_equal(trace.transitions, read_swiftrl(path))
    assert set(trace.ops.phase.astype(str)) == {"q_update", "aggregate"}


def test_import_of_unknown_env_takes_spaces_from_data(tmp_path):
    path = write_swiftrl(dataset(500, n_states=7, n_actions=3), tmp_path / "mine.txt")
    trace = import_swiftrl(path, algorithm="sarsa")
    info = trace.meta.workload_info
    assert trace.meta.env_id == "unknown" and (info["n_states"], info["n_actions"]) == (7, 3)


def test_import_rejects_states_outside_the_env(tmp_path):
    path = tmp_path / "FrozenLake_bad.txt"
    path.write_text("0 1 0 4\n\n4 2 0 16\n")
    with pytest.raises(RldseError, match=r"line 3: next_state 16 is out of range for "
                                         r"FrozenLake-v1 \(16 states, 4 actions\)"):
        import_swiftrl(path)


@pytest.mark.skipif(not SWIFTRL_DATA.is_dir(), reason="SwiftRL datasets not present")
@pytest.mark.parametrize(("name", "env_id", "spaces"), [
    ("FrozenLake_trajectories_10k.txt", "FrozenLake-v1", (16, 4)),
    ("Taxi_trajectories_10k.txt", "Taxi-v4", (500, 6)),
    ("Cliffwalking_trajectories_10k.txt", "CliffWalking-v1", (48, 4)),
])
def test_published_datasets_import(name, env_id, spaces):
    trace = import_swiftrl(SWIFTRL_DATA / name)
    info = trace.meta.workload_info
    assert trace.meta.env_id == env_id and (info["n_states"], info["n_actions"]) == spaces
    assert len(trace.transitions) == 10_000


@pytest.mark.slow
def test_million_line_file_reads_in_under_5_s(tmp_path):
    path = write_swiftrl(dataset(1_000_000, n_states=500, n_actions=6), tmp_path / "1m.txt")
    start = perf_counter()
    df = read_swiftrl(path)
    assert perf_counter() - start < 5.0
    assert len(df) == 1_000_000


def test_import_and_export_errors(tmp_path):
    path = write_swiftrl(dataset(100), tmp_path / "FrozenLake_x.txt")
    with pytest.raises(RldseError) as err:  # names the field and its bound, in one line
        import_swiftrl(path, agents=0)
    text = str(err.value)
    assert text.startswith("agents") and "1" in text.removeprefix("agents") and "\n" not in text
    with pytest.raises(RldseError, match="dtype"):
        import_swiftrl(path, dtype="fp16")
    trace = import_swiftrl(path)
    trace.transitions = None
    with pytest.raises(RldseError, match="no transitions to export"):
        export_swiftrl(trace, tmp_path / "out.txt")


def test_cli_export_is_atomic_refuses_overwrite_and_errors_in_one_line(tmp_path, capsys,
                                                                       monkeypatch):
    from rldse.cli import main

    trace = import_swiftrl(write_swiftrl(dataset(200), tmp_path / "FrozenLake_x.txt"))
    src = str(trace.save(tmp_path / "t.parquet"))
    out = tmp_path / "out.txt"
    assert main(["trace", "export", src, "--format", "swiftrl", "-o", str(out)]) == 0
    first = out.read_bytes()
    capsys.readouterr()
    for target in (str(out), str(tmp_path), str(tmp_path) + "/"):  # exists; a folder
        assert main(["trace", "export", src, "--format", "swiftrl", "-o", target]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["trace", "export", src, "--format", "swiftrl", "-o", str(out),
                 "--force"]) == 0
    assert out.read_bytes() == first

    def full(*a, **k):  # the disk fills mid-write: the old file stays whole, no temporary
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("pandas.DataFrame.to_csv", full)
    capsys.readouterr()
    assert main(["trace", "export", src, "--format", "swiftrl", "-o", str(out),
                 "--force"]) == 2
    assert capsys.readouterr().err == f"rldse: error: {out}: cannot write: the disk is full\n"
    assert out.read_bytes() == first and sorted(p.name for p in tmp_path.iterdir()) == [
        "FrozenLake_x.txt", "out.txt", "t.parquet"]


def test_cli_import_is_bounded_by_its_updates_projected(tmp_path, monkeypatch, capsys):
    """`trace import --format swiftrl` projects its training as a capture does (rldse.cli.
    capture.Bounded) over the file's transitions x passes, refused past the limit unless
    --allow-long; the flag belongs to the swiftrl format only."""
    from rldse.cli import capture as capture_cli
    from rldse.cli import main

    path = write_swiftrl(dataset(3000, n_states=500, n_actions=6), tmp_path / "Taxi_small.txt")
    seen = []
    real = capture_cli.Bounded

    def bounded(update, steps, allow_long):
        seen.append((steps, allow_long))
        return real(update, steps, allow_long)
    monkeypatch.setattr(capture_cli, "Bounded", bounded)
    assert main(["trace", "import", str(path), "--format", "swiftrl", "--passes", "2",
                 "-o", str(tmp_path / "t.parquet")]) == 0
    assert seen == [(3000 * 2, False)]
    capsys.readouterr()
    assert main(["trace", "import", str(path), "--format", "torch-profiler", "--allow-long",
                 "-o", str(tmp_path / "u.parquet")]) == 2
    assert "--allow-long does not apply to --format torch-profiler" in capsys.readouterr().err
