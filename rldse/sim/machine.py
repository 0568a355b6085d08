"""Machine: one SimPy environment, one Device per part, the trace costed on those parts.

Programs (``workloads/<algo>.program``) drive it with long-lived processes. What they
need from a trace is "how long would the next k operations of phase P take on device
D": `Machine.phase_cost(phase, kind)` costs every trace row of that phase on that part
once (vectorized), and `Cycle` hands out sums of consecutive rows, wrapping around the
trace, in O(1) through prefix sums, so a run of k steps no other process can observe is
one timeout (DESIGN.md: merged events).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy

from rldse.errors import RldseError
from rldse.models import OpColumns, load_table_part, make_model
from rldse.models.spec import PartSpec
from rldse.sim.device import Device
from rldse.sim.result import Result, WorkerClock, bottleneck, device_stats
from rldse.system import SystemSpec
from rldse.trace import Trace


class Cycle:
    """Consecutive sums over a per-operation cost array, wrapping around its end."""

    __slots__ = ("_prefix", "_n", "_total", "pos")

    def __init__(self, costs_s: np.ndarray, start: int = 0) -> None:
        if len(costs_s) == 0:
            raise ValueError("Cycle needs at least one cost")
        self._prefix = np.concatenate([[0.0], np.cumsum(costs_s, dtype=np.float64)])
        self._n = len(costs_s)
        self._total = float(self._prefix[-1])
        self.pos = start % self._n

    @property
    def mean_s(self) -> float:
        return self._total / self._n

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


@dataclass
class Outcome:
    """What a program reports back besides what the devices accounted."""

    env_steps: int
    updates: int
    breakdown_s: dict[str, float] = field(default_factory=dict)
    gpu_memory_peak_bytes: int = 0
    gpu_memory_ok: bool = True
    swapped_bytes: int = 0
    am_capacity_ok: bool = True


class Machine:
    """The simulated machine a program runs on."""

    def __init__(self, trace: Trace, spec: SystemSpec, seed: int = 0,
                 timeline: bool = False) -> None:
        self.trace, self.spec, self.seed = trace, spec, seed
        self.knobs = spec.workload
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(seed)
        self.clock = WorkerClock()
        self.timeline: list | None = [] if timeline else None
        self.parts: dict[str, PartSpec] = spec.parts(trace.meta.host)
        host = trace.meta.host
        self.models = {kind: make_model(p, host=host) if kind == "cpu" else make_model(p)
                       for kind, p in self.parts.items()}
        self.devices: dict[str, Device] = {}
        for kind, model in self.models.items():
            count = spec.gpu.count if kind == "gpu" else 1
            for k in range(count):
                name = f"{kind}{k}" if count > 1 else kind
                self.devices[name] = Device(
                    name=name, kind=kind, preset=getattr(spec, kind).preset,
                    lanes=int(model.lanes), idle_w=float(model.idle_w),
                    max_w=float(model.max_w), estimator=model.method,
                    claimed_accuracy=model.claimed_accuracy,
                    cost_usd=float(self.parts[kind].price_usd), timeline=self.timeline)
        if spec.table is not None:
            self._add_table_devices(spec)
        self._costs: dict[tuple[str, str, int], np.ndarray] = {}

    def _add_table_devices(self, spec: SystemSpec) -> None:
        """One Device per table row used; a row that runs replay and learner gets 2 lanes."""
        t = spec.table
        for row in dict.fromkeys((t.replay, t.learn)):
            part = load_table_part(t.latency_csv, row, unit=t.unit, max_w=t.max_w.get(row, 0.0))
            model = make_model(part)
            name = f"table:{row}"
            self.models[name] = model
            self.devices[name] = Device(
                name=name, kind="table", preset=row, lanes=2 if t.replay == t.learn else 1,
                idle_w=float(model.idle_w), max_w=float(model.max_w), estimator=model.method,
                claimed_accuracy=model.claimed_accuracy, timeline=self.timeline)

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
        return [d for d in self.devices.values() if d.kind == "gpu"]

    def info(self, key: str):
        """A workload_info entry the program needs; a one-line error if the trace lacks it."""
        info = self.trace.meta.workload_info
        if key not in info:
            raise RldseError(f"trace {self.trace.digest}: workload_info has no '{key}' "
                             f"({self.trace.meta.workload} traces from this rldse have it; "
                             "capture the trace again)")
        return info[key]

    def require_default(self, knobs: tuple[str, ...], workload: str) -> None:
        """Refuse knobs a program does not model, rather than silently ignoring them."""
        defaults = type(self.knobs)()
        for name in knobs:
            if getattr(self.knobs, name) != getattr(defaults, name):
                raise RldseError(f"workload.{name}: not used by {workload} programs "
                                 "(leave it unset)")

    # ---- trace costs ----------------------------------------------------------------
    def trace_ops(self, phase: str) -> OpColumns:
        rows = self.trace.ops[self.trace.ops["phase"] == phase]
        if rows.empty:
            raise RldseError(f"trace {self.trace.digest} has no '{phase}' operations")
        return OpColumns.from_frame(rows)

    def phase_cost(self, phase: str, kind: str, layers: int = 0) -> np.ndarray:
        """Seconds for each trace row of `phase` on part `kind` (cached). On a GPU the
        kernel count grows with the network's `layers`, which only the workload knows;
        0 counts the fixed kernels alone, a lower bound (what the search's estimate uses)."""
        key = (phase, kind, layers)
        if key not in self._costs:
            ops = self.trace_ops(phase)
            model = self.model(kind)
            costs = model.op_seconds(ops, layers=layers) if kind == "gpu" else \
                model.op_seconds(ops)
            self._costs[key] = np.asarray(costs)
        return self._costs[key]

    def cycle(self, phase: str, kind: str) -> Cycle:
        """A cycle over the phase's costs starting at a seeded random row."""
        costs = self.phase_cost(phase, kind)
        return Cycle(costs, start=int(self.rng.integers(len(costs))))

    # ---- result ---------------------------------------------------------------------
    def result(self, outcome: Outcome) -> Result:
        t = self.env.now
        devices = device_stats(list(self.devices.values()), t)
        energy = sum(d.energy_j for d in devices)
        phases = self.clock.stats()
        name, share = bottleneck(phases, self.clock.instances)
        gpu_count = self.spec.gpu.count if self.spec.gpu else 0
        cost = sum(float(p.price_usd) * (gpu_count if k == "gpu" else 1)
                   for k, p in self.parts.items())
        warnings = [f"{d.name} did no work: it adds only idle power ({d.avg_power_w:.3g} W) "
                    "and its cost" for d in devices if d.busy_s == 0]
        return Result(
            sim_time_s=t, env_steps=outcome.env_steps,
            env_steps_per_s=outcome.env_steps / t if t > 0 else 0.0,
            updates=outcome.updates, updates_per_s=outcome.updates / t if t > 0 else 0.0,
            energy_j=energy, avg_power_w=energy / t if t > 0 else 0.0,
            steps_per_joule=outcome.env_steps / energy if energy > 0 else 0.0,
            cost_usd=cost, bottleneck=name, critical_share=share,
            gpu_memory_peak_bytes=outcome.gpu_memory_peak_bytes,
            gpu_memory_ok=outcome.gpu_memory_ok, swapped_bytes=outcome.swapped_bytes,
            am_capacity_ok=outcome.am_capacity_ok,
            breakdown_s=outcome.breakdown_s, warnings=warnings, devices=devices, phases=phases,
            trace_digest=self.trace.digest, spec_digest=self.spec.digest, seed=self.seed)
