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
dilute the CPU/wall rate of the window that follows (benchmarks/probes/contended_capture.py). A
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


# ---- warm-up after a switch-in -------------------------------------------------------
#
# A thread switched back in after other processes ran on its CPU spends extra CPU time
# for its first ~1-2 ms of CPU (caches, TLBs and predictors refilled): on the 2-vCPU EPYC
# KVM development VM ops in the first 50 µs cost 1.5-6x their warm mean, about 0.15-0.6 ms
# of CPU per switch-in, more the longer it was off the CPU (benchmarks/
# contended_capture.py --diagnose). A busier host switches the thread in more often per ms
# of its CPU, so its ops cost more CPU: an excess no CPU clock removes. The functions
# below locate the switch-ins in a capture's own clock samples and measure that penalty.

#: Wall time not seen by the CPU clock in one sample interval above which the thread was
#: switched out, ns (an interrupt costs a few µs; a switch-out lasts another task's slice).
SWITCH_OFF_NS = 30_000
#: CPU time after a switch-in from which an op counts as warm (the late-slice baseline), ns.
WARM_AFTER_NS = 2_500_000
#: Edges of the switch-in classes by how long the thread was off the CPU, ns: the penalty
#: grows with it (benchmarks/probes/contended_capture.py --diagnose).
OFF_EDGES_NS = (1_000_000, 3_000_000, 6_000_000, 12_000_000)


def switch_ins(wall_ns: np.ndarray, cpu_ns: np.ndarray, start_ns: np.ndarray,
               end_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where one thread was switched back in, from its CPU clock samples (time order) and
    its ops' spans (time order): (each switch-in's wall ns and off-CPU ns; per op, the index of the
    last switch-in at or before its start, -1 for none; per op, the thread's CPU ns since
    then). A switch is a sample interval with more than SWITCH_OFF_NS of wall time the CPU
    clock did not see. A stall at a clock read (no CPU in the interval) or between ops is a
    switch-in at the interval's end; otherwise the thread was switched out inside the op
    that overlaps the interval longest, and the switch-in is placed at that op's start, so
    the op, which pays part of the warm-up, counts as after it."""
    w = np.asarray(wall_ns, np.int64)
    c = np.asarray(cpu_ns, np.int64)
    start, end = np.asarray(start_ns, np.int64), np.asarray(end_ns, np.int64)
    off = np.diff(w) - np.diff(c)
    hits = np.flatnonzero(off > SWITCH_OFF_NS)
    at = np.empty(len(hits), np.int64)
    for j, k in enumerate(hits):
        lo, hi = w[k], w[k + 1]
        a = np.searchsorted(end, lo, side="right")  # first op ending after lo
        b = np.searchsorted(start, hi, side="left")  # ops starting before hi
        overlap = np.minimum(end[a:b], hi) - np.maximum(start[a:b], lo)
        inside = c[k + 1] > c[k] and b > a and overlap.max() > 0
        at[j] = start[a + int(np.argmax(overlap))] if inside else hi
    last = np.searchsorted(at, start, side="right") - 1
    cpu_at_switch = np.concatenate([cpu_at(w, c, at), [0.0]])  # [-1]: no switch-in yet
    since = np.maximum(cpu_at(w, c, start) - cpu_at_switch[last], 0.0)
    return at, off[hits], last, np.where(last >= 0, since, -1.0)


def cpu_at(wall_ns: np.ndarray, cpu_ns: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
    """The CPU clock at wall times ``t_ns``, linear between samples (clamped at the ends)."""
    return np.interp(np.asarray(t_ns, np.float64), np.asarray(wall_ns, np.float64),
                     np.asarray(cpu_ns, np.float64))


def off_class(off_ns: np.ndarray) -> np.ndarray:
    """Each switch-in's class by its off-CPU time (OFF_EDGES_NS)."""
    return np.searchsorted(np.array(OFF_EDGES_NS), off_ns, side="right")


def switch_classes(at_ns: np.ndarray, off_ns: np.ndarray, start_ns: np.ndarray,
                   op_kind: np.ndarray) -> np.ndarray:
    """Each switch-in's class: its off class and the kind (a small int, e.g. the phase
    code) of the op it lands in or just before. Which ops pay the warm-up depends on where
    in the loop the switch-ins land, and that differs with the host's load: a waking
    process preempts the thread inside its longest ops, a used-up time slice ends at the
    next clock read. Classes run from 0 to ``(len(OFF_EDGES_NS) + 1) * (op_kind.max() + 1)``."""
    first = np.clip(np.searchsorted(start_ns, at_ns, side="left"), 0, len(start_ns) - 1)
    return off_class(off_ns) + (len(OFF_EDGES_NS) + 1) * np.asarray(op_kind)[first]


def switch_penalty_ns(cost_ns: np.ndarray, since_ns: np.ndarray, last: np.ndarray,
                      classes: np.ndarray, counted: np.ndarray,
                      n_classes: int) -> tuple[float, np.ndarray]:
    """One phase's warm cost and its penalty per switch-in, measured in the capture
    itself: (mean cost of the ops at least WARM_AFTER_NS of CPU after their last
    switch-in, ns; per switch-in class, the summed excess over that of the earlier ops
    after switch-ins of that class divided by those switch-ins, ns). ``cost_ns``,
    ``since_ns``, ``last``: per op of the phase (``switch_ins``); ``classes``: every
    switch-in's class (``switch_classes``); ``counted``: which switch-ins count (those
    whose ops were kept). NaN warm cost where no op is warm."""
    cost = np.asarray(cost_ns, np.float64)
    warm = since_ns >= WARM_AFTER_NS
    base = float(cost[warm].mean()) if warm.any() else float("nan")
    early = (last >= 0) & ~warm
    early[early] = counted[last[early]]
    n = np.bincount(classes[counted], minlength=n_classes)
    excess = np.bincount(classes[last[early]], weights=cost[early] - base,
                         minlength=n_classes)
    return base, np.where(n > 0, excess / np.maximum(n, 1), 0.0)


def warm_unit_cost_ns(cost_sum_ns: float, n_ops: int, classes: np.ndarray,
                      penalty_ns: np.ndarray) -> float:
    """Mean cost of ``n_ops`` ops with the switch-in penalty taken out: (their summed
    cost - the penalty of each switch-in among them, by its class) / ops."""
    n = np.bincount(classes, minlength=len(penalty_ns))
    return (cost_sum_ns - float(n @ penalty_ns)) / max(n_ops, 1)
