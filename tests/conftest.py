"""Shared fixtures: a fixed host fingerprint, a small synthetic trace (no training), and
shipped example studies in a scratch copy of the repository's layout; hypothesis profiles."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings

from rldse.host import HostFingerprint
from rldse.trace import Trace, TraceMeta

#: Hypothesis profiles. The default suite draws a small fixed set of examples (derandomized:
#: the same examples every run, so a failure reproduces and nothing depends on luck);
#: `scripts/test-slow.sh` reruns every property test under ``slow``: ten times as many,
#: freshly drawn each run. Tests set only their health checks, never a count.
settings.register_profile("default", max_examples=20, derandomize=True, deadline=None)
settings.register_profile("slow", max_examples=200, derandomize=False, deadline=None)
settings.load_profile("default")  # `pytest --hypothesis-profile slow` overrides it


#: A test's ``record_property(SUMMARY, line)`` is printed after the run, also when the
#: test ran in a pytest-xdist worker (whose own output is not shown).
SUMMARY = "rldse_summary"


def pytest_terminal_summary(terminalreporter):
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get(
            "failed", []):
        for key, line in getattr(report, "user_properties", []):
            if key == SUMMARY and report.when == "call":
                terminalreporter.write_line(line)


@pytest.fixture(autouse=True, scope="session")
def sb3_logs_in_scratch(tmp_path_factory):
    """Stable-Baselines3 makes a log folder per ``learn()`` (``$SB3_LOGDIR``, else a new
    ``SB3-<time>`` under the system temp folder, left behind); the suite's go to its own
    scratch folder, subprocesses included."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3")))
        yield


@pytest.fixture
def host_fp() -> HostFingerprint:
    return HostFingerprint(cpu_model="Test CPU", cores=2, clock_mhz=2600.0, matmul_gflops=100.0,
                           copy_gbs=20.0, random_access_ns=10.0, py_call_ns=30.0,
                           numpy_call_ns=400.0,
                           python="CPython 3.11.7")


@pytest.fixture
def small_trace(host_fp) -> Trace:
    rng = np.random.default_rng(0)
    n = 50
    ops = pd.DataFrame({
        "worker": ["host"] * (n - 10) + [f"actor/{i % 2}" for i in range(10)],
        "phase": (["env_step", "act", "learn", "replay_add", "replay_sample"] * n)[:n],
        "iter": np.arange(n),
        "start_s": np.arange(n) * 1e-3,
        "dur_s": rng.uniform(1e-6, 1e-4, n),
        "items": rng.integers(1, 64, n),
        "flops": rng.integers(0, 10**6, n),
        "bytes": rng.integers(0, 10**5, n),
        "touches": rng.integers(0, 20, n),
        "dtype": ["fp32"] * n,
    })
    meta = TraceMeta(workload="dqn", algorithm="dqn", env_id="CartPole-v1", seed=3,
                     hyperparameters={"lr": 1e-3, "batch_size": 64},
                     workload_info={"obs_dim": 4, "layer_sizes": [4, 64, 2], "n_params": 450,
                                    "batch_size": 64, "replay": "per", "replay_capacity": 10_000,
                                    "learning_starts": 0, "learn_every": 1, "target_sync": 100,
                                    "double": False, "transition_bytes": 41},
                     episode_returns=[10.0, 22.5],
                     wall_time_s=0.05, recorder_overhead_ns=120.0,
                     library_versions={"numpy": "2"}, host=host_fp)
    transitions = pd.DataFrame({"state": np.arange(5, dtype=np.int32),
                                "action": np.ones(5, dtype=np.int32),
                                "reward": np.zeros(5, dtype=np.float32),
                                "next_state": np.arange(1, 6, dtype=np.int32)})
    return Trace(ops=ops, meta=meta, transitions=transitions)


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def scratch_example(tmp_path) -> Callable[[str], Path]:
    """scratch_example(NAME): studies/examples/NAME.yaml copied under tmp_path beside a link
    to traces/, so a search writes its out/ there and reads the shipped traces."""
    (tmp_path / "studies" / "examples").mkdir(parents=True)
    os.symlink(REPO / "traces", tmp_path / "traces")

    def copy(name: str) -> Path:
        return Path(shutil.copy(REPO / "studies" / "examples" / f"{name}.yaml",
                                tmp_path / "studies" / "examples"))

    return copy
