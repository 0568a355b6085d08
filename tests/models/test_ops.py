"""OpColumns: a trace's ops as numpy columns; a million operations cost in well under a second."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rldse.errors import RldseError
from rldse.models import OpColumns, cpu_from_host, load_part, make_model
from rldse.models.ops import PHASE_NAMES, per_phase


def test_from_frame_keeps_every_column(small_trace):
    ops = OpColumns.from_frame(small_trace.ops)
    assert len(ops) == len(small_trace.ops)
    assert [PHASE_NAMES[c] for c in ops.phase] == small_trace.ops["phase"].astype(str).tolist()
    np.testing.assert_array_equal(ops.flops, small_trace.ops["flops"])
    np.testing.assert_array_equal(ops.host_dur_s, small_trace.ops["dur_s"])


def test_of_broadcasts_scalars_and_checks_values():
    ops = OpColumns.of("learn", items=[32, 64], flops=1e6)
    assert len(ops) == 2 and ops.flops.tolist() == [1e6, 1e6]
    with pytest.raises(RldseError, match="ops.phase: unknown value 'lern'"):
        OpColumns.of("lern")
    with pytest.raises(RldseError, match="ops.bytes: must be finite and ≥ 0"):
        OpColumns.of("act", bytes=-1)
    with pytest.raises(RldseError, match="different lengths"):
        OpColumns.of(["act", "learn"], items=[1, 2, 3])


def test_per_phase_lookup():
    table = per_phase({"learn": 5.0}, 1.0)
    ops = OpColumns.of(["learn", "act"])
    assert table[ops.phase].tolist() == [5.0, 1.0]
    with pytest.raises(RldseError, match="phase 'lern' is unknown"):
        per_phase({"lern": 1.0}, 0.0)


def test_a_million_operations_are_costed_as_columns(host_fp):
    """Part models take whole columns (no loop per row): a million rows in one call each,
    every cost finite and positive (their speed is benchmarks/speed/sim_speed_*.py's)."""
    n = 1_000_000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "phase": pd.Categorical(rng.choice(["env_step", "act", "learn"], n)),
        "dtype": pd.Categorical(["fp32"] * n), "items": rng.integers(1, 64, n),
        "flops": rng.integers(0, 10**7, n), "bytes": rng.integers(0, 10**6, n),
        "touches": rng.integers(0, 100, n), "dur_s": rng.uniform(1e-6, 1e-3, n)})
    ops = OpColumns.from_frame(frame)
    cpu = make_model(load_part("cpu", "epyc-7742"), capture_host=cpu_from_host(host_fp))
    gpu = make_model(load_part("gpu", "h100-sxm"))
    for costs in (np.asarray(cpu.op_seconds(ops)), gpu.op_times(ops, layers=3).wall_s):
        assert costs.shape == (n,) and np.isfinite(costs).all() and (costs > 0).all()
