"""The cheap first look: an analytic bound on a point's metrics, before its simulation.

From the same per-operation costs the simulator uses (`Machine.phase_cost`), each traced
phase's work per env step is put on the device its placement names (env steps and
resets on CPU cores), on the side of the loop its family's registration gives it
(``Workload.sides``). PIM, CAM and table devices cost operations their own way in the
programs, so phases placed there count as free here, which keeps the bound a bound.
Then, for N simulated env steps:

- time ≥ the largest device load: Σ work on the device / lanes it can use (CPU cores
  capped by `workload.cores`), and ≥ the path of one worker kind: actor-side work over
  min(actors, cores) parallel actors, learner-side work over its device's lanes (as if
  the learner were data-parallel: a program that keeps it on one GPU only runs
  slower), the two added for a synchronous learner, the larger for an asynchronous one;
- energy ≥ Σ idle power × that time + Σ (max − idle) power × the least share of it a
  busy second draws (1, or a GPU's static share: ``min_dynamic_share``, since a kernel on
  few SMs draws less, rldse.models.gpu) × busy lane-seconds / lanes (the utilisation model
  every device uses, Fan, Weber, Barroso, ISCA 2007, without action energy);
- power ≥ Σ idle power; cost is exact (parts × prices).

So env_steps_per_s and steps_per_joule get upper bounds, sim_time_s, energy_j and
avg_power_w lower bounds. Work the program adds beyond the trace (waits, copies, syncs)
only makes the real value worse, so the bound holds whenever the program books at least
the traced work on the placed device. When it does not, simulated trials show it: the
pruner scales the bound by the largest simulated/estimated ratio seen (`calibration`).

Pruning: a point is not simulated when the bound already loses — single objective:
the optimistic value is worse than the best feasible simulated one; several: a feasible
simulated point dominates the optimistic vector; any: a constraint fails for every value
the bound allows (cost, `spec.` terms and power are known before simulating).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rldse.search.constraints import Constraint, Interval
from rldse.sim.machine import Machine
from rldse.system import ResolvedSystem
from rldse.trace import Trace

#: metric → which side the estimate bounds ('upper', 'lower' or 'exact')
SIDES = {"env_steps_per_s": "upper", "steps_per_joule": "upper", "sim_time_s": "lower",
         "energy_j": "lower", "avg_power_w": "lower", "cost_usd": "exact",
         # with a target the point runs exactly to it (rldse.sim.target): its bounds
         "time_to_target_s": "lower", "energy_to_target_j": "lower"}


@dataclass(frozen=True)
class Estimate:
    values: dict[str, float]  # metric → bound, on the side SIDES names

    def interval(self, metric: str, calibration: float = 1.0) -> Interval:
        """The values `metric` can take; `calibration` ≥ 1 widens an inexact bound."""
        v = self.values.get(metric)
        if v is None:
            return (-math.inf, math.inf)
        side = SIDES[metric]
        if side == "upper":
            return (0.0, v * calibration)
        if side == "lower":
            return (v / calibration, math.inf)
        return (v, v)

    def optimistic(self, metric: str, direction: str, calibration: float = 1.0) -> float:
        lo, hi = self.interval(metric, calibration)
        return hi if direction == "maximize" else lo


def estimate(trace: Trace, system: ResolvedSystem) -> Estimate:
    """Bounds on the metrics of simulating `trace` on `system` (module docstring)."""
    machine = Machine(trace, system)
    idle_w = sum(d.idle_w for d in machine.devices.values())
    cost = system.ownership.run_usd(sum(d.cost_usd for d in machine.devices.values()))
    values = {"avg_power_w": idle_w, "cost_usd": cost}
    ops = trace.ops
    trace_steps = float(trace.env_steps)
    if trace_steps <= 0:  # nothing to scale per env step (an offline tabular trace)
        return Estimate(values)
    knobs = system.knobs
    steps = float(knobs.env_steps or trace_steps)
    worker_knob = system.workload.worker_knob
    workers = (getattr(knobs, worker_knob, None) if worker_knob else None) or 1
    present = set(ops["phase"].astype(str).unique())

    cpu = machine.devices["cpu"]
    cores = min(cpu.lanes, knobs.cores or cpu.lanes)
    lanes = {"cpu": cores, "gpu": len(machine.gpus)}  # kinds with per-operation costs

    def kind_of(where: str) -> str:
        return "cpu" if where == "cpu" else system.placement.get(where, "cpu")

    busy = {k: 0.0 for k in lanes}  # lane-seconds per device kind for `steps` env steps
    path_s = {"actor": 0.0, "learner": 0.0}
    sides = system.workload.sides  # phase -> (side, where: a placement role or 'cpu')
    for side in ("actor", "learner"):
        for phase, (on, where) in sides.items():
            if on != side:
                continue
            kind = kind_of(where)
            if phase not in present or kind not in lanes or lanes[kind] == 0:
                continue
            work_s = float(np.sum(machine.phase_cost(phase, kind))) * steps / trace_steps
            busy[kind] += work_s
            parallel = lanes[kind]
            if side == "actor" and kind == "cpu":  # each actor steps its envs in order
                parallel = min(cores, workers)
            path_s[side] += work_s / parallel
    load_s = max(busy[k] / lanes[k] for k in busy if lanes[k] > 0)
    combined = (path_s["actor"] + path_s["learner"] if getattr(knobs, "learner", "sync") == "sync"
                else max(path_s.values()))
    time_s = max(load_s, combined)
    dynamic_j = 0.0
    for d in machine.devices.values():
        share = busy.get(d.kind, 0.0) / (len(machine.gpus) if d.kind == "gpu" else 1)
        floor = getattr(machine.model(d.kind), "min_dynamic_share", 1.0)
        dynamic_j += (d.max_w - d.idle_w) * floor * share / d.lanes
    energy_j = idle_w * time_s + dynamic_j
    values.update(sim_time_s=time_s, energy_j=energy_j, time_to_target_s=time_s,
                  energy_to_target_j=energy_j)
    if time_s > 0:
        values["env_steps_per_s"] = steps / time_s
    if energy_j > 0:
        values["steps_per_joule"] = steps / energy_j
    return Estimate(values)


@dataclass(frozen=True)
class Incumbents:
    """What simulated trials say, for pruning: their objective values (feasible ones
    only) and how far the estimate undershot them."""

    values: list[tuple[float, ...]]
    calibration: dict[str, float]


def calibration(pairs: Sequence[tuple[Mapping[str, float], Mapping[str, float]]]) -> dict[str, float]:
    """Per metric, max(1, the largest factor by which a simulated value beat its bound),
    from (estimate values, simulated metrics) of simulated trials."""
    out: dict[str, float] = {}
    for est, sim in pairs:
        for metric, side in SIDES.items():
            e, s = est.get(metric), sim.get(metric)
            if e is None or s is None or side == "exact" or e <= 0 or s <= 0:
                continue
            ratio = s / e if side == "upper" else e / s
            out[metric] = max(out.get(metric, 1.0), ratio)
    return out


def prune_reason(est: Estimate, objectives: Sequence[tuple[str, str]],
                 constraints: Sequence[Constraint], spec_terms: Mapping[str, float],
                 incumbents: Incumbents, margin: float) -> str | None:
    """Why `est` cannot win (module docstring), or None to simulate it."""
    widen = 1.0 + margin

    def interval(name: str) -> Interval:
        if name in spec_terms:
            return (spec_terms[name], spec_terms[name])
        return est.interval(name, incumbents.calibration.get(name, 1.0) * widen)

    for con in constraints:
        lo, hi = con.lhs_interval(interval)
        if con.best_violation((lo, hi)) > 0:
            shown = f"≥ {lo:.6g}" if con.op == "<=" else f"≤ {hi:.6g}"
            return f"infeasible by estimate: {con.text} (left side {shown})"
    best = tuple(est.optimistic(m, d, incumbents.calibration.get(m, 1.0) * widen)
                 for m, d in objectives)
    signs = [1.0 if d == "maximize" else -1.0 for _, d in objectives]
    for values in incumbents.values:
        better_eq = all(s * v >= s * b for s, v, b in zip(signs, values, best, strict=True))
        strictly = any(s * v > s * b for s, v, b in zip(signs, values, best, strict=True))
        if better_eq and strictly:
            bound = ", ".join(f"{m} {'≤' if d == 'maximize' else '≥'} {b:.6g}"
                              for (m, d), b in zip(objectives, best, strict=True))
            return f"dominated by estimate: {bound}"
    return None
