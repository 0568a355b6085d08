"""Statistics of a run whose host state is switched in windows (a busy neighbour stopped
and resumed): a mean per window class, and its ratio's interval with whole windows
resampled, since ops inside one window share its host state. Used by
benchmarks/probes/contended_capture.py and benchmarks/probes/vcpu_neighbour.py."""

from __future__ import annotations

import numpy as np


def unit_cost_s(col: np.ndarray, win: np.ndarray, windows: np.ndarray) -> float:
    """Mean of ``col`` over the ops whose window is in ``windows``."""
    m = np.isin(win, windows)
    return float(col[m].sum() / max(m.sum(), 1))


def ratio_interval(col: np.ndarray, win: np.ndarray, a: np.ndarray, b: np.ndarray,
                   n: int, rng: np.random.Generator, draws: int = 400) -> tuple[float, float]:
    """5th and 95th percentiles of mean(b)/mean(a) - 1, windows resampled with replacement
    (each window a block: ops inside one window share its host state); ``n`` windows."""
    sums, counts = np.zeros(n), np.zeros(n)
    m = win >= 0
    np.add.at(sums, win[m], col[m])
    np.add.at(counts, win[m], 1)
    out = []
    for _ in range(draws):
        ra, rb = rng.choice(a, len(a)), rng.choice(b, len(b))
        ca, cb = counts[ra].sum(), counts[rb].sum()
        if ca and cb:
            out.append((sums[rb].sum() / cb) / (sums[ra].sum() / ca) - 1)
    return (float(np.percentile(out, 5)), float(np.percentile(out, 95))) if out else (
        float("nan"), float("nan"))
