"""Machine: one SimPy environment, one Device per part, the trace costed on those parts.

Programs (``workloads/<algo>.program``) drive it with long-lived processes. What they
need from a trace is "how long would the next k operations of phase P take on device
D": `Machine.phase_cost(phase, kind)` costs every trace row of that phase on that part
once (vectorized), and `Cycle` hands out sums of consecutive rows, wrapping around the
trace, in O(1) through prefix sums, so a run of k steps no other process can observe is
one timeout (merged events: events grow with interactions, not with operations).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import simpy

from rldse.errors import RldseError
from rldse.models import PART_KINDS, OpColumns, make_model
from rldse.models.kinds import KernelModel, PartModel, PartTime, Runs
from rldse.models.spec import PartSpec
from rldse.sim import trace_cache
from rldse.sim.device import Device
from rldse.sim.lanes import Lanes
from rldse.sim.result import (
    DeviceStats,
    Result,
    WorkerClock,
    bottleneck,
    device_stats,
    operator_stats,
    ramp_warnings,
)
from rldse.sim.timeline import NO_TAG, TimelineStream
from rldse.system import CPU_KIND, ResolvedSystem, capture_host_cpu, resolve
from rldse.trace import NETWORK_PHASES, Trace, networks_on_gpu


class Cycle:
    """Consecutive sums over a per-operation cost array, wrapping around its end."""

    __slots__ = ("_prefix", "_n", "_total", "pos", "_windows")

    def __init__(self, costs_s: np.ndarray, start: int = 0) -> None:
        if len(costs_s) == 0:
            raise ValueError("Cycle needs at least one cost")
        self._prefix = np.concatenate([[0.0], np.cumsum(costs_s, dtype=np.float64)])
        self._n = len(costs_s)
        self._total = float(self._prefix[-1])
        self.pos = start % self._n
        self._windows: dict[int, np.ndarray] = {}  # r -> sums of r rows from each row

    @property
    def mean_s(self) -> float:
        return self._total / self._n

    @property
    def rows(self) -> int:
        return self._n

    def at(self, start: int) -> Cycle:
        """A cycle over the same costs from row ``start``, sharing the prefix sums (one
        per actor without n cumulative sums)."""
        c = copy.copy(self)
        c.pos = start % self._n
        return c

    def take(self, k: int) -> float:
        """Sum of the next k costs (k >= 0)."""
        full, rest = divmod(k, self._n)
        p = self._prefix
        end = self.pos + rest
        if end <= self._n:
            s = p[end] - p[self.pos]
        else:
            s = p[self._n] - p[self.pos] + p[end - self._n]
        self.pos = end % self._n
        return full * self._total + float(s)

    def takes(self, counts: np.ndarray) -> np.ndarray:
        """Sums of consecutive takes of ``counts[i]`` costs (advancing the cycle), as
        ``[self.take(k) for k in counts]`` would return them, in O(len(counts)) numpy."""
        counts = np.asarray(counts, dtype=np.int64)
        if len(counts) and (counts == counts[0]).all():
            return self._takes_of(int(counts[0]), len(counts))
        idx = self.pos + np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        full, rem = np.divmod(idx, self._n)
        self.pos = int(rem[-1])
        return np.diff(full * self._total + self._prefix[rem])

    def _takes_of(self, k: int, times: int) -> np.ndarray:
        """``times`` consecutive takes of k costs: a gather from the sums of k rows at
        every row (cached per k mod n), 10x fewer passes than the general case."""
        full, r = divmod(k, self._n)
        w = self._windows.get(r)
        if w is None:
            p, n = self._prefix, self._n
            j = np.arange(n)
            w = self._windows[r] = np.where(j + r <= n, p[np.minimum(j + r, n)] - p[j],
                                            p[n] - p[j] + p[(j + r) % n])
        at = self.pos + k * np.arange(times, dtype=np.int64)
        self.pos = (self.pos + k * times) % self._n
        sums = np.take(w, at, mode="wrap")
        return sums + full * self._total if full else sums


class SplitCycle:
    """Consecutive sums of host-core, device and wall seconds of the same rows, advanced
    together: ``take(k)`` is a PartTime (rldse.models.kinds) of the next k operations
    run one after another."""

    __slots__ = ("host", "device", "wall")

    def __init__(self, host_s: np.ndarray, device_s: np.ndarray, wall_s: np.ndarray,
                 start: int = 0) -> None:
        self.host, self.device, self.wall = (Cycle(np.asarray(c, dtype=np.float64), start)
                                             for c in (host_s, device_s, wall_s))

    @classmethod
    def on_device(cls, costs_s: np.ndarray, start: int = 0) -> SplitCycle:
        """Operations that a device runs by itself, nothing on an issuing core (a CPU
        part running the phase on its own cores)."""
        return cls(np.zeros_like(costs_s), costs_s, costs_s, start)

    @property
    def mean_s(self) -> float:
        """Mean wall seconds per operation."""
        return self.wall.mean_s

    @property
    def rows(self) -> int:
        return self.wall.rows

    def at(self, start: int) -> SplitCycle:
        """The same rows from row ``start``, sharing the prefix sums (Cycle.at)."""
        c = copy.copy(self)
        c.host, c.device, c.wall = (x.at(start) for x in (self.host, self.device, self.wall))
        return c

    @property
    def pos(self) -> int:
        """The next row (the three cycles advance together)."""
        return self.wall.pos

    @pos.setter
    def pos(self, row: int) -> None:
        self.host.pos = self.device.pos = self.wall.pos = row

    def take(self, k: int) -> PartTime:
        """The next ``k`` rows. Each row's host and device time lie within its wall time,
        but the three sums come from separate prefix sums whose rounding grows with the
        cycle's running total, so host and device are clipped to the wall."""
        wall = self.wall.take(k)
        return PartTime(min(self.host.take(k), wall), min(self.device.take(k), wall), wall)

    def takes(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(host, device, wall) seconds of consecutive takes of ``counts[i]`` operations."""
        return self.host.takes(counts), self.device.takes(counts), self.wall.takes(counts)


@dataclass(frozen=True)
class Runner:
    """What serves a role on a Machine: the part kind placed for it, how that kind runs
    the role (programs choose their implementation by ``runs``, never by ``kind``), its
    cost model and its devices. ``label`` is what a worker's clock entries name as the
    device the time was spent on."""

    role: str
    kind: str
    runs: Runs
    model: PartModel
    devices: tuple[Device, ...]

    @property
    def device(self) -> Device:
        """The first device (where a one-device program books)."""
        return self.devices[0]

    @property
    def label(self) -> str:
        return self.kind

    @property
    def kernels(self) -> bool:
        """Operations are kernels a host core issues (dispatch on the core, the rest on
        the part)."""
        return self.runs is Runs.KERNELS

    @property
    def on_kernel_part(self) -> bool:
        """The part is one that runs issued kernels (for some role): what the role keeps
        there counts against that part's memory (a GPU replay buffer)."""
        return PART_KINDS[self.kind].issues_kernels

    @property
    def is_host(self) -> bool:
        """The host CPU's own cores run the role."""
        return self.kind == CPU_KIND


@dataclass
class Outcome:
    """What a program reports back besides what the devices accounted. ``checks`` holds the
    feasibility checks its part kinds declare (rldse.models.kinds.Check), by name."""

    env_steps: int
    updates: int
    breakdown_s: dict[str, float] = field(default_factory=dict)
    gpu_memory_peak_bytes: int = 0
    swapped_bytes: int = 0
    #: bytes the program keeps in host DRAM at its peak (buffers, tables, data sets and
    #: what it swapped out of a GPU); the Machine checks it against the CPU's ``mem_bytes``
    host_memory_bytes: int = 0
    checks: dict[str, bool] = field(default_factory=dict)
    #: per rollout (or batch) the learner consumed: parameter updates its policy was behind
    #: the learner's (policy lag), as samples or as a histogram {updates behind: count};
    #: None where the program does not let actors run ahead
    staleness_updates: list[int] | dict[int, int] | None = None
    #: the capture's mean staleness: rldse's capture loops are synchronous (actors wait
    #: for each broadcast), so 0
    captured_staleness_updates: float = 0.0


#: How a program runs: ``fast`` takes its merged and closed-form paths where they apply;
#: ``reference`` books every operation (env step, act, insert, update drive, inference
#: batch) as its own event at its arrival time and shares oversubscribed cores by
#: processor sharing event by event (rldse.sim.sharing): slow, plainly right, and what
#: tests/sim/test_reference.py holds the fast paths to.
ENGINES = ("fast", "reference")


def busy_cores(system: ResolvedSystem) -> int:
    """Cores of the host CPU that ``system``'s program keeps busy at once: its family's
    busy processes (Workload.busy_processes), at most the CPU's cores; processes beyond
    them run as further hardware threads (SMT) or time-sliced on cores already busy,
    which lowers no clock further (turbo counts active cores)."""
    n = max(int(system.workload.busy_processes(system)), 1)
    cpu = system.specs.get(CPU_KIND)
    return min(n, cpu.lanes) if cpu is not None else n


class Machine:
    """The simulated machine a program runs on: one Device per part instance of a
    ResolvedSystem, the knobs resolved for the trace, and the roles' placement."""

    def __init__(self, trace: Trace, system: ResolvedSystem | Any, seed: int = 0,
                 timeline: str | Path | None = None,
                 timeline_window: tuple[float, float] | None = None,
                 engine: str = "fast") -> None:
        """``system``: a ResolvedSystem, or a SystemSpec resolved against ``trace`` here.
        ``engine``: one of ENGINES; ``reference`` makes programs skip every merged or
        closed-form path (``self.reference``).
        ``timeline``: a path the bookings are streamed to (rldse.sim.timeline.
        TimelineStream; the caller closes ``self.timeline``), only those overlapping
        ``timeline_window`` (start_s, end_s) if given."""
        if engine not in ENGINES:
            raise RldseError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
        self.reference = engine == "reference"
        if not isinstance(system, ResolvedSystem):
            system = resolve(system, trace)
        self.trace, self.system, self.seed = trace, system, seed
        self.spec = system.spec
        self.knobs = system.knobs
        self.placement = system.placement
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(seed)
        self.clock = WorkerClock()
        self.timeline: TimelineStream | None = None
        # what CPU models scale from, built once per trace digest (a frozen spec)
        host = trace_cache.cached(("capture_host", trace.digest), lambda: capture_host_cpu(trace))
        #: cores the program keeps busy at once (its processes at its busiest, capped at
        #: the host CPU's cores): the clock every busy core runs at (CpuSpec.busy_clock_mhz)
        self.busy_cores = busy_cores(system)
        self.parts: dict[str, PartSpec] = system.specs
        self.models: dict[str, PartModel] = {}
        self.devices: dict[str, Device] = {}
        for kind, insts in system.parts.items():
            built: dict[int, PartModel] = {}  # one per distinct spec (a kind's instances share one)
            for inst in insts:
                model = built.get(id(inst.spec))
                if model is None:
                    model = built[id(inst.spec)] = make_model(inst.spec, capture_host=host,
                                                              busy_cores=self.busy_cores)
                self.models.setdefault(kind, model)
                self.models[inst.name] = model
                self.devices[inst.name] = self._device(inst.name, kind, inst.preset,
                                                       int(inst.lanes or model.lanes), model)
        cpu = self.models.get(CPU_KIND)
        gpu_captured = networks_on_gpu(trace.meta)
        # framework dispatch runs on the system's cores; each kernel-issuing model once
        for kind in system.parts:
            if not PART_KINDS[kind].issues_kernels:
                continue
            for model in {id(self.models[i.name]): self.models[i.name]
                          for i in system.parts[kind]}.values():
                assert isinstance(model, KernelModel)
                if cpu is not None:
                    model.issue_from(cpu.spec, self.busy_cores)
                if gpu_captured:
                    model.anchor_dispatch(NETWORK_PHASES)
        if timeline is not None:  # opened last: nothing after it can fail
            self.timeline = TimelineStream(timeline, list(self.devices),
                                           window_s=timeline_window)
            for d in self.devices.values():
                d.timeline = self.timeline
        self._costs: dict[tuple[str, str, int], np.ndarray] = {}
        self._iteration_ends: list[np.ndarray] = []

    def _device(self, name: str, kind: str, preset: str, lanes: int,
                model: PartModel) -> Device:
        """The Device of part instance ``name``: its lanes, ``model``'s power and the
        price of the spec it was built from."""
        return Device(name=name, kind=kind, preset=preset, lanes=lanes,
                      idle_w=float(model.idle_w), max_w=float(model.max_w),
                      estimator=model.method,
                      dynamic_share=(model.dynamic_share if PART_KINDS[kind].issues_kernels
                                     else None),
                      claimed_accuracy=model.claimed_accuracy,
                      cost_usd=float(model.spec.price_usd), clock=self.env)

    def repart(self, name: str, preset: str, model: PartModel) -> Device:
        """Device ``name`` rebuilt as ``model``'s part, the preset ``preset``, before any
        booking: a program that runs some of a kind's instances on another preset
        (llm_rl's rollout engines on ``workload.rollout_gpu``) has their lanes, power and
        price counted as that preset's."""
        old = self.devices[name]
        assert old.busy_s == 0, f"{name}: rebuilt after a booking"
        self.models[name] = model
        dev = self.devices[name] = self._device(name, old.kind, preset, int(model.lanes),
                                                model)
        dev.timeline = old.timeline
        return dev

    # ---- placement ------------------------------------------------------------------
    def runner(self, role: str) -> Runner:
        """What serves ``role``: the kind placed for it (the host CPU where the workload
        places nothing there), how it runs it, its model and devices."""
        kind = self.placement.get(role, CPU_KIND)
        return Runner(role, kind, PART_KINDS[kind].runs(role), self.models[kind],
                      tuple(self.of_kind(kind)))

    @property
    def cpu(self) -> Runner:
        """The machine's own CPU (the target, not the capture host its model scales
        from): its cores run env steps, actors' glue and every framework's dispatch."""
        return Runner("host", CPU_KIND, Runs.CORES, self.models[CPU_KIND],
                      tuple(self.of_kind(CPU_KIND)))

    def table_seconds(self, row: str, phase: str) -> float:
        """Latency of one `phase` operation on table row `row` (co-located if shared)."""
        t = self.spec.table
        colocated = t.replay == t.learn
        return float(self.models[f"table:{row}"].op_seconds(OpColumns.of(phase),
                                                             colocated=colocated)[0])

    # ---- parts ----------------------------------------------------------------------
    def device(self, name: str) -> Device:
        if name not in self.devices:
            raise RldseError(f"system '{self.spec.name}' has no {name} "
                             f"(it has {', '.join(self.devices)})")
        return self.devices[name]

    def model(self, kind: str):
        if kind not in self.models:
            raise RldseError(f"system '{self.spec.name}' has no {kind} part")
        return self.models[kind]

    @property
    def gpus(self) -> list[Device]:
        """Devices of every kind that runs issued kernels (GPUs and their like)."""
        return [d for d in self.devices.values() if PART_KINDS[d.kind].issues_kernels]

    def of_kind(self, kind: str) -> list[Device]:
        return [d for d in self.devices.values() if d.kind == kind]

    # ---- trace costs ----------------------------------------------------------------
    def trace_ops(self, phase: str) -> OpColumns:
        """The trace's rows of ``phase`` as read-only columns (computed once per trace
        digest in this process: rldse.sim.trace_cache)."""
        trace = self.trace

        def make() -> OpColumns | None:
            rows = trace.ops[trace.ops["phase"] == phase]
            return None if rows.empty else OpColumns.from_frame(rows, trace.meta)

        ops = trace_cache.cached(("trace_ops", trace.digest, phase), make)
        if ops is None:
            raise RldseError(f"trace {trace.digest} has no '{phase}' operations")
        return ops

    def phase_cost(self, phase: str, kind: str = CPU_KIND, layers: int = 0) -> np.ndarray:
        """Seconds for each trace row of `phase` on part `kind` (cached; default the host
        CPU). Where the kind issues kernels their count grows with the network's
        `layers`, which only the workload knows; 0 counts the fixed kernels alone, a lower
        bound (what the search's estimate uses)."""
        key = (phase, kind, layers)
        if key not in self._costs:
            model = self.model(kind)
            kernels = PART_KINDS[kind].issues_kernels

            def make() -> np.ndarray:
                ops = self.trace_ops(phase)
                costs = model.op_times(ops, layers=layers).wall_s if kernels else \
                    model.op_seconds(ops)
                return np.array(costs, dtype=np.float64)

            # a part that issues kernels fills its model's energy ledger while costing
            # (GpuModel.dynamic_share), so its costs are made per machine: a cost shared
            # from another machine's model would leave this one's ledger empty
            self._costs[key] = make() if kernels else trace_cache.cached(
                ("phase_cost", self.trace.digest, phase, kernels, layers,
                 trace_cache.model_key(model)), make)
        return self._costs[key]

    def drive(self, dev: Device, t: float, work: PartTime, phase: str, worker: str,
              core: Device, core_lanes: Lanes | None = None, count: int = 1,
              track: str | None = None) -> float:
        """Run ``work`` from ``t`` on ``dev``, driven by ``worker`` from a core of ``core``
        (``core_lanes``: the cores that worker may use; None: any): the host part (a
        framework's dispatch, a gather) is booked on the core as 'dispatch', the device
        part on ``dev`` as ``phase``. Returns when the operation is done (later than its
        wall time if a device was busy). The worker's clock gets the host part as
        'dispatch' and the rest of the wall time as ``phase`` on ``dev``'s kind, so a
        launch-bound learner's bottleneck reads 'dispatch'; waits are the caller's.
        ``track``: the timeline track its events go on (default: the worker's)."""
        end = t + work.wall_s
        tl = self.timeline
        if tl is not None:
            tl.tag = (track or worker, {"items": count})
        if work.device_s > 0:
            end = max(end, dev.book(t, work.device_s, phase))
        if work.host_s > 0:
            end = max(end, core.book_on(core_lanes, t, work.host_s, "dispatch")
                      if core_lanes is not None else core.book(t, work.host_s, "dispatch"))
            self.clock.spend(worker, "dispatch", core.kind, work.host_s, 0)
        if tl is not None:
            tl.tag = NO_TAG
        self.clock.spend(worker, phase, dev.kind, work.wall_s - work.host_s, count)
        return end

    def book(self, dev: Device, t: float, dur_s: float, phase: str, worker: str,
             lanes: Lanes | None = None, **args: int) -> float:
        """``dev.book`` (``dev.book_on(lanes, ...)`` with ``lanes``) for ``worker``: with a
        streamed timeline the event also goes on the worker's track with ``args`` (what
        the booking knows: items, batch); returns the end time."""
        tl = self.timeline
        if tl is not None:
            tl.tag = (worker, args)
        end = dev.book(t, dur_s, phase) if lanes is None else dev.book_on(lanes, t, dur_s,
                                                                          phase)
        if tl is not None:
            tl.tag = NO_TAG
        return end

    def book_parts(self, dev: Device, t: float, parts: tuple[tuple[str, float], ...],
                   worker: str, lanes: Lanes, **args: int) -> float:
        """``dev.book_parts(lanes, ...)`` for ``worker``, its events tagged as ``book``'s."""
        tl = self.timeline
        if tl is not None:
            tl.tag = (worker, args)
        end = dev.book_parts(lanes, t, parts)
        if tl is not None:
            tl.tag = NO_TAG
        return end

    def cycle(self, phase: str, kind: str = CPU_KIND) -> Cycle:
        """A cycle over the phase's costs starting at a seeded random row."""
        costs = self.phase_cost(phase, kind)
        return Cycle(costs, start=int(self.rng.integers(len(costs))))

    # ---- iterations -----------------------------------------------------------------
    def mark_iterations(self, ends_s) -> None:
        """Record when iterations end (a learner iteration or update, a sync round, a
        tabular round), one or an array at a time, for ``iteration_times_s``."""
        self._iteration_ends.append(np.atleast_1d(np.asarray(ends_s, dtype=np.float64)))

    def iteration_times_s(self) -> np.ndarray:
        """Time between consecutive iteration ends (empty when the program marks none)."""
        if not self._iteration_ends:
            return np.empty(0)
        return np.diff(np.sort(np.concatenate(self._iteration_ends)))

    # ---- result ---------------------------------------------------------------------
    def result(self, outcome: Outcome) -> Result:
        t = self.env.now
        devices = device_stats(list(self.devices.values()), t)
        energy = sum(d.energy_j for d in devices)
        phases = self.clock.stats()
        name, share = bottleneck(phases, self.clock.instances)
        cost = sum(d.cost_usd for d in devices)
        power_w = energy / t if t > 0 else 0.0
        steps_per_s = outcome.env_steps / t if t > 0 else 0.0
        buyer = self.system.ownership.figures(cost, power_w, steps_per_s, devices)
        warnings = _idle_notes([d for d in devices if d.busy_s == 0])
        warnings += [w for m in {id(m): m for m in self.models.values()}.values()
                     for w in m.warnings]
        warnings += ramp_warnings(outcome.breakdown_s, t)
        lag = _staleness(outcome)
        if lag is not None and lag[0] != outcome.captured_staleness_updates:
            warnings.append(
                f"policy lag: actors act on parameters {lag[0]:.3g} updates old on average "
                f"(p95 {lag[1]:.3g}), the capture's {outcome.captured_staleness_updates:g}; "
                "time-to-target metrics assume the captured sample efficiency per env step")
        return Result(  # checked: a defect upstream shows as one line, not a wrong number
            staleness_mean_updates=None if lag is None else lag[0],
            staleness_p95_updates=None if lag is None else lag[1],
            sim_time_s=t, env_steps=outcome.env_steps,
            env_steps_per_s=steps_per_s,
            updates=outcome.updates, updates_per_s=outcome.updates / t if t > 0 else 0.0,
            energy_j=energy, avg_power_w=power_w,
            steps_per_joule=outcome.env_steps / energy if energy > 0 else 0.0,
            cost_usd=buyer.pop("cost_usd", cost), **buyer, bottleneck=name,
            critical_share=share,
            gpu_memory_peak_bytes=outcome.gpu_memory_peak_bytes,
            swapped_bytes=outcome.swapped_bytes,
            host_memory_peak_bytes=outcome.host_memory_bytes, checks=self._checks(outcome),
            breakdown_s=outcome.breakdown_s, warnings=warnings, devices=devices, phases=phases,
            operators=operator_stats([r for m in {id(m): m for m in self.models.values()}
                                      .values() if hasattr(m, "operator_rows")
                                      for r in m.operator_rows()], phases),
            trace_digest=self.trace.digest, spec_digest=self.system.digest,
            seed=self.seed).checked_physical(f"trace {self.trace.source}")

    def _checks(self, outcome: Outcome) -> dict[str, bool]:
        """Every check the system's part kinds declare: the program's verdict, or True
        where its program had nothing to check (e.g. no TCAM replay)."""
        declared = [c.name for k in self.system.parts for c in PART_KINDS[k].checks]
        unknown = set(outcome.checks) - set(declared)
        if unknown:
            raise ValueError(f"program reported undeclared checks {sorted(unknown)}")
        checks = {name: bool(outcome.checks.get(name, True)) for name in declared}
        if "host_memory" in checks and "host_memory" not in outcome.checks:
            checks["host_memory"] = outcome.host_memory_bytes <= self.host_memory_capacity
        return checks

    def memory_checks(self, runner: Runner | None, ok: bool) -> dict[str, bool]:
        """``ok`` under the memory check ``runner``'s kind declares (Check.memory); empty
        where nothing runs on such a part."""
        if runner is None:
            return {}
        return {c.name: ok for c in PART_KINDS[runner.kind].checks if c.memory}

    @property
    def host_memory_capacity(self) -> int:
        """Bytes of host DRAM: the CPU's mem_bytes × sockets (0 without a CPU part)."""
        cpu = self.models.get(CPU_KIND)
        return int(cpu.spec.mem_capacity_bytes) if cpu is not None else 0


def _idle_notes(idle: list[DeviceStats]) -> list[str]:
    """One line for the devices that did no work: they add only idle power and cost."""
    if len(idle) == 1:
        d = idle[0]
        return [f"{d.name} did no work: it adds only idle power ({d.avg_power_w:.3g} W) "
                "and its cost"]
    if not idle:
        return []
    return [f"{len(idle)} devices did no work ({', '.join(d.name for d in idle)}): they add "
            f"only idle power ({sum(d.avg_power_w for d in idle):.3g} W together) and "
            "their cost"]


def _staleness(outcome: Outcome) -> tuple[float, float] | None:
    """Mean and p95 of the program's staleness: samples (p95 by linear interpolation) or a
    histogram (p95: the smallest lag with 95 % of the count at or below it)."""
    lag = outcome.staleness_updates
    if lag is None:
        return None
    if not lag:
        return 0.0, 0.0
    if isinstance(lag, dict):
        keys = np.array(sorted(lag), dtype=np.float64)
        counts = np.array([lag[k] for k in sorted(lag)], dtype=np.float64)
        cum = np.cumsum(counts)
        p95 = keys[int(np.searchsorted(cum, 0.95 * cum[-1]))]
        return float(np.dot(keys, counts) / cum[-1]), float(p95)
    a = np.asarray(lag, dtype=np.float64)
    return float(a.mean()), float(np.percentile(a, 95))
