"""CPU time beside wall time, read sparsely: what a recorded operation cost the CPU.

Wall time on a busy host includes time the OS gave to other processes; CPU time does not.
But a CPU clock read is a system call (``clock_gettime(CLOCK_THREAD_CPUTIME_ID)``: about
0.75 µs on the development VM, against 0.06 µs for ``perf_counter_ns``), more than a
tabular ``act`` row takes. So a recorder reads it only at boundaries it already cuts, at
most once per ``SAMPLE_EVERY_NS`` of wall time (under 0.1 % of the loop), and wherever
the loop is about to wait or has just waited (``CpuClock.sample``). Between two samples
the CPU/wall rate is taken as constant, so an operation's CPU time is its wall time times
the rate over its span: exact for an operation that spans a window, and for shorter
ones an unbiased share of the window's preemptions (a preemption is as likely to land in
any instant of CPU work), which per-phase sums over thousands of windows average out.

Except at the read itself. Reading the CPU clock brings the scheduler's accounting up to
date, and a thread whose time slice has run out is switched out on the way back from that
system call (observed with two busy loops sharing the core: 142 of 143 long stalls came
right after a read). So each sample stamps the wall clock on both sides of the read, and
the span between the stamps, where that preemption lands, gets no CPU time, so it cannot
dilute the CPU/wall rate of the window that follows (benchmarks/contended_capture.py). A
recorder that samples at an op's end ends the op at the second stamp (``sample`` returns
it): the stall stays in some op's wall time, where the contention it is counts
(``Trace.compute_wall_per_cpu``), and out of every op's CPU time.
"""

from __future__ import annotations

from time import perf_counter_ns

import numpy as np

#: Wall time between CPU clock reads, ns: 0.75 µs per read every 1 ms is 0.075 %.
SAMPLE_EVERY_NS = 1_000_000


class CpuClock:
    """(wall ns, CPU ns) samples of one thread or process: ``read`` is its CPU clock
    (``time.thread_time_ns`` or ``time.process_time_ns``)."""

    __slots__ = ("read", "wall_ns", "cpu_ns", "next_ns")

    def __init__(self, read) -> None:
        self.read = read
        self.wall_ns: list[int] = []
        self.cpu_ns: list[int] = []
        self.next_ns = 0  # the first boundary samples

    def sample(self, t_ns: int | None = None) -> int:
        """Read the CPU clock now (``t_ns``: the wall time just read, if any), stamped
        with the wall time before and after the read (the module docstring says why);
        returns the wall time after it."""
        t = perf_counter_ns() if t_ns is None else t_ns
        c = self.read()
        after = perf_counter_ns()
        self.wall_ns += (t, after)
        self.cpu_ns += (c, c)
        self.next_ns = after + SAMPLE_EVERY_NS
        return after

    def clear(self) -> None:
        self.wall_ns.clear()
        self.cpu_ns.clear()
        self.next_ns = 0

    def fraction(self, start_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
        """CPU time / wall time over each span [start, end] (in [0, 1]; NaN for all
        spans when fewer than two samples were taken). Spans outside the sampled range
        take the rate of the nearest window."""
        return cpu_fraction(np.asarray(self.wall_ns, np.int64), np.asarray(self.cpu_ns, np.int64),
                            start_ns, end_ns)


def cpu_fraction(wall_ns: np.ndarray, cpu_ns: np.ndarray, start_ns: np.ndarray,
                 end_ns: np.ndarray) -> np.ndarray:
    """``CpuClock.fraction`` of one clock's samples ``wall_ns``/``cpu_ns`` (in time
    order). The rate of a window is capped at 1: more CPU than wall means other threads of the process ran in parallel,
    and the operation still took its wall time."""
    start = np.asarray(start_ns, np.float64)
    end = np.asarray(end_ns, np.float64)
    if len(wall_ns) < 2:
        return np.full(start.shape, np.nan)
    w, c = wall_ns.astype(np.float64), cpu_ns.astype(np.float64)
    dw = np.diff(w)
    rate = np.clip(np.diff(c) / np.where(dw > 0, dw, 1.0), 0.0, 1.0)
    rate[dw <= 0] = 1.0
    cum = np.concatenate(([0.0], np.cumsum(rate * dw)))

    def at(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.clip(np.searchsorted(w, t, side="right") - 1, 0, len(rate) - 1)
        return cum[k] + rate[k] * (t - w[k]), rate[k]

    c_end, _ = at(end)
    c_start, r_start = at(start)
    span = end - start
    frac = np.where(span > 0, (c_end - c_start) / np.where(span > 0, span, 1.0), r_start)
    return np.clip(frac, 0.0, 1.0)
