"""Clean unit costs from a busy host: one capture, two busy loops switched on and off beside it.

Runs the DQN CartPole-v1 loop (fixed seed) under the built-in Recorder, pinned to one
logical CPU, with two busy-loop processes pinned to that same CPU (while they run the
capture gets about a third of it). A switcher process on another CPU stops and resumes
the busy loops (SIGSTOP/SIGCONT) in alternating windows of random length (``--window``,
default 0.2-0.5 s; random so that no periodic part of the loop lines up with them) and
logs each switch on CLOCK_MONOTONIC, the recorder's clock. Each recorded op is classed
by the window it lies in; ops within ``--guard`` of a switch (the recorder's CPU clock is
read at most once per ms, so its windows may straddle a switch) or spanning one are
dropped.

Why one capture and not quiet and busy runs in turn: this 2-vCPU VM's own speed drifts by
tens of percent over seconds (its neighbours), so two runs minutes apart differ as much as
contention moves them. Windows of a few hundred ms interleave quiet and busy at a finer
grain than the drift, so the drift cancels. The control is the same comparison between
two classes that differ by nothing: quiet windows split alternately into halves (quiet a
against quiet b), and likewise the busy ones.

Per phase it prints the unit cost (sum over ops / ops: the mean, the statistic the
recorder's CPU apportioning is unbiased for; a median is not, since a preempted window's
CPU time lands on the op that was preempted) from CPU time (``cpu_s``, what the simulator
costs compute ops from: rldse.trace.host_cost_s) and from wall time (``dur_s``, to show
how much contention there was to remove), quiet and busy, their relative difference, a
90 % interval of it (bootstrap over windows), and the quiet-against-quiet control.
Target: every phase's CPU-time unit cost within 5 % of the quiet one. Then the thread's
CPU time per env step over whole windows, which no apportioning touches: if that moves
too, the thread really spent more CPU per step beside the busy loops. ``--diagnose`` adds
a capture with the CPU clock read at every op's start and end (exact per-op CPU time,
and the recorder's rule replayed on the same ops); ``--loops-cpu N`` puts the busy loops
on another vCPU. Exits 0 either way.

What it found (2-vCPU EPYC KVM guest): the OS switches the capture out on the way back
from a CPU clock read once its slice has run out (142 of 143 long stalls), which the
recorder then charged to no op and let dilute the next window's CPU rate; rldse.cpu_clock
now stamps both sides of each read. After that fix, on a quiet host (load average 1.4),
the busy windows' wall time per op is +250 to +470 % and their CPU time per op still +22
to +59 % (control +4 to +11 %); over whole windows, with no apportioning, the thread spent
+39 % more CPU per env step (control +10 %), and the exact per-op clock agrees (+21 to
+67 %, +40 %): CPU time the thread really used beside the busy loops.

Why (``--diagnose``, 20,000 steps, load average 6-12 from other work on the host): a
thread switched back in pays a warm-up. Binned by its CPU time since the last switch-in
(rldse.cpu_clock.switch_ins), ops in the first 50 µs cost 1.5-6.3x the phase's warm mean
(at least 2.5 ms in), at 0.4-1 ms 1.1-2.0x, at 1-2.5 ms 0.9-1.1x; that excess is about
0.15-0.6 ms of CPU per switch-in, more the longer the thread was off the CPU, and the
kernel's switch-in path adds 13-48 µs outside the ops. Beside the busy loops the thread
is switched in every 1.2-1.4 ms of its CPU instead of every 2.9-5.2 ms, so up to a third
of its CPU is warm-up. With the loops at nice 19 or SCHED_IDLE (``--loops-policy``) the busy
windows have as many switch-ins as the quiet ones and their unit costs move by -2 to +8 %
(nice 19) and -1 to +2 % (SCHED_IDLE): the effect follows the added switch-ins.

Taking the penalty out (printed for the stock recorder's sparse samples and, with
``--diagnose``, for the exact clock): rldse.cpu_clock.switch_ins finds the switch-ins in
the capture's own clock samples, and switch_penalty_ns measures each phase's excess per
switch-in, by off-CPU class and by the phase the switch-in lands in (quiet windows'
switch-ins land mostly in learn, a waking process preempting the longest op; busy ones
mostly before act, a used-up slice ending at the next clock read), against that phase's
warm ops; unit cost = (CPU - switch-ins x penalty) / ops. Nothing comes from the quiet
answer. Measured over the whole capture (both window classes pooled) and with each class
alone (``alone``: what a capture wholly on a busy host would have), over five 20,000-
40,000-step captures, busy/quiet went from +13..+68 % raw to -18..+11 % (pooled) and
-4..+14 % (alone), controls within 9 %; the best runs, -1..+3 % (stock, pooled) and
-4..+0 % (stock, alone), were different captures. The excess is mostly removed but not
stably to 5 %: the penalty per switch-in varies up to 1.6x between captures, and
busy-window ops 2.5 ms after a switch-in still cost 1-17 % more than quiet ones (not fully
warm after longer absences), which a busy capture's few warm ops carry into its baseline.
Over 13 more captures (20,000 steps, load average 4-11 from other work on the host) the
worst phase with the penalty taken out was +28 % [4..48] alone and +28 % [5..45] pooled
(median [range]): not stable, so the recorder keeps raw CPU time.

Longer scheduler slices (``--slice-ms``, ``--batch``, ``--turns``; Linux 6.18, EEVDF,
HZ 250). A thread may ask for its own slice, 0.1-100 ms, without privilege
(``scheduler_slice``: sched_setattr's sched_runtime). It buys little. A thread running a
DQN-sized step beside the two loops (``--turns``, load average 8) keeps its CPU 3.6-3.8 ms
per switch-in (about one 4 ms tick) with the kernel's slice (1.4 ms here) and with 100 ms
alike: a running task is protected only for the shortest slice among those queued
(RUN_TO_PARITY: set_protect_slice in kernel/sched/fair.c takes cfs_rq_min_slice), the
neighbours' 1.4 ms, and then gives the CPU up at the next tick or the next update of its
accounting; its own longer slice only moves its virtual deadline later. Reading the
thread's CPU clock (the recorder's, once per ms) is such an update: the turn ends at the
first read after the protection, 1.7-2.0 ms per switch-in (a spinning thread: 2.0 ms
against 3.9). Over two such runs the step's CPU beside the loops rose by +33, +41, +45
and +52 % (medians of 4 reps; each slice, each run) with the CPU clock read, against
+24..+38 % with schedstat read or nothing read (one outlier, +60 %): the read's extra
switch-ins add about ten points, and some 30 % remains at one switch-in per tick. In
DQN captures (20,000 steps, load average 4-12; median [range],
n captures), the busy windows had one switch-in per 1.90 [1.83-2.16] ms of op CPU with the
kernel's slice (n=13) and 2.15 [2.04-2.39] with 100 ms (n=10; paired runs, same seed back
to back: +10..+22 %); busy/quiet worst phase +49 % [18..77] against +41 % [24..57],
thread CPU per env step over whole windows +29 % [15..51] against +27 % [15..33]; 10 ms,
30 ms and SCHED_BATCH (n=3 each) fall in between. So the slice shortens the excess by a
few points, inside the spread; one earlier run at 30 ms that halved the switch-ins was not
reproduced. ``--clock runqueue`` reads CPU time as wall time less the run-queue wait in
/proc/thread-self/schedstat (no update, exact while the thread never sleeps): its gap
read smaller on the loaded host (+17 % [5..36] raw, +18 % [8..35] whole windows, n=5), but
its quiet windows were switched in more often (one per 2.4 ms of op CPU against 3.4), a
dirtier baseline, and at load 4.5 both clocks read +35 % over whole windows; its busy
turns stayed 1.7 ms, so something else in the loop ends them. Not understood yet.

    python benchmarks/probes/contended_capture.py [--steps 40000] [--window 0.2,0.5]
        [--guard-ms 10] [--seed 0] [--diagnose] [--skip-stock] [--loops-cpu N]
        [--loops-policy normal|nice19|idle] [--slice-ms MS] [--batch]
        [--clock thread|runqueue] [--turns]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import signal
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from time import perf_counter_ns, thread_time_ns

import numpy as np
from switched_windows import ratio_interval, unit_cost_s

from rldse.cpu_clock import (
    OFF_EDGES_NS,
    SAMPLE_EVERY_NS,
    WARM_AFTER_NS,
    CpuClock,
    cpu_fraction,
    off_class,
    switch_classes,
    switch_ins,
    switch_penalty_ns,
    warm_unit_cost_ns,
)
from rldse.threads import single_blas_thread
from rldse.workloads.common.recorder import Recorder
from rldse.workloads.offpolicy.dqn import DQNConfig, train

TARGET = 0.05
BUSY_LOOPS = 2
QUIET, BUSY = 0, 1

# The switcher: argv = log path, seed, lo_s, hi_s, pids. Starts with the loops stopped
# (quiet), then alternates; each line of the log is "<monotonic ns> <0 quiet | 1 busy>",
# the state that begins then. Stops (loops stopped, log closed) on SIGTERM.
SWITCHER = """
import os, random, signal, sys, time
log, seed, lo, hi = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
pids = [int(p) for p in sys.argv[5:]]
running = True
def stop(*_):
    global running
    running = False
signal.signal(signal.SIGTERM, stop)
rng = random.Random(seed)
busy = False
with open(log, "w") as f:
    f.write(f"{time.perf_counter_ns()} 0\\n")
    while running:
        time.sleep(rng.uniform(lo, hi))
        if not running:
            break
        busy = not busy
        for p in pids:
            os.kill(p, signal.SIGCONT if busy else signal.SIGSTOP)
        f.write(f"{time.perf_counter_ns()} {int(busy)}\\n")
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    f.write(f"{time.perf_counter_ns()} 0\\n")
"""


class ExactRecorder(Recorder):
    """The Recorder with the thread's CPU clock also read at every op's start and end
    (outside the timed interval): each op's own CPU time, the ground truth the stock
    recorder's once-per-ms apportioning estimates (the diagnosis, ``--diagnose``)."""

    def __init__(self) -> None:
        self.starts: list[tuple[int, int]] = []  # (wall ns, CPU ns) just before each t0
        self.ends: list[tuple[int, int, int]] = []  # (t1, CPU ns just after, wall after)
        super().__init__(worker="host")
        self.ends.clear()  # the calibration's records
        self.now = self._now

    def _now(self) -> int:
        c = thread_time_ns()
        t = perf_counter_ns()
        self.starts.append((t, c))
        return t

    def add(self, phase, t0_ns, iter, items=1, flops=0, bytes=0, touches=0, dtype="fp32",
            worker=None) -> None:
        t1 = perf_counter_ns()
        c1 = thread_time_ns()
        self.rows.append((worker or self.worker, phase, iter, t0_ns, t1 - t0_ns, items,
                          flops, bytes, touches, dtype))
        self.ends.append((t1, c1, perf_counter_ns()))

    def fractions(self) -> tuple[np.ndarray, np.ndarray]:
        """(exact, the stock rule's) CPU/wall fraction of each row: the stock rule
        replayed on this run's row ends (a sample, stamped before and after its read, at
        the first row end at least SAMPLE_EVERY_NS after the previous one: rldse.cpu_clock)."""
        s, e = np.array(self.starts, np.int64), np.array(self.ends, np.int64)
        exact = np.clip((e[:, 1] - s[:, 1]) / np.maximum(e[:, 0] - s[:, 0], 1), 0.0, 1.0)
        keep, nxt = [], 0
        for i, (t, after) in enumerate(e[:, [0, 2]]):
            if t >= nxt:
                keep.append(i)
                nxt = after + SAMPLE_EVERY_NS
        k = np.array(keep + [len(e) - 1])
        wall = np.column_stack([e[k, 0], e[k, 2]]).ravel()
        starts = np.array([r[3] for r in self.rows], np.int64)
        ends = starts + np.array([r[4] for r in self.rows], np.int64)
        return exact, cpu_fraction(wall, np.repeat(e[k, 1], 2), starts, ends)


class RunQueueClockRecorder(Recorder):
    """The Recorder with its CPU clock read as wall time less the thread's time waiting
    on a run queue (/proc/thread-self/schedstat's run_delay, brought up to date at each
    switch-in): the thread's CPU time while it never sleeps (the DQN loop does not), read
    without the CPU clock's system call, which brings the scheduler's accounting up to
    date and so ends the thread's turn once its protected slice is over (``--clock``)."""

    def __init__(self) -> None:
        super().__init__(worker="host")
        self.exec_ns: list[tuple[int, int]] = []
        self.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        self.cpu = CpuClock(self.run_ns)
        self.cpu.sample()

    def run_ns(self) -> int:
        exec_ns, delay_ns, _ = os.pread(self.fd, 64, 0).split()
        t = perf_counter_ns()
        self.exec_ns.append((t, int(exec_ns)))  # the kernel's CPU sum, up to a tick stale
        return t - int(delay_ns)


#: struct sched_attr up to sched_period (48 bytes): size, policy, flags, nice, priority,
#: runtime, deadline, period; sched_setattr and sched_getattr on x86_64.
SCHED_ATTR = struct.Struct("IIQiIQQQ")
SCHED_SETATTR, SCHED_GETATTR = 314, 315


@contextmanager
def scheduler_slice(slice_ns: int):
    """The calling thread runs with a custom EEVDF slice of ``slice_ns`` inside (Linux
    6.12+: sched_attr.sched_runtime of a SCHED_OTHER/SCHED_BATCH thread, clamped to
    0.1-100 ms, no privilege needed), its policy and nice kept; yields the slice read back
    (None: not asked for, or not available here). Not a product feature: the benchmark's
    lever for ``--slice-ms`` (the module docstring says what it bought)."""
    if not slice_ns or platform.machine() != "x86_64" or sys.platform != "linux":
        yield None
        return
    libc = ctypes.CDLL(None, use_errno=True)

    def get() -> tuple:
        buf = ctypes.create_string_buffer(SCHED_ATTR.size)
        if libc.syscall(SCHED_GETATTR, 0, buf, SCHED_ATTR.size, 0) != 0:
            raise OSError(ctypes.get_errno(), "sched_getattr")
        return SCHED_ATTR.unpack(buf.raw)

    def set_slice(ns: int) -> None:  # 0: the kernel's default
        attr = (SCHED_ATTR.size, before[1], 0, before[3], 0, ns, 0, 0)
        if libc.syscall(SCHED_SETATTR, 0, ctypes.c_char_p(SCHED_ATTR.pack(*attr)), 0) != 0:
            raise OSError(ctypes.get_errno(), "sched_setattr")

    before = get()
    set_slice(slice_ns)
    try:
        yield get()[5]
    finally:
        set_slice(0)


#: How the busy loops are scheduled (``--loops-policy``): the default is the busy host a
#: user has; nice 19 and SCHED_IDLE loops (no root needed) change how the CPU is shared,
#: which tells the mechanism, not a fix (a user's busy host is not ours to renice).
LOOP_POLICY = {
    "normal": "",
    "nice19": "os.nice(19)",
    "idle": "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))",
}


def busy_loops(cpu: int, policy: str = "normal") -> list[subprocess.Popen]:
    """Busy-loop processes pinned to ``cpu``, stopped (the switcher resumes them)."""
    code = (f"import os; os.sched_setaffinity(0, {{{cpu}}}); {LOOP_POLICY[policy]}\n"
            "while True: pass")
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(BUSY_LOOPS)]
    time.sleep(0.3)  # started, pinned and spinning
    for p in procs:
        os.kill(p.pid, signal.SIGSTOP)
    return procs


def switched_capture(cfg: DQNConfig, cpu: int, window_s: tuple[float, float],
                     seed: int, recorder=Recorder,
                     loops_cpu: int | None = None,
                     switcher_cpus: set[int] | None = None,
                     policy: str = "normal", slice_ns: int = 0,
                     batch: bool = False) -> tuple[np.ndarray, np.ndarray, object]:
    """One capture while the busy loops switch: (switch times ns, state after each, ops
    with absolute start/end ns columns; with ExactRecorder also the columns ``cpu_exact_s``
    and ``cpu_rule_s``). ``loops_cpu``: where the busy loops run (default ``cpu``); ``switcher_cpus``: where
    the switcher may run (default: where this process may), the capture's CPU left out
    when there is another. ``slice_ns``: the capture thread asks for that scheduler slice
    (``scheduler_slice``; 0: the kernel's default), after the busy loops started, so they
    keep theirs; ``batch``: the capture runs as SCHED_BATCH."""
    procs = busy_loops(cpu if loops_cpu is None else loops_cpu, policy)
    others = sorted((switcher_cpus or os.sched_getaffinity(0)) - {cpu}) or [cpu]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "switches.txt"
        switcher = subprocess.Popen(
            ["taskset", "-c", ",".join(map(str, others)), sys.executable, "-c", SWITCHER,
             str(log), str(seed), str(window_s[0]), str(window_s[1]),
             *(str(p.pid) for p in procs)])
        try:
            time.sleep(0.2)  # the switcher has written its first line
            if batch:
                os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
            with scheduler_slice(slice_ns) as got:
                rec = recorder()
                train(cfg, rec)
            if batch:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            ops = rec.frame()
            ops.attrs["cpu_samples"] = (np.array(rec.cpu.wall_ns), np.array(rec.cpu.cpu_ns))
            ops.attrs["slice"] = got
            if isinstance(rec, RunQueueClockRecorder):
                ops.attrs["exec_samples"] = np.array(rec.exec_ns, np.int64).T
            if isinstance(rec, ExactRecorder):
                exact, rule = rec.fractions()
                ops["cpu_exact_s"] = ops["dur_s"] * exact
                ops["cpu_rule_s"] = ops["dur_s"] * rule
                ends = np.array(rec.ends, np.int64)
                ops.attrs["cpu_samples"] = (ends[:, 0], ends[:, 1])
                ops.attrs["stamps"] = (np.array(rec.starts, np.int64), ends)
        finally:
            switcher.send_signal(signal.SIGTERM)
            switcher.wait()
            for p in procs:
                p.kill()
                p.wait()
        lines = np.loadtxt(log, dtype=np.int64, ndmin=2)
    ops["t0_ns"] = (ops["start_s"] * 1e9).round().astype(np.int64) + rec.origin_ns
    ops["t1_ns"] = ops["t0_ns"] + (ops["dur_s"] * 1e9).round().astype(np.int64)
    return lines[:, 0], lines[:, 1], ops


def classify(ops, switch_ns: np.ndarray, guard_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """Per op: the index of the window it lies in (-1: spans a switch or lies within
    ``guard_ns`` of one, or outside the logged range)."""
    t0, t1 = ops["t0_ns"].to_numpy(), ops["t1_ns"].to_numpy()
    k0 = np.searchsorted(switch_ns, t0, side="right") - 1
    k1 = np.searchsorted(switch_ns, t1, side="right") - 1
    last = len(switch_ns) - 1
    ok = (k0 == k1) & (k0 >= 0) & (k0 < last)
    kk = np.clip(k0, 0, last - 1)
    ok &= (t0 >= switch_ns[kk] + guard_ns) & (t1 <= switch_ns[kk + 1] - guard_ns)
    return np.where(ok, k0, -1), ok


def whole_window_cost(ops, switch_ns: np.ndarray, state: np.ndarray,
                      guard_ns: int, samples: str = "cpu_samples") -> None:
    """Print the thread's CPU time per env step over whole windows, apportioning-free:
    the CPU clock's rise from the first to the last sample inside each window (guard
    bands left out) over the env steps completed between those samples. If this moves
    between busy and quiet windows, the thread really used more CPU per step there (a
    colder cache after each switch, a slower sibling), which no CPU clock removes."""
    wall, cpu = ops.attrs[samples]
    steps = ops.loc[ops["phase"] == "env_step", "t1_ns"].to_numpy()
    per_class: dict[int, list[tuple[float, int]]] = {QUIET: [], BUSY: []}
    for k in range(len(switch_ns) - 1):
        m = (wall >= switch_ns[k] + guard_ns) & (wall <= switch_ns[k + 1] - guard_ns)
        if m.sum() < 2:
            continue
        i, j = np.flatnonzero(m)[[0, -1]]
        n = int(((steps > wall[i]) & (steps <= wall[j])).sum())
        per_class[int(state[k])].append((float(cpu[j] - cpu[i]), n))

    def cost(rows):
        return sum(c for c, _ in rows) / max(sum(n for _, n in rows), 1)

    q, b = per_class[QUIET], per_class[BUSY]
    cq, cb = cost(q), cost(b)
    print(f"whole windows, thread CPU per env step (no apportioning): quiet {cq / 1e3:.2f} us, "
          f"busy {cb / 1e3:.2f} us, {cb / cq - 1:+.1%}; control quiet b/a "
          f"{cost(q[1::2]) / cost(q[0::2]) - 1:+.1%}, busy b/a {cost(b[1::2]) / cost(b[0::2]) - 1:+.1%}")


#: Edges of the time-since-switch-in bins of the warm-up profile, µs of the thread's CPU.
SINCE_EDGES_US = (0, 50, 150, 400, 1000, 2500, 10**9)


def exact_samples(ops) -> tuple[np.ndarray, np.ndarray]:
    """The exact recorder's stamps as CPU clock samples (rldse.cpu_clock's form): each
    op's start, its end, and the wall time after the end's clock read."""
    s, e = ops.attrs["stamps"]
    wall = np.column_stack([s[:, 0], e[:, 0], e[:, 2]]).ravel()
    cpu = np.column_stack([s[:, 1], e[:, 1], e[:, 1]]).ravel()
    return wall, cpu


def kept_switch_ins(at: np.ndarray, switch_ns: np.ndarray, state: np.ndarray,
                    guard_ns: int) -> np.ndarray:
    """Each switch-in's window class (QUIET, BUSY; -1 within the guard of a window switch)."""
    k = np.searchsorted(switch_ns, at, side="right") - 1
    ok = (k >= 0) & (k < len(switch_ns) - 1)
    kk = np.clip(k, 0, len(switch_ns) - 2)
    ok &= (at >= switch_ns[kk] + guard_ns) & (at <= switch_ns[kk + 1] - guard_ns)
    return np.where(ok, state[kk], -1)


def switch_profile(ops, cost_col: str, samples, switch_ns: np.ndarray, state: np.ndarray,
                   guard_ns: int) -> None:
    """Hypothesis 1, warm-up after each switch-in: per phase, the mean CPU cost of ops
    binned by the thread's CPU time since it was last switched in (rldse.cpu_clock.
    switch_ins), relative to the phase's warm ops (at least WARM_AFTER_NS), quiet and busy
    windows apart; then each class's switch-ins per ms of CPU and the excess per switch-in
    by how long the thread was off the CPU."""
    t0, t1 = ops["t0_ns"].to_numpy(), ops["t1_ns"].to_numpy()
    at, off, last, since = switch_ins(*samples, t0, t1)
    win, ok = classify(ops, switch_ns, guard_ns)
    cls = np.where(ok, state[np.maximum(win, 0)], -1)
    sw_cls = kept_switch_ins(at, switch_ns, state, guard_ns)
    cost = ops[cost_col].to_numpy() * 1e9
    phases = ops["phase"].astype(str).to_numpy()
    edges = np.array(SINCE_EDGES_US) * 1000
    b = np.where(since < 0, -1, np.searchsorted(edges, since, side="right") - 1)
    labels = ["none"] + [f"<{SINCE_EDGES_US[k + 1]}" for k in range(len(edges) - 1)]
    labels[-1] = f">={SINCE_EDGES_US[-2]}"
    print(f"warm-up after a switch-in ({cost_col}): CPU per op / the phase's warm mean "
          f"(>= {WARM_AFTER_NS / 1e3:.0f} us of CPU since its last switch-in), by CPU us "
          "since the last switch-in; n ops in brackets")
    for name, c in (("quiet", QUIET), ("busy", BUSY)):
        n_sw = int((sw_cls == c).sum())
        cpu_ms = cost[cls == c].sum() / 1e6
        by_off = [f"{(sw_cls == c)[off_class(off) == o].sum()}" for o in range(len(OFF_EDGES_NS) + 1)]
        print(f"  {name}: {n_sw} switch-ins in {cpu_ms:.0f} ms of op CPU "
              f"({cpu_ms / max(n_sw, 1):.2f} ms per switch-in); by off-CPU time "
              f"<1, 1-3, 3-6, 6-12, >=12 ms: {', '.join(by_off)}")
    print(f"  {'phase':<14}{'class':<6}" + "".join(f"{lab:>14}" for lab in labels))
    for phase in sorted(set(phases)):
        p = (phases == phase) & ok
        if p.sum() < 500:
            continue
        warm = p & (since >= WARM_AFTER_NS)
        base = cost[warm].mean() if warm.any() else np.nan
        for name, c in (("quiet", QUIET), ("busy", BUSY)):
            cells = []
            for k in range(-1, len(edges) - 1):
                m = p & (cls == c) & (b == k)
                cells.append(f"{cost[m].mean() / base:.2f} ({m.sum()})" if m.sum() >= 20
                             else "-")
            print(f"  {phase:<14}{name:<6}" + "".join(f"{x:>14}" for x in cells))


def warm_report(ops, cost_col: str, samples, switch_ns: np.ndarray, state: np.ndarray,
                guard_ns: int) -> dict[str, float]:
    """The per-phase table with the switch-in penalty taken out: each phase's penalty per
    switch-in, by off class and the phase the switch-in lands in (rldse.cpu_clock.
    switch_penalty_ns), measured over the whole capture with both window classes pooled
    (nothing from the quiet answer), then each class's unit cost = (its ops' CPU - its
    switch-ins x penalty) / its ops; then their sum per env step, weighted by the
    capture's ops per step (learning starts part-way, so raw sums per window mix in
    other ratios). The ``alone`` column measures each class from its own ops only, as a
    capture wholly on a busy host would have to. Returns the worst per-phase |busy/quiet
    - 1| pooled and alone, the kept switch-ins per class and each class's op CPU per
    switch-in, ms (the SUMMARY line)."""
    t0, t1 = ops["t0_ns"].to_numpy(), ops["t1_ns"].to_numpy()
    at, off, last, since = switch_ins(*samples, t0, t1)
    names, kind = np.unique(ops["phase"].astype(str).to_numpy(), return_inverse=True)
    classes = switch_classes(at, off, t0, kind)
    n_classes = (len(OFF_EDGES_NS) + 1) * len(names)
    win, ok = classify(ops, switch_ns, guard_ns)
    wstate = state[:-1]
    cls = np.where(ok, wstate[np.maximum(win, 0)], -1)
    sw_k = np.clip(np.searchsorted(switch_ns, at, side="right") - 1, 0, len(wstate) - 1)
    sw_cls = kept_switch_ins(at, switch_ns, state, guard_ns)
    cost = ops[cost_col].to_numpy() * 1e9
    quiet = np.flatnonzero(wstate == QUIET)
    in_a, in_b = np.isin(win, quiet[0::2]), np.isin(win, quiet[1::2])
    sw_a = (sw_cls == QUIET) & np.isin(sw_k, quiet[0::2])
    sw_b = (sw_cls == QUIET) & np.isin(sw_k, quiet[1::2])
    print(f"switch-in penalty taken out ({cost_col}; {len(at)} switch-ins, "
          f"{(sw_cls >= 0).sum()} kept: quiet {(sw_cls == QUIET).sum()}, busy "
          f"{(sw_cls == BUSY).sum()}); unit cost = (CPU - switch-ins x penalty) / ops, us; "
          "alone: busy/quiet - 1 with each class's penalty and warm mean from its own ops")
    print(f"{'phase':<14}{'warm':>8}{'quiet':>8}{'busy':>8}{'diff':>8}{'raw diff':>9}"
          f"{'control q':>10}{'penalty/switch-in':>19}{'alone':>8}")
    worst = worst_alone = 0.0
    total = {QUIET: 0.0, BUSY: 0.0, "a": 0.0, "b": 0.0}
    env_step = int(np.flatnonzero(names == "env_step")[0])
    for code, phase in enumerate(names):
        p = (kind == code) & ok
        base, pen = switch_penalty_ns(cost[p], since[p], last[p], classes, sw_cls >= 0,
                                      n_classes)

        def taken_out(ops_mask, sw_mask, pen=pen):
            return cost[ops_mask].sum() - np.bincount(classes[sw_mask], minlength=n_classes) @ pen

        if p.sum() < 500:
            continue
        cq = warm_unit_cost_ns(cost[p & (cls == QUIET)].sum(), int((p & (cls == QUIET)).sum()),
                               classes[sw_cls == QUIET], pen)
        cb = warm_unit_cost_ns(cost[p & (cls == BUSY)].sum(), int((p & (cls == BUSY)).sum()),
                               classes[sw_cls == BUSY], pen)
        ctl = (taken_out(p & in_b, sw_b) / (p & in_b).sum()) / (
            taken_out(p & in_a, sw_a) / (p & in_a).sum()) - 1
        raw = cost[p & (cls == BUSY)].mean() / cost[p & (cls == QUIET)].mean() - 1
        alone = {}  # each class measured alone, as a capture wholly quiet or busy would be
        for c in (QUIET, BUSY):
            m = p & (cls == c)
            _, pen_c = switch_penalty_ns(cost[m], since[m], last[m], classes, sw_cls == c,
                                         n_classes)
            alone[c] = warm_unit_cost_ns(cost[m].sum(), int(m.sum()), classes[sw_cls == c],
                                         pen_c)
        mean_pen = pen @ np.bincount(classes[sw_cls >= 0], minlength=n_classes) / max(
            (sw_cls >= 0).sum(), 1)
        worst = max(worst, abs(cb / cq - 1))
        worst_alone = max(worst_alone, abs(alone[BUSY] / alone[QUIET] - 1))
        share = p.sum() / max(((kind == env_step) & ok).sum(), 1)  # ops per env step
        for key, om, sm in (("a", in_a, sw_a), ("b", in_b, sw_b)):
            total[key] += taken_out(p & om, sm) / (p & om).sum() * share
        total[QUIET] += cq * share
        total[BUSY] += cb * share
        print(f"{phase:<14}{base / 1e3:>8.2f}{cq / 1e3:>8.2f}{cb / 1e3:>8.2f}{cb / cq - 1:>+8.1%}"
              f"{raw:>+9.1%}{ctl:>+10.1%}{mean_pen / 1e3:>16.1f} us"
              f"{alone[BUSY] / alone[QUIET] - 1:>+8.1%}")
    per = total
    print(f"all phases per env step (this capture's ops per step): quiet {per[QUIET] / 1e3:.1f} "
          f"us, busy {per[BUSY] / 1e3:.1f} us, {per[BUSY] / per[QUIET] - 1:+.1%}; control quiet "
          f"b/a {per['b'] / per['a'] - 1:+.1%}")
    print(f"worst busy/quiet with the penalty taken out: {worst:.1%} measured over the whole "
          f"capture, {worst_alone:.1%} with each class alone (the target's form: a capture on a "
          f"busy host has only its own ops; target <= {TARGET:.0%}) "
          f"{'PASS' if worst_alone <= TARGET else 'FAIL'}")
    per_switch = {c: cost[cls == c].sum() / max((sw_cls == c).sum(), 1) / 1e6
                  for c in (QUIET, BUSY)}
    print(f"switch-ins: quiet {(sw_cls == QUIET).sum()}, one per {per_switch[QUIET]:.2f} ms of "
          f"op CPU; busy {(sw_cls == BUSY).sum()}, one per {per_switch[BUSY]:.2f} ms")
    return {"pooled": worst, "alone": worst_alone, "sw_quiet": int((sw_cls == QUIET).sum()),
            "sw_busy": int((sw_cls == BUSY).sum()), "ms_per_sw_quiet": per_switch[QUIET],
            "ms_per_sw_busy": per_switch[BUSY]}


def report(ops, switch_ns: np.ndarray, state: np.ndarray, guard_ms: float, cpu_col: str,
           seed: int) -> float:
    """Print the per-phase table with CPU time from ``cpu_col``; return the worst |diff|."""
    win, ok = classify(ops, switch_ns, int(guard_ms * 1e6))
    wstate = state[:-1]
    quiet, busy = np.flatnonzero(wstate == QUIET), np.flatnonzero(wstate == BUSY)
    qa, qb, ba, bb = quiet[0::2], quiet[1::2], busy[0::2], busy[1::2]
    rng = np.random.default_rng(seed)
    print(f"CPU time from {cpu_col}; {len(busy)} busy and {len(quiet)} quiet windows; "
          f"{ok.mean():.1%} of ops kept (guard {guard_ms} ms)")
    print(f"{'phase':<14}{'ops':>7}{'cpu quiet':>10}{'cpu busy':>10}{'diff':>8}"
          f"{'90% interval':>17}{'control q':>10}{'control b':>10}"
          f"{'wall quiet':>11}{'wall busy':>10}{'diff':>8}")
    worst = control_worst = 0.0
    cpu, wall = ops[cpu_col].to_numpy(), ops["dur_s"].to_numpy()
    phases = ops["phase"].astype(str).to_numpy()
    for phase in sorted(set(phases)):
        m = (phases == phase) & ok
        if m.sum() < 500:  # too few ops for a mean (env_reset, sync): not a unit cost
            continue
        w, c, d = win[m], cpu[m], wall[m]
        cq, cb = unit_cost_s(c, w, quiet), unit_cost_s(c, w, busy)
        wq, wb = unit_cost_s(d, w, quiet), unit_cost_s(d, w, busy)
        lo90, hi90 = ratio_interval(c, w, quiet, busy, len(wstate), rng)
        ctl_q = unit_cost_s(c, w, qb) / unit_cost_s(c, w, qa) - 1
        ctl_b = unit_cost_s(c, w, bb) / unit_cost_s(c, w, ba) - 1
        worst, control_worst = max(worst, abs(cb / cq - 1)), max(control_worst, abs(ctl_q))
        print(f"{phase:<14}{m.sum():>7}{cq * 1e6:>10.2f}{cb * 1e6:>10.2f}{cb / cq - 1:>+8.1%}"
              f"{f'[{lo90:+.1%}, {hi90:+.1%}]':>17}{ctl_q:>+10.1%}{ctl_b:>+10.1%}"
              f"{wq * 1e6:>11.2f}{wb * 1e6:>10.2f}{wb / wq - 1:>+8.1%}")
    verdict = "PASS" if worst <= TARGET else "FAIL"
    print(f"worst CPU-time unit cost difference busy/quiet {worst:.1%} (target <= "
          f"{TARGET:.0%}) {verdict}; worst quiet-against-quiet control {control_worst:.1%}")
    return worst


def turn_lengths(cpu: int, slice_ms: float, reps: int = 4, dur_s: float = 1.5) -> None:
    """Print how long a thread running a DQN-sized step (two small matmuls and a gather
    from a 12.8 MB buffer, like a replay sample) keeps its CPU per turn beside the two busy
    loops, and its CPU time per step with them stopped and running (``--turns``; medians
    over reps, and the range of busy/quiet). It reads, every 1 ms: nothing, the
    thread's CPU clock (the recorder's, a system call that brings the scheduler's
    accounting up to date) or /proc/thread-self/schedstat (which does not); with the
    kernel's slice and with ``slice_ms``. Configurations alternate within each rep."""
    procs = busy_loops(cpu)
    fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    reads = {"none": None, "thread clock": thread_time_ns,
             "schedstat": lambda: os.pread(fd, 64, 0)}
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((2, 256, 256), dtype=np.float32)
    buf = rng.standard_normal((50_000, 64), dtype=np.float32)

    def step(i: int) -> None:
        x = buf[rng.integers(0, len(buf), 64)]
        np.maximum(x @ w1[:64], 0) @ w2
        buf[i % len(buf)] = x[0]

    out: dict[tuple, list] = {}
    try:
        with single_blas_thread():
            for _ in range(reps):
                for ms in (0.0, slice_ms):
                    for name, read in reads.items():
                        for busy in (False, True):
                            for p in procs:
                                os.kill(p.pid, signal.SIGCONT if busy else signal.SIGSTOP)
                            time.sleep(0.05)
                            with scheduler_slice(int(ms * 1e6)):
                                out.setdefault((ms, name, busy), []).append(
                                    stepped_turns(step, read, dur_s, fd))
    finally:
        for p in procs:
            p.kill()
            p.wait()
    for ms in (0.0, slice_ms):
        for name in reads:
            quiet, busy = out[(ms, name, False)], out[(ms, name, True)]
            ratio = np.array([b / q - 1 for (_, q), (_, b) in zip(quiet, busy, strict=True)])
            print(f"slice {ms:5.1f} ms (0: default), reads: {name:<13} busy: CPU per switch-in "
                  f"{np.median([t for t, _ in busy]) / 1e6:.2f} ms; CPU per step quiet "
                  f"{np.median([c for _, c in quiet]) / 1e3:.0f} us, busy "
                  f"{np.median([c for _, c in busy]) / 1e3:.0f} us, busy/quiet - 1 median "
                  f"{np.median(ratio):+.0%} [{ratio.min():+.0%}..{ratio.max():+.0%}]",
                  flush=True)


def stepped_turns(step, read, dur_s: float, fd: int) -> tuple[float, float]:
    """Run ``step`` for ``dur_s``, calling ``read`` once per ms: (the thread's CPU time per
    switch-in, ns: CPU over the rise of schedstat's count of turns on a CPU; its CPU time
    per step, ns), each from one read at either end."""
    def clocks() -> tuple[int, int]:
        return thread_time_ns(), int(os.pread(fd, 64, 0).split()[2])

    (c0, k0), n, nxt = clocks(), 0, 0
    end = perf_counter_ns() + int(dur_s * 1e9)
    while (t := perf_counter_ns()) < end:
        step(n)
        n += 1
        if read is not None and t >= nxt:
            read()
            nxt = t + SAMPLE_EVERY_NS
    c1, k1 = clocks()
    return (c1 - c0) / max(k1 - k0, 1), (c1 - c0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40_000)
    ap.add_argument("--window", default="0.2,0.5", help="window length range, s: lo,hi")
    ap.add_argument("--guard-ms", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--diagnose", action="store_true",
                    help="then a second capture with the CPU clock read at every op: "
                         "exact per-op CPU time against the stock rule on the same ops")
    ap.add_argument("--loops-policy", choices=sorted(LOOP_POLICY), default="normal",
                    help="schedule the busy loops normally, at nice 19 or SCHED_IDLE")
    ap.add_argument("--skip-stock", action="store_true",
                    help="with --diagnose: only the exact-clock capture")
    ap.add_argument("--loops-cpu", type=int, default=None,
                    help="pin the busy loops to this CPU instead of the capture's (another "
                         "vCPU: no sharing of the capture's CPU, only of what lies beneath)")
    ap.add_argument("--slice-ms", type=float, default=0.0,
                    help="the capture thread asks for this scheduler slice (Linux 6.12+; "
                         "0: the kernel's default)")
    ap.add_argument("--batch", action="store_true", help="the capture runs as SCHED_BATCH")
    ap.add_argument("--turns", action="store_true",
                    help="only run a DQN-sized step beside the busy loops: its turn lengths "
                         "and CPU per step, quiet and busy, by slice (default and --slice-ms, "
                         "100 if 0) and by CPU clock reads")
    ap.add_argument("--clock", choices=("thread", "runqueue"), default="thread",
                    help="the recorder's CPU clock: the thread's CPU clock (the product's) "
                         "or wall less run-queue wait (RunQueueClockRecorder)")
    args = ap.parse_args()
    if not hasattr(os, "sched_setaffinity"):
        sys.exit("contended_capture: needs os.sched_setaffinity (Linux)")
    lo, hi = (float(x) for x in args.window.split(","))
    guard_ns = int(args.guard_ms * 1e6)
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    loops_cpu = cpu if args.loops_cpu is None else args.loops_cpu
    os.sched_setaffinity(0, {cpu})
    if args.turns:
        print(f"{BUSY_LOOPS} busy loops on CPU {cpu}; load average {os.getloadavg()[0]:.2f}")
        turn_lengths(cpu, args.slice_ms or 100.0)
        return
    cfg = DQNConfig(env_id="CartPole-v1", steps=args.steps, seed=args.seed)
    train(DQNConfig(env_id="CartPole-v1", steps=2000, seed=args.seed), Recorder())  # warm-up
    print(f"DQN CartPole-v1, {args.steps} steps, seed {args.seed}, pinned to CPU {cpu}; "
          f"{BUSY_LOOPS} busy loops on CPU {loops_cpu} switched on/off in windows of {lo}-{hi} s; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("unit cost = mean per op, us; diff = busy/quiet - 1 with its 90 % interval "
          "(bootstrap over windows); control = quiet b / quiet a - 1 (and busy b / busy a)")
    if not args.skip_stock:
        stock = RunQueueClockRecorder if args.clock == "runqueue" else Recorder
        switch_ns, state, ops = switched_capture(cfg, cpu, (lo, hi), args.seed, stock,
                                                 loops_cpu=loops_cpu, switcher_cpus=allowed,
                                                 policy=args.loops_policy,
                                                 slice_ns=int(args.slice_ms * 1e6),
                                                 batch=args.batch)
        print(f"capture's scheduler slice, ns: {ops.attrs['slice']}")
        raw = report(ops, switch_ns, state, args.guard_ms, "cpu_s", args.seed)
        whole_window_cost(ops, switch_ns, state, int(args.guard_ms * 1e6))
        if "exec_samples" in ops.attrs:
            print("  the same from the kernel's CPU sum (schedstat sum_exec_runtime, up to a "
                  "tick stale at each end):")
            whole_window_cost(ops, switch_ns, state, int(args.guard_ms * 1e6), "exec_samples")
        w = warm_report(ops, "cpu_s", ops.attrs["cpu_samples"], switch_ns, state, guard_ns)
        print(f"SUMMARY slice_ms={args.slice_ms} batch={args.batch} clock={args.clock} "
              f"raw={raw:.4f} "
              + " ".join(f"{k}={v:.4g}" for k, v in w.items())
              + f" load={os.getloadavg()[0]:.2f}")
    if args.diagnose:
        print("diagnosis: a second capture, the CPU clock read at every op's start and end")
        switch_ns, state, ops = switched_capture(cfg, cpu, (lo, hi), args.seed + 1,
                                                 ExactRecorder, loops_cpu, allowed,
                                                 args.loops_policy)
        for col in ("cpu_exact_s", "cpu_rule_s"):
            report(ops, switch_ns, state, args.guard_ms, col, args.seed)
        whole_window_cost(ops, switch_ns, state, int(args.guard_ms * 1e6))
        switch_profile(ops, "cpu_exact_s", exact_samples(ops), switch_ns, state, guard_ns)
        warm_report(ops, "cpu_exact_s", exact_samples(ops), switch_ns, state, guard_ns)
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
