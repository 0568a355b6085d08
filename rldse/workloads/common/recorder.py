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

CPU time (``cpu_s``) is the worker thread's ``time.thread_time_ns``, read sparsely at row
ends (rldse.cpu_clock: a row that reads it ends after the read, so a preemption there is
in its wall time, not its CPU time) and wherever the loop waits (``sample_cpu``). Thread rather than
process time: each built-in worker runs its loop on one thread (torch and BLAS pinned to
one), so process time would only add other threads' work (a pipe's feeder, the
interpreter's), never the loop's. ``cpu_fractions`` gives each row its CPU/wall fraction;
rows sent from another process travel with theirs (``add_foreign``).
"""

from __future__ import annotations

import statistics
from time import perf_counter_ns, thread_time_ns
from typing import TYPE_CHECKING

import numpy as np

from rldse.cpu_clock import CpuClock
from rldse.host import load_sample
from rldse.kernels.network_work import Work
from rldse.kernels.replay import OpWork
from rldse.trace import OPS_COLUMNS, TracedOperator, operator_records

if TYPE_CHECKING:  # on use: the capture CLI's --help loads this module, not a table
    import pandas as pd

_CALIBRATION_RECORDS = 3000


class Recorder:
    """Collects operation rows for one worker (or several, via ``worker=``)."""

    enabled = True

    def __init__(self, worker: str = "host", origin_ns: int | None = None,
                 overhead_ns: float | None = None) -> None:
        self.worker = worker
        self.load_start = load_sample()  # the host's load as the capture begins
        self.now = perf_counter_ns
        self.origin_ns = perf_counter_ns() if origin_ns is None else origin_ns
        self.rows: list[tuple] = []
        #: (phase, items, flops or None for replay work) -> the work an operation ran
        self.works: dict[tuple[str, int, int | None], Work | OpWork] = {}
        self.foreign: list[tuple[list[tuple], np.ndarray]] = []  # (rows, fractions)
        self.cpu = CpuClock(thread_time_ns)
        self.overhead_ns = self._calibrate() if overhead_ns is None else float(overhead_ns)
        self.cpu.clear()
        self.cpu.sample()

    def add(self, phase: str, t0_ns: int, iter: int, items: int = 1, flops: int = 0,
            bytes: int = 0, touches: int = 0, dtype: str = "fp32",
            worker: str | None = None, work: Work | OpWork | None = None) -> None:
        """Record one operation that started at ``t0_ns`` (from ``now()``) and ends now.
        ``work``: the network or replay work it ran (its flops, bytes and touches, and
        its operators, kept once per phase, items and flops for the trace:
        ``operators``)."""
        t1 = perf_counter_ns()
        if t1 >= self.cpu.next_ns:  # the op ends after the read (rldse.cpu_clock)
            t1 = self.cpu.sample(t1)
        if work is not None:
            flops, bytes = work.flops, work.bytes
            touches = getattr(work, "touches", touches)  # a replay's (OpWork)
            # a replay's flops follow its data (AMPER's candidates): one list per items
            key = (phase, items, flops if isinstance(work, Work) else None)
            if key not in self.works:
                self.works[key] = work
        self.rows.append((worker or self.worker, phase, iter, t0_ns, t1 - t0_ns, items,
                          flops, bytes, touches, dtype))

    def operators(self) -> list[TracedOperator]:
        """The operators of the work recorded (``add(work=...)``), per phase, items and
        flops, for ``TraceMeta.operators``."""
        return [r for (phase, items, _), w in self.works.items()
                for r in operator_records(phase, items, w)]

    def sample_cpu(self) -> None:
        """Read the CPU clock now: call it before and after a wait (a blocking receive,
        a send that may block), so no window mixes waiting with computing."""
        self.cpu.sample()

    def stamp(self) -> tuple[int, int]:
        """(wall ns, this thread's CPU ns) now, as a CPU clock sample (``sample_cpu``):
        for spans that are no operation, such as a process's start-up or a receive."""
        wall = self.cpu.sample()
        return wall, self.cpu.cpu_ns[-1]

    def cpu_fractions(self) -> np.ndarray:
        """Each row's CPU time / wall time from this thread's CPU clock: call it in the
        thread that recorded the rows."""
        self.cpu.sample()
        start = np.fromiter((r[3] for r in self.rows), np.int64, len(self.rows))
        dur = np.fromiter((r[4] for r in self.rows), np.int64, len(self.rows))
        return self.cpu.fraction(start, start + dur)

    def add_foreign(self, rows: list[tuple], fractions: np.ndarray) -> None:
        """Rows another process recorded, with their ``cpu_fractions``."""
        self.foreign.append((rows, fractions))

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
        rows = self.rows + [r for rs, _ in self.foreign for r in rs]
        frac = np.concatenate([self.cpu_fractions(), *(f for _, f in self.foreign)])
        return rows_to_frame(rows, self.origin_ns, self.overhead_ns, frac)


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

    def sample_cpu(self) -> None:
        return None


def rows_to_frame(rows: list[tuple], origin_ns: int, overhead_ns: float,
                  cpu_fractions: np.ndarray | None = None) -> pd.DataFrame:
    """An ops table of rows (``Recorder.add``'s tuples). CPU time is the bias-corrected
    duration times the row's CPU/wall fraction (``Recorder.cpu_fractions``); unknown
    (NaN) without fractions."""
    import pandas as pd

    cols = [c for c in OPS_COLUMNS if c != "cpu_s"]
    df = pd.DataFrame.from_records(rows, columns=cols) if rows else pd.DataFrame(
        {c: pd.Series([], dtype=object if OPS_COLUMNS[c][0] == "category" else OPS_COLUMNS[c][0])
         for c in cols})
    # columns 'start_s' and 'dur_s' hold raw ns until here
    df["start_s"] = (df["start_s"].astype("int64") - origin_ns) / 1e9
    df["dur_s"] = (df["dur_s"].astype("float64") - overhead_ns).clip(lower=0.0) / 1e9
    frac = np.full(len(df), np.nan) if cpu_fractions is None else cpu_fractions
    df.insert(cols.index("dur_s") + 1, "cpu_s", df["dur_s"].to_numpy() * frac)
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
