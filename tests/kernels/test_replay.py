"""Replay buffers: ring-buffer wrap, sum-tree sums, sampling law and counted work."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.kernels.replay import (
    PrioritizedReplay,
    SumTree,
    UniformReplay,
    transition_bytes,
)


def fill(buf: UniformReplay, n: int, obs_dim: int = 3) -> None:
    """Transition k carries k in every field, so slots are easy to identify."""
    for k in range(n):
        o = np.full(obs_dim, k, dtype=np.float32)
        buf.add(o, k % 7, float(k), o + 0.5, k % 2 == 0)


def test_sumtree_total_is_sum_of_priorities_after_random_updates():
    rng = np.random.default_rng(0)
    tree = SumTree(1000)
    truth = np.zeros(1000)
    for _ in range(300):
        idx = rng.integers(0, 1000, size=rng.integers(1, 64))
        p = rng.random(idx.size) * 10
        tree.update(idx, p)
        truth[idx] = p  # numpy fancy assignment also keeps the last duplicate
    assert tree.total == pytest.approx(truth.sum(), rel=1e-12)
    np.testing.assert_array_equal(tree.priorities(np.arange(1000)), truth)
    # every internal node is the sum of its children
    n = tree.nodes
    internal = np.arange(1, tree.leaves)
    np.testing.assert_allclose(n[internal], n[2 * internal] + n[2 * internal + 1], rtol=1e-12)


def test_sumtree_batched_update_keeps_last_write_of_duplicates():
    tree = SumTree(8)
    tree.update(np.arange(8), np.ones(8))
    tree.update(np.array([3, 5, 3, 3, 5]), np.array([10.0, 20.0, 30.0, 40.0, 50.0]))
    assert tree.priorities(np.array([3, 5])).tolist() == [40.0, 50.0]
    assert tree.total == pytest.approx(6 + 40 + 50)


def test_sumtree_sampling_frequencies_follow_priorities():
    """Chi-square goodness of fit over 200k draws; the 0.999 quantile for 15 dof is 37.7."""
    rng = np.random.default_rng(1)
    tree = SumTree(16)
    p = rng.random(16) + 0.05
    tree.update(np.arange(16), p)
    draws = 200_000
    idx, _ = tree.find(rng.random(draws) * tree.total, filled=16)
    observed = np.bincount(idx, minlength=16)
    expected = draws * p / p.sum()
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < 37.7


@pytest.mark.parametrize("capacity, depth", [(1, 1), (2, 2), (8, 4), (9, 5), (1000, 11)])
def test_sumtree_touches_one_path_per_item(capacity, depth):
    tree = SumTree(capacity)
    assert tree.depth == depth == int(np.log2(tree.leaves)) + 1
    idx = np.arange(min(capacity, 5))
    w = tree.update(idx, np.ones(idx.size))
    assert (w.items, w.touches, w.flops) == (idx.size, idx.size * depth, idx.size * depth)
    assert w.bytes == idx.size * (8 + 16 * depth)
    _, w = tree.find(np.zeros(7), filled=idx.size)
    assert (w.items, w.touches, w.flops) == (7, 7 * depth, 7 * 2 * (depth - 1))
    assert w.bytes == 7 * (8 * depth + 16)


def test_sumtree_find_never_returns_unfilled_leaves():
    tree = SumTree(10)
    tree.update(np.arange(4), np.full(4, 0.1))
    idx, _ = tree.find(np.full(50, np.nextafter(tree.total, 0)), filled=4)
    assert idx.max() == 3


def test_uniform_replay_wraps_at_capacity():
    buf = UniformReplay(5, 3, np.random.default_rng(0))
    fill(buf, 12)
    assert (len(buf), buf.pos) == (5, 12 % 5)
    # slots hold the 5 newest transitions 7..11, 10 and 11 having overwritten slots 0 and 1
    assert buf.reward.tolist() == [10.0, 11.0, 7.0, 8.0, 9.0]
    np.testing.assert_array_equal(buf.next_obs[:, 0], buf.reward + 0.5)


def test_uniform_replay_samples_only_filled_slots():
    buf = UniformReplay(100, 3, np.random.default_rng(0))
    fill(buf, 7)
    batch, work = buf.sample(500)
    assert set(batch.idx.tolist()) == set(range(7))
    np.testing.assert_array_equal(batch.obs[:, 0], batch.reward)
    assert batch.weights is None
    t = transition_bytes(3, np.float32)
    assert t == 2 * 3 * 4 + 9 == buf.transition_bytes
    assert (work.items, work.flops, work.touches, work.bytes) == (500, 0, 0, 500 * (2 * t + 16))


def test_prioritized_replay_prefers_large_td_errors_and_weights_them_down():
    rng = np.random.default_rng(2)
    buf = PrioritizedReplay(64, 3, rng, alpha=1.0, eps=1e-3)
    fill(buf, 64)
    td = np.full(64, 0.01)
    td[5] = 10.0
    buf.update(np.arange(64), td)
    assert buf.max_priority == pytest.approx(10.001)
    batch, work = buf.sample(64, beta=1.0)
    share = np.mean(batch.idx == 5)
    assert share == pytest.approx(10.001 / (10.001 + 63 * 0.011), abs=0.05)
    assert batch.weights.max() == pytest.approx(1.0)
    assert batch.weights[batch.idx == 5].max() < batch.weights[batch.idx != 5].min()
    assert work.touches == 64 * buf.tree.depth


def test_prioritized_replay_new_transitions_get_max_priority():
    buf = PrioritizedReplay(8, 3, np.random.default_rng(0))
    fill(buf, 2)
    buf.update(np.array([0, 1]), np.array([3.0, 0.5]))
    w = buf.add(np.zeros(3, np.float32), 0, 0.0, np.zeros(3, np.float32), False)
    assert buf.tree.priorities(np.array([2]))[0] == buf.max_priority
    assert w.touches == buf.tree.depth
    assert w.bytes == 2 * buf.transition_bytes + 8 + 16 * buf.tree.depth


def test_prioritized_sample_lists_its_operators_and_they_add_up():
    """A PER sample is per-item arithmetic, a row gather and one sum-tree descent per item
    (D = log2(capacity) + 1 levels), and those parts' bytes and flops are its totals."""
    rng = np.random.default_rng(0)
    buf = PrioritizedReplay(1000, 4, rng)
    for i in range(50):
        buf.add(np.full(4, i, np.float32), 1, 0.0, np.zeros(4, np.float32), False)
    _, work = buf.sample(32)
    ops = {o.op: o.shape for o in work.operators()}
    t = 2 * 4 * 4 + 4 + 4 + 1
    assert ops["gather"] == (32, 32 * 2 * t)
    assert ops["sumtree"] == (32, 11)  # 1,024 leaves: 10 levels below the root
    arith_items, arith_bytes, arith_flops = ops["replay_arith"]
    assert (arith_items, arith_flops) == (32, 32 * 7)  # stratum 2 + importance weight 5
    assert work.bytes == ops["gather"][1] + arith_bytes + 32 * (8 * 11 + 8 + 8)
    assert work.touches == 32 * 11
