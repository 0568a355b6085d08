"""Replay rows on the CPU at another capacity or batch (offpolicy/replay_cost.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.kernels.replay import SumTree
from rldse.models import OpColumns, cpu_from_host
from rldse.workloads.offpolicy import replay_cost


@pytest.fixture
def host(host_fp):
    fp = host_fp.model_copy(update=dict(
        elementwise_gbs=10.0, cache_bytes={"L1d": 32 * 1024, "L2": 1024 * 1024},
        gather_ns=[(16384.0, 1.0), (524288.0, 2.0)], sum_tree_level_ns=(3000.0, 4.0)))
    return cpu_from_host(fp)


@pytest.mark.parametrize("capacity", [1, 2, 1000, 10_000, 100_000])
def test_depth_is_the_sum_trees(capacity):
    assert replay_cost.tree_depth(capacity) == SumTree(capacity).depth


def test_same_capacity_and_batch_leave_rows_unchanged(host):
    ops = OpColumns.of("replay_sample", items=64, host_dur_s=[1e-4, 2e-4])
    out = replay_cost.rescaled(host, ops, "replay_sample", 41, True, (10_000, 10_000),
                               (64, 64), (5000, 9000))
    assert out is ops


def test_sample_cost_follows_depth_and_batch_by_the_measured_descent(host):
    """Uniform touches within L1 and no rows beyond it: the change is the descent's
    measured per-level cost and the per-item work, nothing else."""
    row = replay_cost.row_seconds
    small = row(host, "replay_sample", 1000, 64, 41, True, 1000)
    big = row(host, "replay_sample", 8000, 64, 41, True, 1000)
    d0, d1 = replay_cost.tree_depth(1000), replay_cost.tree_depth(8000)
    assert big - small == pytest.approx((d1 - d0) * (3000 + 64 * 4) * 1e-9, rel=0.05)
    assert row(host, "replay_sample", 1000, 128, 41, True, 1000) > small
    ops = OpColumns.of("replay_sample", items=64, host_dur_s=[1.0])  # all overhead beyond
    out = replay_cost.rescaled(host, ops, "replay_sample", 41, True, (1000, 8000), (64, 64),
                               (1000, 1000))
    assert float(out.host_dur_s[0]) == pytest.approx(1.0 - small + big)
    assert float(out.touches[0]) == pytest.approx(0.0)


def test_uniform_gather_grows_with_batch_and_working_set(host):
    row = replay_cost.row_seconds
    a = row(host, "replay_sample", 10**6, 32, 41, False, 500)
    b = row(host, "replay_sample", 10**6, 128, 41, False, 500)
    c = row(host, "replay_sample", 10**6, 128, 41, False, 10**6)
    assert b == pytest.approx(4 * a) and c > b
    assert row(host, "replay_update", 10**6, 64, 41, False, 10**6) == 0.0
    assert np.isfinite(c)
