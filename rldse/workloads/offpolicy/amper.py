"""AMPER-style prioritized replay (Li et al., ICCAD 2022, arXiv 2207.07791) for the numpy DQN.

AMPER replaces PER's sum-tree descent with nearest-neighbour searches over *quantized*
priorities held in TCAM arrays: a random-number generator proposes target priorities,
each search puts the stored priorities nearest to its target into a candidate set buffer
(CSP), and the minibatch is drawn uniformly from that buffer. AMPER-k keeps the k
nearest per target, AMPER-fr everything within a fixed radius. What the public abstract
and summaries state (AMPER, Li et al., ICCAD 2022, arXiv 2207.07791) is that much; the paper's text could not be read
here, so the details below are this module's design, each marked as such.

Storage (design). One TCAM row per replay slot holds that slot's priority level
ℓ ∈ {1, …, L−1}, L = 2^bits, *thermometer-coded* (bit j set iff j < ℓ, L−1 bits per row).
With that code a ternary key finds every row with lo ≤ ℓ ≤ hi in ONE standard TCAM search
(key bits below lo are 1, bits at or above hi are 0, bits between are don't-care), so a
radius search is one search. It limits L−1 to the array's row width (64-bit rows: up to
bits = 6). Quantization is linear on [0, scale]: ℓ = ceil(p / scale · (L−1)), clipped to
[1, L−1], so tiny priorities keep a floor level (PER's ε plays the same role); ``scale``
is a power of two ≥ the largest priority seen. When a priority exceeds it, scale doubles
and every stored level halves (ℓ → ceil(ℓ/2)): every row whose level changes is
rewritten, and those writes are counted (``rescale_rows``).

Targets (design; the paper's generator could not be checked). ``target="proportional"``
(default): m = round(B · targets_per_item) stratified draws u in [0, Σ ℓ_i) mapped through
the level histogram (L counters the controller keeps; one small on-chip prefix scan, not
costed) to a level, so a target lands on level ℓ with probability ∝ ℓ · count(ℓ), PER's
proportional rule on quantized priorities. ``target="uniform"``: the random-number
generator draws levels uniformly between the smallest and largest occupied level: a
target then selects a priority *value* uniformly, which over-weights rare high levels
relative to PER; kept as the reading of "random-number generator" closest to the
summaries' wording, for comparison.

Searches (design). AMPER-fr: one radius search [ℓ−r, ℓ+r] per target; at most
``max_per_search`` of its matches enter the CSP (a random, evenly spaced subset when there
are more: the buffer is finite). AMPER-k: the controller needs the smallest radius d* that
holds ≥ k rows; it probes radius 0, 1, 2, 4, … until a search reports ≥ k matches (a
match counter on the match lines is assumed), then bisects between the last two radii.
Each probe is one search (``knn_searches``). The CSP gets every row within d*−1 and the
rest of the k from the ring at distance d*, evenly spaced from a random offset (the exact
k nearest, ties broken at random). With proportional targets a target level always holds
rows, so once every level holds ≥ k rows a target costs one search.

Sampling: B draws with replacement, uniform over the CSP. Importance weights use the
quantized proportional probability P(i) = ℓ_i / Σ ℓ, which the proportional AMPER-k
sampler realises exactly when every target's level holds ≥ k rows (then each target
contributes k rows of its own level); AMPER-fr and AMPER-k's ring fill smooth it.

Counts for a simulator (``stats``): TCAM searches, candidates read into the CSP (each
read out through the match-line priority encoder), rows written by inserts, by priority
updates (every updated row rewritten) and by rescales. Trace rows (dqn.py) put the AM
work in ``touches``: searches for ``replay_sample``, rows written for ``replay_add`` and
``replay_update``; their flops/bytes are this numpy emulation's (a stable radix sort of
the levels per sample: it is what the host ran).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from rldse.kernels.replay import (
    IS_WEIGHT_FLOPS,
    PRIORITY_FLOPS,
    TD_BYTES,
    WEIGHT_BYTES,
    Batch,
    OpWork,
    UniformReplay,
    arith,
    gather,
)

LEVEL_BYTES = 1  # one level per row in the emulation (uint8; bits ≤ 8)
ORDER_BYTES = 8  # int64 position per row of the emulation's sort
TARGET_FLOPS = 2  # (t + U)·(total/m)
QUANTIZE_FLOPS = 2  # p / scale · (L−1), ceil

Variant = Literal["k", "fr"]
Target = Literal["proportional", "uniform"]


def knn_searches(d_star: int, levels: int) -> int:
    """TCAM searches to find the smallest radius d* holding ≥ k rows: probe 0, 1, 2, 4, …
    (capped at levels−1) until a probe holds ≥ k, then bisect between the last two."""
    top = levels - 1
    probes, lo, d = 1, 0, 0  # radius 0 searched; lo = largest radius known to hold < k
    if d_star == 0:
        return probes
    d = 1
    while True:
        probes += 1
        if d >= d_star:
            break
        lo = d
        d = min(2 * d, top)
    hi = d
    while hi - lo > 1:
        mid = (lo + hi) // 2
        probes += 1
        if mid >= d_star:
            hi = mid
        else:
            lo = mid
    return probes


@dataclass
class AmperStats:
    """Cumulative AM work since construction (what the TCAM part is charged for)."""

    sample_calls: int = 0
    sampled: int = 0  # items drawn into minibatches
    targets: int = 0
    searches: int = 0
    candidates: int = 0  # rows read into the CSP
    insert_rows: int = 0
    update_items: int = 0
    update_rows: int = 0
    rescale_rows: int = 0
    rescales: int = 0
    empty_csp: int = 0  # batches whose CSP was empty (uniform targets only): drawn uniformly

    def per_item(self) -> dict[str, float]:
        s = max(self.sampled, 1)
        u = max(self.update_items, 1)
        return {"searches_per_item": self.searches / s,
                "candidates_per_item": self.candidates / s,
                "writes_per_update_item": (self.update_rows + self.rescale_rows) / u}


class AmperReplay(UniformReplay):
    """Ring buffer of transitions plus quantized priorities searched as a TCAM would."""

    dtype = "int32"  # integer level arithmetic (the emulation's sort and histogram)

    def __init__(self, capacity: int, obs_dim: int, rng: np.random.Generator,
                 obs_dtype: np.dtype = np.float32, *, variant: Variant = "k",
                 alpha: float = 0.6, eps: float = 1e-3, bits: int = 6, k: int = 4,
                 radius: int = 1, max_per_search: int = 16,
                 target: Target = "proportional", targets_per_item: float = 1.0) -> None:
        super().__init__(capacity, obs_dim, rng, obs_dtype)
        if variant not in ("k", "fr"):
            raise ValueError(f"amper variant must be 'k' or 'fr', got {variant!r}")
        if target not in ("proportional", "uniform"):
            raise ValueError(f"amper target must be 'proportional' or 'uniform', got {target!r}")
        if not 1 <= bits <= 8:
            raise ValueError(f"amper bits must be 1-8, got {bits}")
        if k < 1 or radius < 0 or max_per_search < 1 or targets_per_item <= 0:
            raise ValueError("amper k, max_per_search >= 1, radius >= 0, targets_per_item > 0")
        self.variant, self.target = variant, target
        self.alpha, self.eps = alpha, eps
        self.bits, self.levels = bits, 1 << bits
        self.k, self.radius, self.max_per_search = k, radius, max_per_search
        self.targets_per_item = targets_per_item
        self.level = np.zeros(capacity, dtype=np.uint8)  # 0: empty row (never matches)
        self.scale = 1.0
        self.max_priority = 1.0
        self.stats = AmperStats()
        self._probes = np.array([knn_searches(d, self.levels) for d in range(self.levels)])

    # ---- quantization ------------------------------------------------------------------
    def quantize(self, priority: np.ndarray | float) -> np.ndarray:
        q = np.ceil(np.asarray(priority, dtype=np.float64) / self.scale * (self.levels - 1))
        return np.clip(q, 1, self.levels - 1).astype(np.uint8)

    def _raise_scale(self, priority: float) -> int:
        """Double scale until it covers ``priority``; halve stored levels; rows rewritten."""
        rows = 0
        while priority > self.scale:
            self.scale *= 2.0
            lv = self.level[:self.size]
            changed = lv > 1
            rows += int(changed.sum())
            lv[changed] = (lv[changed] + 1) // 2
            self.stats.rescales += 1
        self.stats.rescale_rows += rows
        return rows

    def set_priorities(self, priority: np.ndarray) -> None:
        """Load priorities for the filled slots at once (tests and latency studies)."""
        priority = np.asarray(priority, dtype=np.float64)
        if priority.shape != (self.size,):
            raise ValueError(f"need {self.size} priorities, got {priority.shape}")
        self.max_priority = max(self.max_priority, float(priority.max(initial=0.0)))
        while self.max_priority > self.scale:
            self.scale *= 2.0
        self.level[:self.size] = self.quantize(priority)

    def fill(self, n: int) -> None:
        """Mark the first n slots filled (zero transitions): for sampler-only use."""
        self.size = min(n, self.capacity)
        self.pos = self.size % self.capacity

    # ---- buffer operations -------------------------------------------------------------
    def add(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray,
            done: bool) -> OpWork:
        """Ring-buffer write plus one TCAM row written with the max priority's level."""
        slot = self.pos
        work = super().add(obs, action, reward, next_obs, done)
        self.level[slot] = self.quantize(self.max_priority)
        self.stats.insert_rows += 1
        return work + arith(1, QUANTIZE_FLOPS, LEVEL_BYTES, touches=1)

    def probabilities(self, idx: np.ndarray) -> np.ndarray:
        """The quantized proportional probability P(i) = ℓ_i / Σ ℓ the sampler targets."""
        lv = self.level[:self.size].astype(np.int64)
        return self.level[np.asarray(idx)].astype(np.float64) / float(lv.sum())

    def candidates(self, n_targets: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Fill the CSP for ``n_targets`` random targets: (candidate slots, target level of
        each candidate, TCAM searches)."""
        n, L = self.size, self.levels
        lv = self.level[:n]
        counts = np.bincount(lv, minlength=L)
        cum = np.concatenate([[0], np.cumsum(counts)])  # cum[l]: rows with level < l
        order = np.argsort(lv, kind="stable")  # rows grouped by level
        occupied = np.flatnonzero(counts)
        m = n_targets
        if self.target == "proportional":
            mass = np.cumsum(np.arange(L) * counts)
            u = (np.arange(m) + self.rng.random(m)) * (mass[-1] / m)
            tl = np.minimum(np.searchsorted(mass, u, side="right"), L - 1)
        else:
            tl = self.rng.integers(occupied[0], occupied[-1] + 1, size=m)

        def pos_range(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """Positions in ``order`` of rows with lo ≤ level ≤ hi (levels clipped)."""
            lo_c, hi_c = np.clip(lo, 0, L), np.clip(hi, -1, L - 1)
            a = cum[lo_c]
            b = np.maximum(cum[hi_c + 1], a)
            return a, b

        if self.variant == "fr":
            a, b = pos_range(tl - self.radius, tl + self.radius)
            count = b - a
            take = np.minimum(count, self.max_per_search)
            j = np.arange(self.max_per_search)[None, :]
            off = self.rng.random(m)[:, None]
            q = np.floor(off + j * (count / np.maximum(take, 1))[:, None]).astype(np.int64)
            pos = a[:, None] + np.minimum(q, np.maximum(count - 1, 0)[:, None])
            valid = j < take[:, None]
            searches = m
        else:
            kk = min(self.k, n)
            d = np.arange(L)
            a_all, b_all = pos_range(tl[:, None] - d[None, :], tl[:, None] + d[None, :])
            within = b_all - a_all  # rows within radius d of each target
            d_star = np.argmax(within >= kk, axis=1)
            searches = int(self._probes[d_star].sum())
            c_in = np.where(d_star > 0, within[np.arange(m), np.maximum(d_star - 1, 0)], 0)
            ia, _ = pos_range(tl - d_star + 1, tl + d_star - 1)
            # ring at distance d*: level tl-d* and (if d* > 0) level tl+d*
            la, lb = pos_range(tl - d_star, tl - d_star)
            ra, rb = pos_range(tl + d_star, tl + d_star)
            rb = np.where(d_star > 0, rb, ra)
            left_n, ring_n = lb - la, (lb - la) + (rb - ra)
            need = kk - c_in
            j = np.arange(kk)[None, :]
            off = self.rng.random(m)[:, None]
            step = (ring_n / np.maximum(need, 1))[:, None]
            q = np.floor(off * ring_n[:, None] + (j - c_in[:, None]) * step).astype(np.int64)
            q = np.mod(q, np.maximum(ring_n, 1)[:, None])
            ring_pos = np.where(q < left_n[:, None], la[:, None] + q,
                                ra[:, None] + q - left_n[:, None])
            pos = np.where(j < c_in[:, None], ia[:, None] + j, ring_pos)
            valid = np.ones(pos.shape, dtype=bool)
        slots = order[pos[valid]]
        tl_each = np.broadcast_to(tl[:, None], pos.shape)[valid]
        return slots, tl_each, searches

    def sample(self, batch: int, beta: float = 1.0) -> tuple[Batch, OpWork]:
        """Targets → TCAM searches → CSP → B uniform draws from it, with IS weights."""
        m = max(1, round(batch * self.targets_per_item))
        csp, _, searches = self.candidates(m)
        if csp.size:
            idx = csp[self.rng.integers(0, csp.size, size=batch)]
        else:
            self.stats.empty_csp += 1
            idx = self.rng.integers(0, self.size, size=batch)
        prob = self.probabilities(idx)
        weights = (self.size * prob) ** -beta
        weights = (weights / weights.max()).astype(np.float32)
        st = self.stats
        st.sample_calls += 1
        st.sampled += batch
        st.targets += m
        st.searches += searches
        st.candidates += int(csp.size)
        n = self.size
        work = arith(batch, m * TARGET_FLOPS + batch * IS_WEIGHT_FLOPS,
                     batch * WEIGHT_BYTES + n * (3 * LEVEL_BYTES + ORDER_BYTES),
                     touches=searches) + gather(batch, batch * 2 * self.transition_bytes)
        return self._gather(idx, weights), work

    def update(self, idx: np.ndarray, td_error: np.ndarray) -> OpWork:
        """New priorities (|δ| + ε)^α for sampled slots: quantize and rewrite their rows
        (last write wins for repeated slots); a new maximum may first rescale every row."""
        priority = (np.abs(np.asarray(td_error, dtype=np.float64)) + self.eps) ** self.alpha
        idx = np.asarray(idx, dtype=np.int64)
        self.max_priority = max(self.max_priority, float(priority.max()))
        rescaled = self._raise_scale(self.max_priority)
        uniq, first_rev = np.unique(idx[::-1], return_index=True)
        self.level[uniq] = self.quantize(priority[::-1][first_rev])
        n, rows = idx.size, int(uniq.size)
        self.stats.update_items += n
        self.stats.update_rows += rows
        return arith(n, n * (PRIORITY_FLOPS + 1 + QUANTIZE_FLOPS),
                     n * TD_BYTES + rows * LEVEL_BYTES, touches=rows + rescaled)
