"""How much a simulation will cost before it runs: events, wall time and memory.

The one run-cost module: the limits (`Limits`, ``--allow-long``) and the one refusal
(`refuse_over`, `refuse_long`) that the CLI, searches, studies and captures call; what
sits elsewhere only adds up these estimates for its own layer (rldse.search.cost,
rldse.studies.plan) or prices real training, not a simulation (rldse.sim.run_cost).

The programs merge events in ways that depend on the design (a DQN with 8 actors on a
sync learner is 4 events for any number of steps; with 32 actors, one per few steps), so
no closed form per family holds. The estimate is measured instead: the design's own
program runs a few short pilots with ``env_steps`` cut down and the worker knob (its
family's ``worker_knob``: ``actors`` or ``agents``) capped, and each cost is fitted as ``a + b·steps + c·workers``
(non-negative least squares; steps are the env steps the pilot really simulated, since
an actor-learner iteration overshoots) and extrapolated to the design.

Time is the program's own cost, in CPU seconds of this process: a wall clock also counts
whatever else the host runs (on this project's loaded 2-core host the same pilot took
0.07 s or 0.3 s of wall time), so a slope fitted to wall times is partly the neighbours'
load. The wall-time estimate is that CPU cost times the pilots' own wall/CPU ratio, capped
by the host's one-minute load average (`wall_per_cpu`, rldse.host.wall_per_cpu): the
host's load while the estimate ran, assumed to hold for the run. (The load average alone
was tried and dropped: on this project's host, whose kernel shares the CPU fairly between
sessions (autogroups) rather than between tasks, it put a process's wall/CPU at up to
2.2x what the run saw; as a cap it keeps a neighbour that ran only during the pilots from
multiplying the estimate. The ratio does move with the host: what else runs in this
process's own session, and how many other sessions are busy, between the estimate and
the end of the run.)
Memory is measured
with tracemalloc (numpy reports its buffers to it): per step from a short pilot and one
as long as the regrown timed pilot (a per-step array shows only there), per worker at two
worker counts when the design has more workers than the pilots. On this project's development host the
per-worker cost dominated: about 0.3 MB and 1.7 ms per PPO actor, 0.8 MB and 20 ms per
DQN actor (tracemalloc peaks and wall times at 8 to 1,024 actors).

`check` refuses an estimate over the limits (default 10 minutes of wall time or half of
the machine's RAM) with one line giving it; `Meter` counts the real run's events and
shows a progress bar when the estimate is over about 2 s.

Sizes a run grows with are priced in closed form before anything runs, here too, so
``allow_long`` is read in this one module: the work one simulation asks for
(`check_size`: its family's ``Workload.work``, e.g. actors × envs × rollout length per
iteration, an offline run's transitions × passes), a search's worker processes
(`check_workers`: at most this host's cores), a grid sampler's points (`check_grid`:
Optuna lists them all when it is made), repeated runs (`check_runs`)
and a timeline's bytes (`check_timeline`); what a run will write is checked against the
free space (`check_free_space`: a timeline, a capture's trace, a search's out/ folder).
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rldse.errors import RldseError

if TYPE_CHECKING:
    from rldse.system import ResolvedSystem
    from rldse.trace import Trace

#: env steps of the first pilot; the second runs SLOPE_GROWTH times more (or times what
#: one iteration of the program simulates, if more).
PILOT_STEPS = 2_000
#: the longer timed pilot grows (×SLOPE_GROWTH at a time) until it takes this much more
#: CPU time than the short one: a program's fixed set-up (Machine, result) is about
#: 0.1 s, so a slope read off a few ms of difference is mostly the host's noise (it put
#: one estimate of the same run at 0.1 s and another at 97 min). Capped in CPU time so
#: the estimate itself costs a second or two of this process's time (a cap in wall time
#: cut the pilots short on a host at 5x load, leaving a slope of noise: 0.21x). CPU time
#: is steadier than wall time, but not steady on a shared host: at 4-5x load the same
#: 0.5 M-step pilot took 0.12 or 0.19 CPU-s, so the longest pilot is run twice (budget
#: permitting) and the two averaged. (Keeping the cheaper one, as before, estimated a
#: 15-60 s run's CPU time at 0.69-0.92x on the loaded host: the neighbours' caches and
#: cores slow the run too, for its whole length.) The difference asked is 0.3 CPU-s, not
#: 0.1: on the loaded host a 0.1 s difference still put the CPU cost of 30-60 s runs at
#: 0.86-1.63x (a few hundredths of a second of noise in either pilot is a third of it).
SLOPE_CPU_S = 0.3
SLOPE_GROWTH = 4
PILOT_BUDGET_CPU_S = 1.5
#: CPU seconds a pilot may be off by (the host's caches and clock, shared with its
#: neighbours): a design whose slope is over the limits even with this taken off its
#: measured difference is refused without growing the pilot further.
PILOT_NOISE_CPU_S = 0.02
#: worker counts of the memory pilots (each capped at the design's own).
PILOT_WORKERS = (4, 16)
#: the most workers a timed pilot runs, and the second count it fits beyond that
TIMED_WORKERS = (256, 1_024)
#: designs at most this large run unmetered, without pilots: even the per-event program
#: paths (about 60k env steps/s on a loaded 2-core host) finish them in seconds, and their
#: workers hold megabytes; pilots (0.6-0.9 s) would cost more than they could save.
UNMETERED_STEPS = 200_000
UNMETERED_WORKERS = 64
#: events between two looks at the clock while the real run goes.
METER_EVERY = 4_096


def half_of_ram_bytes() -> int:
    """Half of this machine's physical memory (os.sysconf)."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2


@dataclass(frozen=True)
class Limits:
    """What a simulate call may cost before it is refused (``allow_long``: never)."""

    wall_s: float = 600.0
    memory_bytes: int | None = None  # None: half of this machine's RAM
    allow_long: bool = False
    progress_after_s: float = 2.0  # show a progress bar when the estimate is longer

    def over(self, wall_s: float) -> bool:
        """Whether ``wall_s`` of estimated wall time is refused (never with allow_long)."""
        return wall_s > self.wall_s and not self.allow_long

    def share_s(self, parts: int = 1) -> float | None:
        """The wall seconds each of ``parts`` runs in a row may take before the whole is
        over the limit, where pricing can stop (None with allow_long: price it all)."""
        return None if self.allow_long else self.wall_s / parts


@dataclass(frozen=True)
class Budget:
    """Estimated cost of one simulation (module docstring)."""

    events: float
    wall_s: float
    memory_bytes: float | None  # None: not estimated (refused on time first, or not asked)
    env_steps: int
    workers: int
    cpu_s: float | None = None  # the program's own cost (module docstring)
    load: str = ""  # how the wall time was had from the CPU time (`wall_per_cpu`)
    #: the run's work in words where it is not its env steps (`work`: an offline run's
    #: updates); empty: ``env_steps`` env steps
    work: str = ""

    def describe(self) -> str:
        memory = ("" if self.memory_bytes is None else
                  f" and {self.memory_bytes / 1e9:,.2f} GB of memory")
        work = self.work or f"{self.env_steps:,} env steps"
        return (f"about {self.events:,.0f} events, {duration(self.wall_s)} of wall time"
                f"{memory} for {work}"
                + (f" with {self.workers:,} workers" if self.workers > 1 else ""))


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:,.3g} h"


@dataclass(frozen=True)
class _Pilot:
    steps: int  # env steps it really simulated
    workers: int
    wall_s: float
    events: int
    peak_bytes: int | None
    cpu_s: float = 0.0  # this process's CPU seconds (module docstring)


def _worker_knob(system: ResolvedSystem) -> str | None:
    """The knob that multiplies per-worker state (processes, buffers) and is capped in the
    pilots: its family's ``worker_knob``, when the design has a value for it."""
    knob = system.workload.worker_knob
    return knob if knob is not None and getattr(system.knobs, knob, None) is not None else None


def _run(trace: Trace, system: ResolvedSystem, steps: int, knob: str | None, workers: int,
         memory: bool) -> _Pilot:
    from rldse.sim.machine import Machine

    update: dict[str, Any] = {"env_steps": steps}
    if knob is not None:
        update[knob] = workers
    pilot = replace(system, knobs=system.knobs.model_copy(update=update))
    if memory:
        tracemalloc.start()
    try:
        machine = Machine(trace, pilot)
        meter = Meter(machine)
        t0, c0 = time.perf_counter(), time.process_time()
        result = machine.result(pilot.workload.program(machine))
        wall_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        peak = tracemalloc.get_traced_memory()[1] if memory else None
    finally:
        if memory:
            tracemalloc.stop()
    return _Pilot(max(result.env_steps, 1), workers, wall_s, meter.events, peak, cpu_s)


def _fit(pilots: list[_Pilot], value: str, steps: int, workers: int) -> float:
    """``value`` at (steps, workers) from a + b·steps + c·workers fitted to the pilots
    (coefficients ≥ 0, so the extrapolation never shrinks with size)."""
    cols = [np.ones(len(pilots)), np.array([p.steps for p in pilots], dtype=float)]
    at = [1.0, float(steps)]
    if len({p.workers for p in pilots}) > 1:
        cols.append(np.array([p.workers for p in pilots], dtype=float))
        at.append(float(workers))
    a = np.column_stack(cols)
    scale = a.max(axis=0)
    coef = _nnls(a / scale, np.array([getattr(p, value) for p in pilots], dtype=float))
    return float(np.dot(coef / scale, at))


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin |a·x − b| over x ≥ 0 for a few columns: the least-squares fit on each subset
    of columns, the best of those with no negative coefficient (the optimum is the
    unconstrained fit on its own positive columns). Exact, as scipy's nnls, without
    importing scipy.optimize (0.2-0.5 s, more than a short simulate's own work)."""
    best, best_res = np.zeros(a.shape[1]), float(np.sum(b * b))
    for mask in range(1, 1 << a.shape[1]):
        cols = [j for j in range(a.shape[1]) if mask >> j & 1]
        x = np.linalg.lstsq(a[:, cols], b, rcond=None)[0]
        if (x < 0).any():
            continue
        res = float(np.sum((a[:, cols] @ x - b) ** 2))
        if res < best_res:
            best, best_res = np.zeros(a.shape[1]), res
            best[cols] = x
    return best


def size(trace: Trace, system: ResolvedSystem) -> tuple[int, str | None, int]:
    """(env steps, worker knob or None, workers) the design runs."""
    knob = _worker_knob(system)
    workers = int(getattr(system.knobs, knob)) if knob else 1
    return int(system.knobs.env_steps or trace.env_steps or 1), knob, workers


def is_small(trace: Trace, system: ResolvedSystem) -> bool:
    """Whether the design runs unmetered (UNMETERED_STEPS, UNMETERED_WORKERS)."""
    steps, _, workers = size(trace, system)
    return steps <= UNMETERED_STEPS and workers <= UNMETERED_WORKERS


def estimate(trace: Trace, system: ResolvedSystem, limits: Limits | None = None,
             memory: bool = True, enough_s: float | None = None) -> Budget:
    """Events, wall time and memory of simulating ``trace`` on ``system`` (module
    docstring). A first tiny run fills the per-trace cost caches, so the pilots time the
    program alone. Timed pilots run the design's own workers (up to TIMED_WORKERS: a
    program's event structure changes with them); memory pilots run under tracemalloc
    (2-5x slower) at PILOT_WORKERS, since memory is what a worker count can exhaust.
    With ``limits`` a design over them is refused (`check`) as soon as its time alone is,
    before the memory pilots; without ``memory`` they are skipped (memory_bytes None).
    Without limits, ``enough_s`` stops the pilots early (as a limit does) once the wall
    time is surely over it: a caller that only needs to know that (a whole search)
    gets a rougher number sooner."""
    if limits is not None:
        check_size(system, limits)
    steps, knob, workers = size(trace, system)
    w_time = min(workers, TIMED_WORKERS[1])
    first = _run(trace, system, min(steps, 2 * w_time), knob, w_time, memory=False)
    short = min(steps, PILOT_STEPS)
    longer = min(steps, SLOPE_GROWTH * max(PILOT_STEPS, first.steps))

    def points(w_lo: int, w_hi: int) -> list[tuple[int, int]]:
        out = [(short, w_lo)] + ([(longer, w_lo)] if longer > short else [])
        return out + ([(short, w_hi)] if workers > w_lo else [])

    timed = [_run(trace, system, n, knob, w, memory=False)
             for n, w in points(w_time, min(workers, TIMED_WORKERS[0]))]
    over_s = enough_s if limits is None or limits.allow_long else limits.wall_s
    under_s = limits.progress_after_s if limits is not None else None
    timed = _resolved_slope(trace, system, timed, steps, knob, w_time, over_s, under_s)
    # a program that runs whole iterations of all workers simulates at least one
    steps = max(steps, first.steps * workers // w_time)
    cpu_s = _fit(timed, "cpu_s", steps, workers)
    load, basis = wall_per_cpu(timed)
    units, what = work(system)
    budget = Budget(events=_fit(timed, "events", steps, workers), wall_s=cpu_s * load,
                    memory_bytes=None, env_steps=steps, workers=workers, cpu_s=cpu_s,
                    load=basis, work="" if what == "env steps" else f"{units:,.0f} {what}")
    if limits is not None:
        check(budget, limits)
    if not memory:
        return budget
    # the memory pilots' long one runs as long as the regrown timed one: at a few
    # thousand steps the peak is the set-up's, and a per-step array (33 B a step for a
    # sync DQN's max-plus chunks: 70 MB at 2e6 steps, 33 GB at 1e9) fits as no slope
    grown = max(p.steps for p in timed if p.workers == timed[0].workers)
    traced = [_run(trace, system, grown if n == longer else n, knob, w, memory=True)
              for n, w in points(*(min(workers, w) for w in PILOT_WORKERS))]
    budget = replace(budget, memory_bytes=_fit(traced, "peak_bytes", steps, workers))
    if limits is not None:
        check(budget, limits)
    return budget


def _resolved_slope(trace: Trace, system: ResolvedSystem, timed: list[_Pilot], steps: int,
                    knob: str | None, workers: int, over_s: float | None = None,
                    under_s: float | None = None) -> list[_Pilot]:
    """``timed`` with its longer pilot (the second) regrown until it takes SLOPE_CPU_S
    more CPU time than the short one (or reaches the design's steps, or PILOT_BUDGET_CPU_S
    is spent), so the per-step cost is measured, not the host's noise; then, short of
    the design's steps, run again and the two averaged (SLOPE_CPU_S). With
    ``over_s``, growing stops once even the slope less PILOT_NOISE_CPU_S puts the design's
    wall time over it: the answer (a refusal) is known. With ``under_s`` (the progress
    bar's threshold), growing stops once even the slope plus PILOT_NOISE_CPU_S puts it
    under: the run is short, not refused and shown without a bar, so a pilot as long as
    the run would only double its cost (a 1M-step DQN: 0.5 s of pilots for a 0.2 s run)."""
    if len(timed) < 2 or timed[1].workers != timed[0].workers:
        return timed
    short, longer = timed[0], timed[1]
    spent = sum(p.cpu_s for p in timed)

    def per_step_wall_s(noise_cpu_s: float) -> float:
        """The design's wall seconds per env step at the slope so far, ± noise_cpu_s."""
        return ((longer.cpu_s - short.cpu_s + noise_cpu_s) / (longer.steps - short.steps)
                * wall_per_cpu([short, longer])[0])

    def known() -> bool:
        if longer.steps <= short.steps:
            return False
        if over_s is not None and per_step_wall_s(-PILOT_NOISE_CPU_S) * steps > over_s:
            return True
        return under_s is not None and (short.wall_s + per_step_wall_s(PILOT_NOISE_CPU_S)
                                        * steps) < under_s

    while (longer.cpu_s - short.cpu_s < SLOPE_CPU_S and longer.steps < steps
           and spent < PILOT_BUDGET_CPU_S and not known()):
        longer = _run(trace, system, min(steps, SLOPE_GROWTH * longer.steps), knob, workers,
                      memory=False)
        spent += longer.cpu_s
    # a pilot of the design's own steps is the run itself: nothing to average it with
    if spent < PILOT_BUDGET_CPU_S and longer.steps < steps and not known():
        again = _run(trace, system, longer.steps, knob, workers, memory=False)
        longer = replace(longer, wall_s=(longer.wall_s + again.wall_s) / 2,
                         cpu_s=(longer.cpu_s + again.cpu_s) / 2)
    return [short, longer, *timed[2:]]


def wall_per_cpu(pilots: list[_Pilot]) -> tuple[float, str]:
    """(wall seconds per CPU second for the run, how it was had): the pilots' own ratio,
    as rldse.host.wall_per_cpu turns live timings into the run's (module docstring)."""
    from rldse.host import wall_per_cpu as host_wall_per_cpu

    return host_wall_per_cpu(sum(p.wall_s for p in pilots), sum(p.cpu_s for p in pilots))


def check(budget: Budget, limits: Limits) -> None:
    """Refuse a budget over ``limits`` in one line that gives the estimate."""
    if limits.allow_long:
        return
    memory = limits.memory_bytes if limits.memory_bytes is not None else half_of_ram_bytes()
    over = []
    if budget.wall_s > limits.wall_s:
        over.append(f"over the {duration(limits.wall_s)} limit")
    if budget.memory_bytes is not None and budget.memory_bytes > memory:
        over.append(f"over the memory limit of {memory / 1e9:,.2f} GB (half of RAM)"
                    if limits.memory_bytes is None else
                    f"over the memory limit of {memory / 1e9:,.2f} GB")
    if over:
        refuse_over(f"this run would take {budget.describe()}: {' and '.join(over)}",
                "lower workload.env_steps or the workers", "simulate", limits)


def per_run_s(trace: Trace, system: ResolvedSystem, enough_s: float | None = None) -> float:
    """Wall seconds of one simulation of the design: the pilots' estimate (``enough_s``:
    as `estimate`'s), or for a design that runs unmetered (`is_small`) a timed run, which
    costs less than pilots (the second of two: the first fills the per-trace caches, as
    the first of many runs does), its CPU time turned into wall time as pilots' is."""
    if not is_small(trace, system):
        return estimate(trace, system, memory=False, enough_s=enough_s).wall_s
    dims = size(trace, system)
    _run(trace, system, *dims, memory=False)
    timed = _run(trace, system, *dims, memory=False)
    return timed.cpu_s * wall_per_cpu([timed])[0]


class Meter:
    """Counts a machine's SimPy events (its ``env.step`` wrapped: SimPy's run loop calls
    it once per event) and, given a budget, shows a progress bar against its events."""

    def __init__(self, machine: Any, budget: Budget | None = None,
                 limits: Limits | None = None) -> None:
        self.events = 0
        self._step = machine.env.step
        self._bar = None
        if budget is not None and limits is not None and budget.wall_s > limits.progress_after_s:
            from tqdm import tqdm

            self._bar = tqdm(total=max(int(budget.events), 1), desc="simulate", unit="event",
                             file=sys.stderr, disable=None, dynamic_ncols=True,
                             mininterval=0.5, unit_scale=True)
        machine.env.step = self._counted if self._bar is None else self._shown

    def _counted(self) -> None:
        self.events += 1
        self._step()

    def _shown(self) -> None:
        self.events += 1
        if self.events % METER_EVERY == 0:
            self._bar.update(METER_EVERY)
        self._step()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


# ---- sizes priced before anything runs (module docstring) ------------------------------

#: the most units of work (env steps, an offline run's updates) one simulation may ask for
#: without allow_long: the env_steps knob's own ceiling (rldse.workloads.Knobs)
MAX_WORK_UNITS = 10**10
#: CPU seconds and bytes per point Optuna's GridSampler spends listing its grid when it is
#: made: 320 ns and 64 B (2 dimensions, 4e6 points, under tracemalloc on this project's
#: 2-core host); a point is a tuple of d values, about 48 + 8·d bytes
GRID_CPU_S_PER_POINT = 320e-9
GRID_BYTES_PER_POINT_BASE, GRID_BYTES_PER_DIM = 48, 8
#: bytes of one timeline event in the Chrome trace JSON (rldse.sim.timeline), the larger
#: end of what the shipped traces' timelines take
TIMELINE_BYTES_PER_EVENT = 130
#: the largest timeline written without allow_long (Perfetto's UI loads about 1 GB)
TIMELINE_LIMIT_BYTES = 10**9


def refuse_over(what: str, advice: str, where: str, limits: Limits) -> None:
    """The one refusal of a run over its limits (none with ``limits.allow_long``):
    ``what`` gives the estimate, ``advice`` the smaller run (empty: none to give)."""
    if not limits.allow_long:
        raise RldseError(f"{what}; give --allow-long to run it anyway"
                         f"{', or ' + advice if advice else ''}", where=where)


def refuse_long(wall_s: float, what: str, advice: str, where: str, limits: Limits) -> None:
    """The one refusal of an estimated wall time over ``limits.wall_s`` (`refuse_over`):
    ``what`` gives the estimate ('this search would take about ...')."""
    if limits.over(wall_s):
        refuse_over(f"{what}: over the {duration(limits.wall_s)} limit", advice, where, limits)


def work(system: ResolvedSystem) -> tuple[float, str]:
    """(units, what they are) of the work the design asks for: its family's
    ``Workload.work`` (an offline run's updates), env steps where it has none."""
    of = system.workload.work
    return of(system.knobs) if of is not None else \
        (float(system.knobs.env_steps or 0), "env steps")


def check_size(system: ResolvedSystem, limits: Limits) -> None:
    """Refuse a design whose program would simulate more than MAX_WORK_UNITS units of
    work (`work`), before pilots."""
    units, what = work(system)
    if units > MAX_WORK_UNITS:
        refuse_over(f"this run would simulate {units:.3g} {what}: over the {MAX_WORK_UNITS:.0e} "
                "limit", "lower workload.env_steps or the workers", "simulate", limits)


def check_workers(workers: int, limits: Limits, where: str) -> None:
    """Refuse more worker processes than this host has cores: each is a forked process
    running its own simulations (more only queue for the cores and hold memory)."""
    cores = os.cpu_count() or 1
    if workers > cores:
        refuse_over(f"--workers {workers:,}: more than this host's {cores} cores",
                f"at most --workers {cores}", where, limits)


def check_grid(points: int, dims: int, limits: Limits, where: str) -> None:
    """Refuse a grid whose listing (Optuna's GridSampler lists every point when it is
    made, before any trial) would take over ``limits.wall_s`` or the memory limit."""
    wall_s = points * GRID_CPU_S_PER_POINT
    grid_bytes = points * (GRID_BYTES_PER_POINT_BASE + GRID_BYTES_PER_DIM * dims)
    memory = limits.memory_bytes if limits.memory_bytes is not None else half_of_ram_bytes()
    if wall_s > limits.wall_s or grid_bytes > memory:
        refuse_over(f"the grid has {points:,} points ({points:.3g}): listing them would take "
                f"about {duration(wall_s)} and {grid_bytes / 1e9:,.3g} GB (limits "
                f"{duration(limits.wall_s)}, {memory / 1e9:,.3g} GB)", "fewer values per "
                "dimension (a step, a shorter range) or another sampler", where, limits)


def check_runs(run_s: float, runs: int, limits: Limits, what: str, where: str,
               each: str = "runs", advice: str = "fewer of them") -> bool:
    """Refuse ``runs`` runs of about ``run_s`` wall seconds each (``what``: the flag that
    asked for them, e.g. '--seeds 1000000'; ``each``: what one is, e.g. 'simulations')
    whose total is over ``limits.wall_s``; returns whether a progress bar is due (the
    total is over ``limits.progress_after_s``)."""
    total_s = run_s * runs
    refuse_long(total_s, f"{what} would take about {duration(total_s)} ({runs:,} {each} of "
                f"about {duration(run_s)} each)", advice, where, limits)
    return total_s > limits.progress_after_s


def check_free_space(need_bytes: float, path: str | Path, flag: str, what: str,
                     advice: str) -> None:
    """Refuse writing about ``need_bytes`` (``what``: the estimate in words) to ``path``
    (the option ``flag`` names it, '' for none) when its folder (the nearest one that
    exists) has less free space, before the work that would write them: even with
    allow_long, since a full disk is no choice."""
    import shutil

    folder = Path(path).absolute()
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if need_bytes > free:
        named = f"{flag} {path}" if flag else str(path)
        raise RldseError(f"{named}: would write about {_megabytes(need_bytes)} ({what}), "
                         f"more than the {_megabytes(free)} free there; {advice}")


def _megabytes(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:,.0f} MB" if n_bytes >= 1e7 else f"{n_bytes / 1e6:,.3g} MB"


def check_timeline(events: float, path: str | Path, limits: Limits) -> None:
    """Refuse a timeline estimated over TIMELINE_LIMIT_BYTES, or over the free space of
    its folder (`check_free_space`), before the run."""
    timeline_bytes = events * TIMELINE_BYTES_PER_EVENT
    check_free_space(timeline_bytes, path, "--timeline", f"{events:,.0f} events",
                     "lower workload.env_steps or give --timeline-window")
    if timeline_bytes > TIMELINE_LIMIT_BYTES:
        refuse_over(f"--timeline {path}: would write about {timeline_bytes / 1e6:,.0f} MB "
                f"({events:,.0f} events), over the {TIMELINE_LIMIT_BYTES / 1e9:.0f} GB limit",
                "lower workload.env_steps or give --timeline-window", "simulate", limits)
