"""Recorder: times each phase of a real training loop and keeps its work counts.

Usage inside a loop (the same code runs traced and untraced)::

    t0 = rec.now()
    obs, r, term, trunc, _ = env.step(a)
    rec.add("env_step", t0, it, items=1)

``now`` is ``time.perf_counter_ns`` (CLOCK_MONOTONIC on Linux: one clock for every
process, so actor processes share the parent's origin). ``add`` reads the clock first
thing, so the measured interval holds the operation plus a fixed bias: the tail of
``now`` and the call into ``add``. That bias is calibrated at construction as the
median duration of an empty record and subtracted from every duration (clipped at 0).
Rows are plain tuples appended to a list (about 0.1 µs); the DataFrame is built once.
"""

from __future__ import annotations

import statistics
from time import perf_counter_ns
from typing import TYPE_CHECKING

from rldse.trace import OPS_COLUMNS

if TYPE_CHECKING:  # on use: the capture CLI's --help loads this module, not a table
    import pandas as pd

_CALIBRATION_RECORDS = 3000


class Recorder:
    """Collects operation rows for one worker (or several, via ``worker=``)."""

    enabled = True

    def __init__(self, worker: str = "host", origin_ns: int | None = None,
                 overhead_ns: float | None = None) -> None:
        self.worker = worker
        self.now = perf_counter_ns
        self.origin_ns = perf_counter_ns() if origin_ns is None else origin_ns
        self.rows: list[tuple] = []
        self.overhead_ns = self._calibrate() if overhead_ns is None else float(overhead_ns)

    def add(self, phase: str, t0_ns: int, iter: int, items: int = 1, flops: int = 0,
            bytes: int = 0, touches: int = 0, dtype: str = "fp32",
            worker: str | None = None) -> None:
        """Record one operation that started at ``t0_ns`` (from ``now()``) and ends now."""
        t1 = perf_counter_ns()
        self.rows.append((worker or self.worker, phase, iter, t0_ns, t1 - t0_ns, items,
                          flops, bytes, touches, dtype))

    def _calibrate(self) -> float:
        """Median raw duration of an empty record, in ns: the bias inside each interval."""
        now, add = self.now, self.add
        for _ in range(_CALIBRATION_RECORDS):
            t0 = now()
            add("env_step", t0, 0, items=1, flops=0, bytes=0)
        raw = [row[4] for row in self.rows]
        self.rows.clear()
        return float(statistics.median(raw))

    def frame(self) -> pd.DataFrame:
        """Rows as an ops table: start relative to the origin, durations bias-corrected."""
        return rows_to_frame(self.rows, self.origin_ns, self.overhead_ns)


class NullRecorder:
    """Same interface, records nothing: the untraced baseline of the same loop."""

    enabled = False
    worker = "host"
    overhead_ns = 0.0

    @staticmethod
    def now() -> int:
        return 0

    def add(self, *args, **kwargs) -> None:
        return None


def rows_to_frame(rows: list[tuple], origin_ns: int, overhead_ns: float) -> pd.DataFrame:
    import pandas as pd

    cols = list(OPS_COLUMNS)
    df = pd.DataFrame.from_records(rows, columns=cols) if rows else pd.DataFrame(
        {c: pd.Series([], dtype=object if OPS_COLUMNS[c][0] == "category" else OPS_COLUMNS[c][0])
         for c in cols})
    # columns 'start_s' and 'dur_s' hold raw ns until here
    df["start_s"] = (df["start_s"].astype("int64") - origin_ns) / 1e9
    df["dur_s"] = (df["dur_s"].astype("float64") - overhead_ns).clip(lower=0.0) / 1e9
    return df


def merge_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate several workers' tables in time order (ties broken by worker, then iter)."""
    import pandas as pd

    nonempty = [f for f in frames if len(f)] or frames[:1]
    if len(nonempty) == 1:
        start = nonempty[0]["start_s"].to_numpy()
        if (start[1:] > start[:-1]).all():  # one table, in order without ties: nothing to sort
            return nonempty[0].reset_index(drop=True)
    df = pd.concat(nonempty, ignore_index=True)
    return df.sort_values(["start_s", "worker", "iter"], kind="stable").reset_index(drop=True)
