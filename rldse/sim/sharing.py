"""Processor sharing, event by event: the reference for the fast paths' closed forms.

Jobs (rollouts, workers' rounds) released at times r_i with w_i seconds of work each
share a CPU as a time-slicing OS shares it: while n jobs are runnable every one runs at
rate min(1, capacity(n) / n) (capacity(n): core-equivalents n runnable jobs get, e.g.
CpuSpec.core_throughput with SMT gain and the measured shared-core slowdown). The run
is advanced from event to event (a release or a completion), so unequal jobs finish
when processor sharing finishes them, not at the closed forms' lower bound
max(max_i r_i + w_i, max_k r_k + Σ_{j≥k} w_j / capacity).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def shared_ends(releases_s: np.ndarray, works_s: np.ndarray,
                capacity: Callable[[int], float]) -> np.ndarray:
    """Each job's end time under processor sharing (see the module docstring)."""
    r = np.asarray(releases_s, dtype=np.float64)
    w = np.asarray(works_s, dtype=np.float64)
    ends = np.empty(len(r))
    order = list(np.argsort(r, kind="stable"))
    left: dict[int, float] = {}
    t = float(r[order[0]]) if order else 0.0
    nxt = 0
    while nxt < len(order) or left:
        while nxt < len(order) and r[order[nxt]] <= t:
            j = int(order[nxt])
            nxt += 1
            if w[j] > 0:
                left[j] = float(w[j])
            else:
                ends[j] = t
        if not left:
            if nxt < len(order):
                t = float(r[order[nxt]])
            continue
        n = len(left)
        rate = min(1.0, capacity(n) / n)
        j_min = min(left, key=left.__getitem__)
        dt_done = left[j_min] / rate
        dt_rel = float(r[order[nxt]]) - t if nxt < len(order) else np.inf
        dt = min(dt_done, dt_rel)
        for j in left:
            left[j] -= dt * rate
        t += dt
        if dt_done <= dt_rel:
            left[j_min] = 0.0
            for j in [j for j, x in left.items() if x <= 1e-15 * max(1.0, w[j])]:
                ends[j] = t
                del left[j]
    return ends
