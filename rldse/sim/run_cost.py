"""What a real learning run costs on this host, before most of it runs: study plans price
their learning runs with it before any starts (rldse.studies.plan: `learning_run`,
`priced`), and `rldse capture` projects itself from its own first steps and stops over
its limit (rldse.cli.capture.Bounded: a `Watch` on the run itself, so nothing is run twice).
Apart from rldse.sim.budget because it times real training, not a simulation's pilots;
its estimates are refused by budget's `refuse_over`, `check_runs` and `refuse_long`.

A run's cost is modelled as what its first steps cost (start-up, and an off-policy loop's
warm-up of ``learning_starts`` env steps that act and store but do not learn) plus a
steady cost per env step for the rest. Both are measured by a probe: the run itself
(the same capture request: family, algorithm, environment, replay, network, options),
whose progress callback reads the CPU time of this process and its children and stops
it once the steps past the warm-up have taken PROBE_CPU_S. The estimate is the probe's CPU
time plus its steady rate (CPU seconds per env step past the warm-up) times the steps
left; a probe that reaches the run's own steps is the run, and its CPU time the estimate.

CPU time, not wall time: whatever else the host ran during the probe does not enter the
cost per step (on this project's loaded 2-core host a DQN run's wall time was 2-2.5x its
CPU time); wall time follows from it by rldse.host.wall_per_cpu, as a simulation's
estimate does (rldse.sim.budget). The probe costs about PROBE_CPU_S plus the warm-up, not a
sub-second pilot: a few hundredths of a second of the host's noise are then a few
percent. The rate is the one of the steps just past the warm-up: a cost that grows with
the replay buffer's fill (AMPER's candidate searches: about 30 % from 2k to 8k steps) is
underestimated by that much. A capture's closing work (the host fingerprint, about 1-2 s
once per process, and the trace) is not in the probe.

Probes are kept for the process, one per request less its seed and steps (a study's seeds
share one); nothing is written to disk. A run that is not a capture request (a study's
offline tabular runs on a dataset in memory) is priced the same way by `priced`, given
a run to probe.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from rldse.host import proc_stat
from rldse.sim.budget import duration
from rldse.workloads import WORKLOADS, capture

#: CPU seconds the probe's steps past the warm-up take before it stops
PROBE_CPU_S = 1.0
#: env steps past the warm-up a probe's request asks for at most (its progress callback
#: then comes every 1 % of them, so the probe stops close to PROBE_CPU_S)
PROBE_MAX_STEPS = 50_000

Progress = Callable[[int], None]


@dataclass(frozen=True)
class RunCost:
    """A learning run's estimated cost (module docstring)."""

    steps: int
    cpu_s: float
    wall_s: float
    probe_steps: int  # env steps the probe ran (== steps: the run itself was timed)
    cpu_s_per_step: float  # the steady rate past the warm-up
    load: str  # how wall_s was had from cpu_s (rldse.host.wall_per_cpu)

    def describe(self) -> str:
        return (f"about {duration(self.wall_s)} ({self.steps:,} env steps at "
                f"{self.cpu_s_per_step * 1e6:,.0f} CPU µs each, from a probe of "
                f"{self.probe_steps:,}; {self.load})")


@dataclass(frozen=True)
class Probe:
    """What a probe measured: CPU seconds to ``steady_steps`` (start-up and warm-up), CPU
    seconds per step after them, the steps it ran and whether that was the whole run;
    wall and CPU seconds over its timed span (for rldse.host.wall_per_cpu)."""

    steady_steps: int
    steady_cpu_s: float
    cpu_s_per_step: float
    steps: int
    cpu_s: float
    wall_s: float
    whole: bool

    def cost(self, steps: int) -> RunCost:
        from rldse.host import wall_per_cpu

        cpu_s = self.cpu_s if self.whole and steps == self.steps else \
            self.steady_cpu_s + self.cpu_s_per_step * max(steps - self.steady_steps, 0)
        ratio, how = wall_per_cpu(self.wall_s, self.cpu_s)
        return RunCost(steps, cpu_s, cpu_s * ratio, self.steps, self.cpu_s_per_step, how)


def tree_cpu_s() -> float:
    """CPU seconds of this process, its finished children and its live multiprocessing
    children (a PPO capture's actors, a tabular capture's workers: /proc, Linux only)."""
    import multiprocessing

    own = time.process_time()
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = 0.0
    for child in multiprocessing.active_children():
        fields = proc_stat(child.pid)  # utime and stime: fields 14 and 15 of proc(5)
        if fields is not None:
            live += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + done.ru_utime + done.ru_stime + live


class Watch:
    """A run's progress callback (called with the steps done since its last call) that
    measures the run as it goes (module docstring): once the steps past ``warm_steps``
    have taken PROBE_CPU_S of CPU time, ``on_probe`` is called with the Probe, once. Made
    as the run starts: its start-up counts from then. ``cpu_clock`` and ``wall_clock``
    are the clocks read (default tree_cpu_s, time.perf_counter)."""

    def __init__(self, steps: int, warm_steps: int, on_probe: Callable[[Probe], None],
                 cpu_clock: Callable[[], float] | None = None,
                 wall_clock: Callable[[], float] | None = None) -> None:
        self.steps, self.warm_steps, self.on_probe = steps, warm_steps, on_probe
        self.cpu_clock = cpu_clock or tree_cpu_s
        self.wall_clock = wall_clock or time.perf_counter
        self.c0, self.w0 = self.cpu_clock(), self.wall_clock()
        self.done, self.steady, self.last, self.last_wall_s = 0, None, (0, 0.0), 0.0
        self.probed = False

    def __call__(self, n: int) -> None:
        self.done += n
        self.last = (self.done, self.cpu_clock() - self.c0)
        self.last_wall_s = self.wall_clock() - self.w0
        if self.steady is None:
            if self.done >= self.warm_steps:
                self.steady = self.last
        elif (not self.probed and self.last[1] - self.steady[1] >= PROBE_CPU_S
              and self.done < self.steps):
            self.probed = True
            self.on_probe(self.probe(whole=False))

    def probe(self, whole: bool) -> Probe:
        """What was measured up to the last progress call (a capture's closing work, after
        it, is left out); ``whole``: the run has ended."""
        last = (max(self.done, self.steps), self.last[1]) if whole else self.last
        first = self.steady if self.steady is not None and self.steady[0] < last[0] \
            else (0, 0.0)
        rate = (last[1] - first[1]) / max(last[0] - first[0], 1)
        return Probe(first[0], first[1], rate, last[0], last[1], self.last_wall_s, whole)


class _Enough(Exception):
    """Raised by a probe's Watch: the steady rate is measured."""


def _stop(_: Probe) -> None:
    raise _Enough


def probe(run: Callable[[Progress], Any], steps: int, warm_steps: int) -> Probe:
    """Run ``run(progress)`` (a run of ``steps`` env steps, or updates) until the steps past
    ``warm_steps`` have taken PROBE_CPU_S of CPU time, or to its end (module docstring)."""
    watch = Watch(steps, warm_steps, _stop)
    try:
        run(watch)
    except _Enough:
        return watch.probe(whole=False)
    return watch.probe(whole=True)


def _loop_config(cfg: Any) -> Any:
    """The capture request's resolved loop config (its module's ``config_for``: per-env
    defaults, then the request), or None for a family that resolves it inside capture."""
    module = import_module(WORKLOADS.lookup(cfg.workload, "workload").capture_module)
    config_for = getattr(module, "config_for", None)
    return None if config_for is None else config_for(cfg)


def run_steps(cfg: Any) -> int | None:
    """Env steps a capture request runs: its own, else its loop's default (None: unknown
    before it runs)."""
    if cfg.steps is not None:
        return int(cfg.steps)
    steps = getattr(_loop_config(cfg), "steps", None)
    return None if steps is None else int(steps)


def warm_steps(cfg: Any) -> int:
    """Env steps a capture request's loop runs before it learns (an off-policy loop's
    ``learning_starts``; 0 for a loop without)."""
    return int(getattr(_loop_config(cfg), "learning_starts", 0) or 0)


_PROBES: dict[str, Probe] = {}


def priced(key: str, run: Callable[[Progress], Any], probe_steps: int, warm_steps: int,
           steps: int) -> RunCost:
    """The cost of a run of ``steps`` steps (or updates) from a probe of ``run(progress)``,
    a run of ``probe_steps`` of the same kind; probed once per ``key`` in this process."""
    if key not in _PROBES:
        _PROBES[key] = probe(run, probe_steps, warm_steps)
    return _PROBES[key].cost(steps)


def learning_run(cfg: Any) -> RunCost | None:
    """The estimated cost of capturing ``cfg`` (a CaptureConfig) on this host (module
    docstring); None where its steps are unknown before it runs."""
    steps = run_steps(cfg)
    if steps is None:
        return None
    warm = warm_steps(cfg)
    probe_steps = min(steps, warm + PROBE_MAX_STEPS)
    request = cfg.model_copy(update={"steps": probe_steps, "seed": 0})
    return priced(request.model_dump_json(), lambda progress: capture(request, progress),
                  probe_steps, warm, steps)
