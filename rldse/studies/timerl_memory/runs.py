"""The study's runs: TimeRL's program (rldse.workloads.timerl.program) in closed form at
the presets' values, PPO at each observation size and REINFORCE for each objective, with
and without swapping; and REINFORCE's iteration time at every band draw (a Latin
hypercube over every ranged preset number, rldse.sim.bands, with JAX's per-call dispatch
drawn over its sourced range). No simulation is planned: each is a few maxima. Beside
them, each configuration TimeRL runs (swapping enabled) is booked operation by operation
on a Machine once (``events``): the event run's iteration time against the closed form's,
and the Machine's busy time and energy, which the closed form does not give."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from rldse.models.gpu import GpuModel
from rldse.sim.bands import UncertainParam, design, sampled_spec, uncertain_params
from rldse.sim.machine import Machine
from rldse.studies.common import load_params
from rldse.studies.plan import Planned
from rldse.studies.timerl_memory.params import GB, Params, system_spec
from rldse.system import SystemSpec
from rldse.trace import Trace
from rldse.workloads import open_trace as load_trace
from rldse.workloads.timerl.program import (
    JAX_JIT_DISPATCH_RANGE_S,
    TempoShape,
    Work,
    closed_form,
    ppo,
    ppo_baseline_need,
    ppo_work,
    reinforce,
    reinforce_work,
    run,
    stream,
)


@dataclass(frozen=True)
class Collected:
    """What the report is built from: the study's parameters, the nominal machine's GPU
    model and host memory, the nominal rows and the band draws."""

    p: Params
    gpu: GpuModel
    host_capacity_bytes: int
    ppo: pd.DataFrame
    reinforce: pd.DataFrame
    band: pd.DataFrame  # REINFORCE iteration time (s) per band draw, a column per objective
    uncertain: int  # ranged preset numbers the bands draw over
    events: pd.DataFrame  # one iteration of each configuration booked on a Machine

    @property
    def shape(self) -> TempoShape:
        """REINFORCE's shapes."""
        return tempo_shape(self.p, self.p.reinforce.side, value_head=False)

    @property
    def tds(self) -> list[str]:
        """The n-step TD objectives' names."""
        return [name for name, n in objectives(self.p) if n is not None]


def plan(study_dir: Path) -> list[Planned]:
    """No simulations to price (rldse.studies.plan): the study evaluates TimeRL's program
    in closed form, at its presets and at its band draws, and books one iteration of each
    configuration on a Machine (seven, well under a second in all)."""
    return []


def tempo_shape(p: Params, side: int, value_head: bool) -> TempoShape:
    return TempoShape(p.envs, p.steps, side, tuple(p.hidden), value_head=value_head)


def objectives(p: Params) -> list[tuple[str, int | None]]:
    """REINFORCE's objectives by name: Monte-Carlo (None), then n-step TD for each n."""
    return [("Monte-Carlo", None)] + [(f"TD {n}-step", n) for n in p.reinforce.td_steps]


def collect(study_dir: Path, out: Path, progress: bool = True) -> Collected:
    """Every run, and results.csv (PPO's rows, then REINFORCE's) in ``out``."""
    p = load_params(study_dir, Params)
    trace = load_trace(study_dir / p.trace)
    spec = system_spec(p)
    m = Machine(trace, spec)
    gpu, host_cap = stream(m), m.host_memory_capacity
    ppo_df = _ppo_rows(p, gpu, host_cap)
    rl = _reinforce_rows(p, gpu)
    params = uncertain_params(spec, trace)
    band = _bands(p, trace, spec, params, int(gpu.spec.mem_bytes), progress)
    events = _event_rows(p, trace, spec)
    out.mkdir(parents=True, exist_ok=True)
    pd.concat([ppo_df.assign(part="ppo"), rl.assign(part="reinforce", side=p.reinforce.side)]) \
        .to_csv(out / "results.csv", index=False)
    events.to_csv(out / "events.csv", index=False)
    return Collected(p, gpu, host_cap, ppo_df, rl, band, len(params), events)


def _ppo_rows(p: Params, gpu: GpuModel, host_cap: int) -> pd.DataFrame:
    """PPO at each observation size, with and without swapping: the baselines' need
    against the GPU, what Tempo's program keeps there and in host memory, its times."""
    cap, rows = int(gpu.spec.mem_bytes), []
    for side in p.ppo.sides:
        sh = tempo_shape(p, side, value_head=True)
        for swap in (False, True):
            it = ppo(gpu, sh, swap, cap)
            rows.append({
                "side": side, "swap": swap, "obs_gb": sh.rollout_bytes / GB,
                "baseline_need_gb": ppo_baseline_need(sh) / GB, "capacity_gb": cap / GB,
                "baseline_fits": ppo_baseline_need(sh) <= cap,
                "resident_gb": it.resident_bytes / GB, "fits": it.resident_bytes <= cap,
                "swapped_gb": it.swapped_bytes / GB, "host_gb": it.host_bytes / GB,
                "host_capacity_gb": host_cap / GB, "host_ok": it.host_bytes <= host_cap,
                "act_s": it.act_s, "learn_s": it.learn_s, "iter_s": it.iter_s})
    return pd.DataFrame(rows)


def _reinforce_rows(p: Params, gpu: GpuModel) -> pd.DataFrame:
    """REINFORCE for each objective, with and without swapping: whether it runs (fits,
    or fits by swapping), its memory and its times."""
    cap, rows = int(gpu.spec.mem_bytes), []
    rsh = tempo_shape(p, p.reinforce.side, value_head=False)
    for name, n in objectives(p):
        for swap in (False, True):
            it = reinforce(gpu, rsh, n, swap, cap)
            rows.append({"objective": name, "swap": swap,
                         "need_gb": it.gpu_need_bytes / GB, "ok": it.gpu_need_bytes <= cap
                         or (swap and it.resident_bytes <= cap),
                         "resident_gb": it.resident_bytes / GB,
                         "swapped_gb": it.swapped_bytes / GB, "host_gb": it.host_bytes / GB,
                         "act_s": it.act_s, "learn_s": it.learn_s,
                         "copies_s": it.copies_s, "iter_s": it.iter_s})
    return pd.DataFrame(rows)


def _bands(p: Params, trace: Trace, spec: SystemSpec, params: list[UncertainParam],
           cap: int, progress: bool) -> pd.DataFrame:
    """REINFORCE's iteration time with swapping, per objective, at each band draw. JAX's
    per-call dispatch is not a preset number: drawn uniformly over its sourced range, one
    draw per band point, from the study's seed."""
    points = design(params, p.bands, p.seed)
    lo, hi = JAX_JIT_DISPATCH_RANGE_S
    dispatch_s = np.random.default_rng(p.seed).uniform(lo, hi, len(points))
    rsh = tempo_shape(p, p.reinforce.side, value_head=False)
    draws = []
    for row, d in tqdm(zip(points, dispatch_s, strict=True), total=len(points),
                       desc="timerl_memory bands", disable=None if progress else True, unit="draw"):
        g = stream(Machine(trace, sampled_spec(spec, trace, params, row)))
        draws.append({name: reinforce(g, rsh, n, True, cap, float(d)).iter_s
                      for name, n in objectives(p)})
    return pd.DataFrame(draws)


def _event_rows(p: Params, trace: Trace, spec: SystemSpec) -> pd.DataFrame:
    """One iteration of PPO at each size and of REINFORCE for each objective, swapping
    enabled (as TimeRL runs them), each on a fresh Machine (its own energy ledger) at the
    presets' values: the iteration as booked, the closed form's, and what the Machine
    accounts."""
    rows = []
    for side in p.ppo.sides:
        m, g, cap = _machine(trace, spec)
        w = ppo_work(g, tempo_shape(p, side, value_head=True), True, cap)
        rows.append({"part": "ppo", "side": side, "objective": "", **_booked(m, w)})
    rsh = tempo_shape(p, p.reinforce.side, value_head=False)
    for name, n in objectives(p):
        m, g, cap = _machine(trace, spec)
        w = reinforce_work(g, rsh, n, True, cap)
        rows.append({"part": "reinforce", "side": rsh.side, "objective": name,
                     **_booked(m, w)})
    return pd.DataFrame(rows)


def _machine(trace: Trace, spec: SystemSpec) -> tuple[Machine, GpuModel, int]:
    """A fresh Machine, its GPU model and the GPU's capacity in bytes."""
    m = Machine(trace, spec)
    g = stream(m)
    return m, g, int(g.spec.mem_bytes)


def _booked(m: Machine, w: Work) -> dict[str, float | bool]:
    """``w`` run once on ``m``: its time against the closed form's, the GPU's busy time
    (stream and copy engine) and the run's energy by device."""
    r = m.result(run(m, w))
    closed_s = closed_form(w).iter_s
    energy = {d.kind: d.energy_j for d in r.devices}
    gpu = next(d for d in r.devices if d.kind == "gpu")
    return {"swap": w.swap, "iter_s": r.sim_time_s, "closed_form_iter_s": closed_s,
            "relative_difference": r.sim_time_s / closed_s - 1,
            "gpu_busy_s": gpu.busy_s, "gpu_j": energy["gpu"], "cpu_j": energy["cpu"],
            "energy_j": r.energy_j, "avg_power_w": r.avg_power_w,
            "gpu_peak_gb": r.gpu_memory_peak_bytes / GB,
            "fits": r.checks.get("gpu_memory", True)}
