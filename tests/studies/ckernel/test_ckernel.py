"""SwiftRL's CPU baseline, compiled: the C loop computes exactly what the Python double-
precision loop computes, reports a time per update, and without a compiler the study
falls back to the shipped measurements."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.studies import ckernel
from rldse.studies.swiftrl_pim.data import EnvModel
from rldse.workloads.tabular.train import _q_learning_fp32, _sarsa_fp32

needs_cc = pytest.mark.skipif(ckernel.compiler() is None, reason="needs a C compiler (cc)")


def _reference(data, model, passes, next_a=None):
    q = [[0.0] * model.n_actions for _ in range(model.n_states)]
    cols = [data[c].tolist() for c in ("state", "action", "reward", "next_state")]
    for _ in range(passes):
        if next_a is None:
            _q_learning_fp32(q, *cols, 0.1, 0.95)
        else:
            _sarsa_fp32(q, *cols, next_a.tolist(), 0.1, 0.95)
    return np.array(q)


@needs_cc
@pytest.mark.parametrize("algorithm", ["q_learning", "sarsa"])
def test_compiled_loop_equals_the_python_loop(tmp_path, algorithm):
    """Bit for bit: the same updates in the same order in IEEE double precision."""
    model = EnvModel("Taxi-v4")
    data = model.generate(5_000, seed=2)
    next_a = None
    if algorithm == "sarsa":
        rng = np.random.default_rng(0)
        next_a = np.where(rng.random(len(data)) < 0.3,
                          rng.integers(model.n_actions, size=len(data)), -1)
    binary = ckernel.build(tmp_path)
    assert binary is not None and ckernel.build(tmp_path) == binary  # cached
    times, q = ckernel.run_kernel(
        binary, data.state.to_numpy(), data.action.to_numpy(), data.reward.to_numpy(),
        data.next_state.to_numpy(), model.n_states, model.n_actions, alpha=0.1, gamma=0.95,
        passes=3, repeats=2, next_a=next_a, table=True)
    assert len(times) == 2 and all(0 < t < 1e4 for t in times)
    assert np.array_equal(q, _reference(data, model, 3, next_a))
    assert np.abs(q).max() > 0


@needs_cc
def test_measure_runs_enough_updates(tmp_path):
    model = EnvModel("FrozenLake-v1")
    data = model.generate(2_000, seed=0)
    m = ckernel.measure(tmp_path, "x/q_learning", data, model.n_states, model.n_actions,
                        alpha=0.1, gamma=0.95, host_clock_mhz=2000.0, next_a=None,
                        repeats=3, min_updates=200_000)
    assert len(m.ns_per_update) == 3 and m.best_ns == min(m.ns_per_update)
    assert m.source.startswith("compiled here") and m.host_clock_mhz == 2000.0


def test_without_a_compiler_measure_refuses(tmp_path, monkeypatch):
    monkeypatch.setattr(ckernel.shutil, "which", lambda name: None)
    assert ckernel.build(tmp_path) is None
    data = EnvModel("FrozenLake-v1").generate(1_000, seed=0)
    with pytest.raises(RldseError, match="no C compiler"):
        ckernel.measure(tmp_path, "FrozenLake-v1/q_learning", data, 16, 4, alpha=0.1,
                        gamma=0.95, host_clock_mhz=1.0, next_a=None)


def test_stored_measurements_carry_their_provenance():
    m = ckernel.stored("FrozenLake-v1/q_learning")
    assert m.source.startswith("stored") and m.host_clock_mhz > 100 and m.best_ns > 0
    for field in ("host", "compiler", "flags", "date"):
        assert field in m.source
    with pytest.raises(RldseError, match="no stored measurement for 'Pong/q_learning'"):
        ckernel.stored("Pong/q_learning")
