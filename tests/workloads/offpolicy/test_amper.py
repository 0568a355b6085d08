"""AMPER-style replay: candidates are the nearest rows, sampling follows the quantized
priorities, the TCAM work is counted, and DQN traces carry it to the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.models import load_part, make_model
from rldse.sim import simulate
from rldse.system import parse_spec
from rldse.workloads.common.recorder import Recorder
from rldse.workloads.offpolicy.amper import AmperReplay, knn_searches
from rldse.workloads.offpolicy.dqn import DQNConfig, capture_config, train


def buffer(levels: np.ndarray, variant: str = "k", seed: int = 0, **kw) -> AmperReplay:
    """A sampler-only buffer whose rows hold exactly ``levels`` (bits 4: 16 levels)."""
    r = AmperReplay(len(levels), 1, np.random.default_rng(seed), variant=variant, bits=4, **kw)
    r.fill(len(levels))
    r.level[:len(levels)] = levels
    return r


def test_knn_probe_counts():
    """Radius 0 costs one search; then 0,1,2,4,... until a probe holds k, then bisection."""
    assert [knn_searches(d, 64) for d in range(6)] == [1, 2, 3, 5, 5, 7]
    assert max(knn_searches(d, 64) for d in range(64)) <= 2 * 6 + 2


@pytest.mark.parametrize("seed", range(5))
def test_amper_k_candidates_are_the_k_nearest(seed):
    rng = np.random.default_rng(seed)
    levels = rng.choice([1, 2, 5, 9, 15], size=60, p=[0.5, 0.2, 0.2, 0.07, 0.03])
    r = buffer(levels.astype(np.uint8), "k", seed, k=6, target="uniform")
    slots, targets, searches = r.candidates(40)
    slots, targets = slots.reshape(40, 6), targets.reshape(40, 6)[:, 0]
    for row, t in zip(slots, targets, strict=True):
        assert len(set(row)) == 6  # distinct rows
        dist = np.abs(levels.astype(int) - int(t))
        chosen = dist[row]
        others = np.delete(dist, row)
        assert chosen.max() <= others.min()  # nothing outside is nearer than what is in
    d_star = [np.sort(np.abs(levels.astype(int) - int(t)))[5] for t in targets]
    assert searches == sum(knn_searches(int(d), 16) for d in d_star)


def test_amper_fr_candidates_within_radius_and_capped():
    levels = np.repeat(np.arange(1, 16, dtype=np.uint8), 3)  # 3 rows per level
    r = buffer(levels, "fr", radius=2, max_per_search=8)
    slots, targets, searches = r.candidates(30)
    assert searches == 30  # one radius search per target
    assert np.all(np.abs(levels[slots].astype(int) - targets.astype(int)) <= 2)
    # a full range holds 5 levels x 3 rows = 15 > 8: capped at 8 distinct rows
    inner = (targets >= 3) & (targets <= 13)
    for t in np.unique(targets[inner]):
        got = slots[targets == t]
        assert len(got) % 8 == 0 and len(set(got[:8])) == 8
    r2 = buffer(levels, "fr", radius=0, max_per_search=8)
    slots, targets, _ = r2.candidates(10)
    assert np.all(levels[slots] == targets)  # radius 0: the target level, all 3 rows
    assert len(slots) == 30


def test_proportional_amper_k_frequency_follows_quantized_priority():
    """With every level holding >= k rows each target gives k rows of its own level, so
    P(i) = l_i / sum(l): per-row frequency / expected is 1 within sampling noise."""
    rng = np.random.default_rng(1)
    levels = rng.choice(np.arange(1, 16), size=3000).astype(np.uint8)
    r = buffer(levels, "k", k=4)
    hits = np.zeros(3000)
    draws = 0
    for _ in range(300):
        b, work = r.sample(64)
        np.add.at(hits, b.idx, 1)
        draws += 64
        assert work.touches == 64  # one search per target: every level holds >= 4 rows
    expected = levels / levels.sum() * draws
    for lv in range(1, 16):
        ratio = hits[levels == lv].sum() / expected[levels == lv].sum()
        assert ratio == pytest.approx(1.0, abs=0.12), lv
    w = b.weights
    assert w.max() == pytest.approx(1.0) and np.all(w > 0)
    assert r.stats.searches == r.stats.targets == 300 * 64
    assert r.stats.candidates == 300 * 64 * 4


def test_uniform_targets_overweight_rare_high_priorities():
    """950 rows at level 1, 50 at level 2: proportional targets pick level 2 with
    probability 100/1050; uniform targets pick each level half the time."""
    levels = np.concatenate([np.full(950, 1), np.full(50, 2)]).astype(np.uint8)
    freq = {}
    for target in ("proportional", "uniform"):
        r = buffer(levels, "k", target=target)
        idx = np.concatenate([r.sample(64)[0].idx for _ in range(100)])
        freq[target] = np.mean(levels[idx] == 2)
    assert freq["proportional"] == pytest.approx(100 / 1050, abs=0.03)
    assert freq["uniform"] == pytest.approx(0.5, abs=0.08)


def test_write_counts_inserts_updates_and_rescale():
    rng = np.random.default_rng(0)
    r = AmperReplay(100, 2, rng, variant="k", bits=6)
    for _ in range(50):
        w = r.add(np.zeros(2), 0, 0.0, np.zeros(2), False)
        assert w.touches == 1
    assert r.stats.insert_rows == 50 and set(r.level[:50]) == {63}
    w = r.update(np.array([1, 2, 2, 3]), np.array([0.1, 0.2, 0.3, 0.05]))
    assert w.touches == 3 and r.stats.update_rows == 3  # slot 2 written once (last wins)
    assert r.level[2] == r.quantize((0.3 + 1e-3) ** 0.6)
    # a priority above the scale doubles it: rows with level >= 2 are rewritten (halved)
    before = r.level[:50].copy()
    w = r.update(np.array([7]), np.array([3.0]))  # (3.001)^0.6 = 1.93 > scale 1
    assert r.scale == 2.0 and r.stats.rescales == 1
    assert r.stats.rescale_rows == int((before > 1).sum())
    assert w.touches == 1 + r.stats.rescale_rows
    assert r.level[0] == 32 and r.level[7] == r.quantize(3.001 ** 0.6)


def test_dqn_amper_trace_counts_searches_and_feeds_the_program():
    cfg = DQNConfig(env_id="CartPole-v1", steps=800, seed=2, replay="amper_k",
                    learning_starts=200, batch_size=16, buffer_size=2000)
    trace = capture_config(cfg)
    info, ops = trace.meta.workload_info, trace.ops
    assert trace.meta.algorithm == "dqn_amper_k" and info["replay"] == "amper_k"
    amper = info["amper"]
    sample = ops[ops.phase == "replay_sample"]
    assert sample.touches.sum() == amper["searches"] >= 16 * len(sample)
    assert amper["searches_per_item"] == pytest.approx(amper["searches"] / (16 * len(sample)))
    add = ops[ops.phase == "replay_add"]
    assert set(add.touches) == {1} and len(add) == 800
    upd = ops[ops.phase == "replay_update"]
    assert upd.touches.sum() == amper["update_rows"] + amper["rescale_rows"]
    spec = parse_spec({"tcam": {"preset": "fefet-tcam-64", "arrays": 32},
                       "placement": {"replay": "tcam"}, "workload": {"env_steps": 800}})

    def sample_s(searches_per_item: float) -> float:
        amper["searches_per_item"] = searches_per_item
        phases = simulate(trace, spec).phases_frame()
        return float(phases.loc[phases.phase == "replay_sample", "time_s"].sum())

    one, ten = sample_s(1.0), sample_s(10.0)
    updates = len(range(200, 800, 2))
    # fefet-tcam-64 × 32 arrays: the key's broadcast, 0.38 ns of search and the merge
    am = make_model(load_part("tcam", "fefet-tcam-64", arrays=32))
    search_s = float(am.sample_seconds(16 * updates, 0, 0))
    assert search_s > 0.38e-9 * 16 * updates
    assert ten - one == pytest.approx(9 * search_s, rel=1e-6)


@pytest.mark.parametrize("replay", ["amper_k", "amper_fr"])
def test_same_seed_same_run(replay):
    runs = []
    for _ in range(2):
        rec = Recorder()
        cfg = DQNConfig(env_id="CartPole-v1", steps=600, seed=4, replay=replay,
                        learning_starts=200, batch_size=16)
        returns, agent = train(cfg, rec)
        runs.append((returns, agent.replay.level.copy(), rec.frame()))
    (ra, la, oa), (rb, lb, ob) = runs
    assert ra == rb
    np.testing.assert_array_equal(la, lb)
    assert oa.touches.tolist() == ob.touches.tolist()
