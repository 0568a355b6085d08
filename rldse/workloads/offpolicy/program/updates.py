"""A learner update's costs, composed once for every path that schedules it.

PEARL's protocol (package docstring) gives an update three drives: the sample on the
replay manager (RM); the learner's gradient step after the sampled batch's copy to the
learner's device; the RM's priority update after the TD errors' copy back to the host
(prioritized replay only). Then the target syncs owed, the parameter copy to the actors
and the RM's inserts of the transitions gathered since the last update. Which copies
and rows make up each drive is said here only: the per-event loop (events.py: ``one``),
merged sync rounds (merged.py) and merged async (maxplus.py: ``block``) schedule the
same drives, each its own way, and tests/sim/test_exact.py holds them to the reference
engine's schedule to 1e-9.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.models.kinds import PartTime
from rldse.workloads.offpolicy.program.costs import LearnerCosts

Seconds = tuple[np.ndarray, np.ndarray, np.ndarray]  # host, device, wall


@dataclass(frozen=True)
class Drives:
    """Host, device and wall seconds of each drive, one entry per update (or per group of
    updates, their sums); ``update`` None: no priority update (uniform replay)."""

    sample: Seconds
    learn: Seconds
    update: Seconds | None


class UpdateCosts:
    """The learner's update drives, syncs and inserts, drawn from LearnerCosts' cycles."""

    def __init__(self, lc: LearnerCosts) -> None:
        self.lc = lc
        self._inserts: dict[int, PartTime] = {}

    def one(self) -> tuple[PartTime, PartTime, PartTime | None]:
        """The next update's sample, learn and priority-update drives."""
        lc = self.lc
        update = None if lc.update is None else lc.td_copy + lc.update.take(1)
        return lc.sample.take(1), lc.batch_copy + lc.learn.take(1), update

    def block(self, counts: np.ndarray) -> Drives:
        """The next groups of ``counts[i]`` updates (sums per group), as ``one`` would
        draw them one update at a time."""
        lc = self.lc
        update = None if lc.update is None else _plus(lc.update.takes(counts), lc.td_copy,
                                                       counts)
        return Drives(lc.sample.takes(counts), _plus(lc.learn.takes(counts), lc.batch_copy,
                                                     counts), update)

    def insert(self, n: int) -> PartTime:
        """The RM inserting n new transitions at once (LearnerCosts.insert), priced once
        per n: a GPU model's energy ledger then holds the same costings whichever path
        asked (rldse.models.gpu.GpuModel.dynamic_share)."""
        p = self._inserts.get(n)
        if p is None:
            p = self._inserts[n] = self.lc.insert(n)
        return p

    def inserts(self, n_ins: np.ndarray) -> Seconds:
        """``insert(n_ins[i])`` for each i, as arrays."""
        h, d, w = (np.zeros(len(n_ins)) for _ in range(3))
        for n in np.unique(n_ins):
            p = self.insert(int(n))
            if p.wall_s:
                at = n_ins == n
                h[at], d[at], w[at] = p.host_s, p.device_s, p.wall_s
        return h, d, w


def _plus(s: Seconds, extra: PartTime, counts: np.ndarray) -> Seconds:
    """``s`` with ``extra`` added once per update of each group."""
    return (s[0] + extra.host_s * counts, s[1] + extra.device_s * counts,
            s[2] + extra.wall_s * counts)
