"""The study's runs: the learned runs (real, in Python; also the traces) and the simulated
time of the paper's program (SwiftRL's released kernel), rldse's split kernel (the what-if)
and the CPU and GPU baselines, at the presets' values and every band draw.

Every point runs at the presets' values (draw -1) and at ``scaling.bands`` draws of a Latin
hypercube (rldse.sim.bands) over every assumed number's range of the PIM system, the GPU
system (its on-chip latencies below instead of its L2 and DRAM ones) and the CPU baseline,
one joint design: draw i of PIM, GPU and CPU share the hypercube row, so ratios pair up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from rldse.errors import RldseError
from rldse.files import atomic_write
from rldse.models.presets import get_preset, load_part, make_model
from rldse.models.spec import Param
from rldse.sim import simulate
from rldse.sim.bands import UncertainParam, design, sampled_spec, uncertain_params
from rldse.studies import ckernel
from rldse.studies.ckernel import Measurement
from rldse.studies.common import load_params
from rldse.studies.plan import Planned
from rldse.studies.swiftrl_pim.data import EnvModel, data_stats, dataset
from rldse.studies.swiftrl_pim.params import (
    PAPER_ALGORITHM,
    PAPER_DTYPE,
    PAPER_KERNEL,
    WHAT_IF_KERNEL,
    Params,
)
from rldse.system import parse_spec
from rldse.trace import Trace
from rldse.workloads.common.base import CaptureConfig
from rldse.workloads.tabular.sizes import OFFLINE_TRANSITION_BYTES
from rldse.workloads.tabular.train import capture_dataset, greedy_policy

# ---- learning (real runs; also the traces) ------------------------------------------------

def _options(p: Params, passes: int, ppr: int = 1) -> dict:
    h = p.hyperparameters
    return {"alpha": h.alpha, "gamma": h.gamma, "epsilon": h.epsilon, "passes": passes,
            "passes_per_round": ppr}


def _learn(p: Params, data: pd.DataFrame, name: str, env_id: str, model: EnvModel,
           agents_list: list[int], traced: int, passes: int, ppr: int, bar,
           part: str) -> tuple[pd.DataFrame, dict, dict]:
    """Every algorithm × dtype × agents: the learned table's greedy policy, evaluated.
    Returns rows, the traces of the runs with ``traced`` agents (what the twin replays)
    by (algorithm, dtype, passes per round), and the tables by (algorithm, agents, ppr)."""
    rows, traces, policies = [], {}, {}
    for algorithm in p.algorithms:
        for agents in agents_list:
            q = {}
            for dtype in p.dtypes:
                cfg = CaptureConfig(workload="tabular", env_id=env_id, dataset=name,
                                    agents=agents, dtype=dtype, seed=p.data.seed,
                                    options=_options(p, passes, ppr))
                trace, run = capture_dataset(cfg, data, algorithm)
                if agents == traced:
                    traces[algorithm, dtype, ppr] = trace
                q[dtype] = run.q
                success, ret = model.evaluate(greedy_policy(run.q))
                rows.append({"part": part, "env": env_id, "algorithm": algorithm,
                             "dtype": dtype, "agents": agents, "transitions": len(data),
                             "passes": passes, "passes_per_round": ppr,
                             "success_rate": success, "expected_return": ret,
                             "int32_scale_bits": run.scale_bits})
                bar.update()
            policies[algorithm, agents, ppr] = q
            rows[-1]["agree_states"] = rows[-2]["agree_states"] = _agreement(q, model)
    return pd.DataFrame(rows), traces, policies


def _agreement(q: dict, model: EnvModel) -> str:
    """Where the INT32 and FP32 greedy policies choose the same action, over the states
    the policy can act in (non-terminal states: some action does not end the episode)."""
    live = ~model.term.all(axis=(1, 2))
    same = greedy_policy(q["int32"]) == greedy_policy(q["fp32"])
    return f"{int(same[live].sum())}/{int(live.sum())}"


def _disagreement_reason(q: dict, model: EnvModel, scale_bits: int) -> str:
    """Why INT32 and FP32 pick different actions: the FP32 row's values that decide the
    argmax lie below the INT32 resolution 2^-B and round to 0 (ties go to action 0)."""
    live = ~model.term.all(axis=(1, 2))
    diff = (greedy_policy(q["int32"]) != greedy_policy(q["fp32"])) & live
    if not diff.any():
        return ""
    res = 2.0 ** -scale_bits
    fp = np.asarray(q["fp32"], np.float64)
    spread = fp.max(axis=1) - np.sort(fp, axis=1)[:, -2]
    tiny = diff & (np.abs(fp).max(axis=1) < 64 * res)
    close = diff & (spread < res)
    return (f"{int(diff.sum())} state(s) differ; in {int(tiny.sum())} of them every FP32 "
            f"value is below 64 INT32 steps (2^-{scale_bits} = {res:.1e} each), in "
            f"{int(close.sum())} the FP32 best and second-best differ by less than one step")


# ---- time (simulated, banded) ----------------------------------------------------------------

#: SwiftRL's GPU baseline keeps each agent's table (FrozenLake 256 B, Taxi 12 KB) in on-chip
#: memory (shared memory / L1), so the Q loads on an update's chain are on-chip hits.
GPU_ONCHIP_LATENCY = Param(20.0, "ns", "A100 shared-memory / L1-hit load latency: about "
                           "23-33 cycles at the 1,410 MHz boost clock (Abdelkhalik et al., "
                           "'Demystifying the Nvidia Ampere Architecture through "
                           "Microbenchmarking', arXiv 2208.11174; Volta: 19-28 cycles, Jia et "
                           "al., arXiv 1804.06826); recalled, UNVERIFIED", (13.0, 30.0))
#: A thread reads its transitions in order: one 128-B line holds 8 transitions of 16 B, so
#: one load in 8 misses to device memory and the others hit the line in L1 (CUDA C++
#: Programming Guide: 128-byte L1 lines).
TRANSITIONS_PER_LINE = 8
CPU_BASELINE_BYTES = 8  # the compiled baseline's table: double precision, as SwiftRL's C code
#: results.csv's ``kernel`` of the baselines' rows (PIM rows: PAPER_KERNEL or WHAT_IF_KERNEL)
BASELINE_PROGRAMS = {"cpu": "compiled loop", "gpu": "thread per agent"}


def _spec_raw(p: Params, device: str, workload: dict) -> dict:
    s = p.scaling
    if device == "pim":
        raw = {"cpu": s.pim_host, "pim": {"preset": s.pim}, "placement": {"q_update": "pim"}}
    else:
        raw = {"cpu": {"preset": s.cpu}, "gpu": {"preset": s.gpu},
               "placement": {"q_update": "gpu"}}
    return {"name": f"swiftrl-{device}", **raw, "workload": workload}


def _onchip(path: str, values: dict[str, float]) -> dict[str, float]:
    """The GPU's latencies as SwiftRL's kernel sees them: the table load at the on-chip
    latency (``gpu.l2_latency_ns`` of the twin), the transition load at the on-chip
    latency but for one line fill from device memory per TRANSITIONS_PER_LINE."""
    on, dram = values[f"{path}.l2_latency_ns"], values[f"{path}.mem_latency_ns"]
    return {f"{path}.l2_latency_ns": on,
            f"{path}.mem_latency_ns": on + (dram - on) / TRANSITIONS_PER_LINE}


class Design:
    """The joint hypercube over the PIM system's, the GPU system's and the CPU baseline's
    assumed numbers; ``values(i)`` is draw i (-1: the presets' values) by device."""

    def __init__(self, p: Params, trace: Trace) -> None:
        w = {"transitions": 1000, "agents": 1}
        self.trace = trace
        self.params: dict[str, list[UncertainParam]] = {}
        for device in ("pim", "gpu"):
            spec = parse_spec(_spec_raw(p, device, w), where="swiftrl_pim")
            params = uncertain_params(spec, trace)
            if device == "gpu":  # the on-chip latency replaces the L2 one
                params = [UncertainParam("gpu.l2_latency_ns", "study: on-chip",
                                         *GPU_ONCHIP_LATENCY.range, GPU_ONCHIP_LATENCY.value,
                                         False, GPU_ONCHIP_LATENCY.source)
                          if q.path == "gpu.l2_latency_ns" else q for q in params]
            self.params[device] = params
        cpu = get_preset("cpu", p.scaling.cpu)
        self.params["cpu"] = [
            UncertainParam(f"cpu.{f}", p.scaling.cpu, *cpu.params[f].range,
                           cpu.params[f].value, False, cpu.params[f].source)
            for f in ("clock_mhz", "ipc_factor") if cpu.params[f].range]
        joint = [q for v in self.params.values() for q in v]
        self.points = design(joint, p.scaling.bands, p.scaling.bands_seed)

    def values(self, i: int) -> dict[str, dict[str, float]]:
        out, col = {}, 0
        for device, params in self.params.items():
            row = (np.array([q.nominal for q in params]) if i < 0
                   else self.points[i, col:col + len(params)])
            col += len(params)
            vals = {q.path: float(v) for q, v in zip(params, row, strict=True)}
            if device == "gpu":
                vals.update(_onchip("gpu", vals))
            out[device] = vals
        return out

    def spec(self, p: Params, device: str, workload: dict, i: int):
        raw = _spec_raw(p, device, workload)
        params = self.params[device]
        vals = self.values(i)[device]
        row = np.array([vals[q.path] for q in params])
        return sampled_spec(parse_spec(raw, where="swiftrl_pim"), self.trace, params, row)


def _draws(p: Params) -> list[int]:
    return [-1, *range(p.scaling.bands)]


def _cpu_baseline(p: Params, trace: Trace, d: Design, i: int, cpu_ns: Measurement,
                  agents: int, passes: int, ppr: int, transitions: int) -> dict:
    """SwiftRL's CPU baseline: the compiled single-threaded loop (``rldse.studies.ckernel``,
    stored measurements) scaled to ``scaling.cpu`` by its part model (clock × IPC), every update
    one after another, plus the host's average of the agents' tables after each round (a
    roofline on the same core, double-precision tables)."""
    vals = {k.split(".", 1)[1]: v for k, v in d.values(i)["cpu"].items()}
    spec = load_part("cpu", p.scaling.cpu, **vals)
    host = trace.meta.host.model_copy(update={"clock_mhz": cpu_ns.host_clock_mhz})
    cm = make_model(spec, capture_host=host)
    info = trace.meta.workload_info
    cells = int(info["n_states"]) * int(info["n_actions"])
    updates = transitions * passes
    update_s = updates * cpu_ns.best_ns * 1e-9 * cm.interp_scale
    average_s = (passes // ppr) * float(cm.roofline_seconds(
        (agents + 1) * cells, CPU_BASELINE_BYTES * cells * (agents + 1))) if agents > 1 else 0.0
    total = update_s + average_s
    return {"device": "cpu", "kernel": BASELINE_PROGRAMS["cpu"], "draw": i, "agents": agents,
            "passes": passes,
            "transitions": transitions, "total_s": total,
            "energy_j": float(cm.energy(total, total).joules),
            "avg_power_w": float(cm.energy(total, total).joules) / total,
            "updates_per_s": updates / total, "q_update_s": update_s, "aggregate_s": average_s}


def _simulate_point(p: Params, d: Design, trace: Trace, device: str, i: int, agents: int,
                    passes: int, transitions: int, dtype: str,
                    kernel: str = WHAT_IF_KERNEL) -> dict:
    """One simulated point; on PIM ``kernel`` picks the program (the released kernel's
    number format is its own: no ``dtype``)."""
    workload = {"transitions": transitions, "agents": agents, "passes": passes}
    if device == "pim":
        workload["pim_kernel"] = kernel
    if device != "pim" or kernel != PAPER_KERNEL:
        workload["dtype"] = dtype
    r = simulate(trace, d.spec(p, device, workload, i), seed=0)
    return {"device": device, "kernel": kernel if device == "pim" else BASELINE_PROGRAMS[device],
            "draw": i, "agents": agents, "passes": passes,
            "transitions": transitions, "total_s": r.sim_time_s, "energy_j": r.energy_j,
            "avg_power_w": r.avg_power_w, "updates_per_s": r.updates_per_s, **r.breakdown_s}


def _runs_released(algorithm: str, dtype: str) -> bool:
    """Whether a trace also times the paper's program: the released kernel is Q-learning
    with its own number format, so one trace per run (the INT32 one) stands for it."""
    return algorithm == PAPER_ALGORITHM and dtype == "int32"


def _timing(p: Params, traces: dict, env_id: str, cpu_ns: dict, bar) -> pd.DataFrame:
    s, rows = p.scaling, []
    for (algorithm, dtype, ppr), trace in traces.items():
        d = Design(p, trace)
        for passes in s.passes:
            for dpus in s.dpus:
                for i in _draws(p):
                    key = {"part": "scaling", "env": env_id, "algorithm": algorithm,
                           "dtype": dtype, "dpus": dpus}
                    for device in ("pim", "gpu"):
                        rows.append({**key, **_simulate_point(p, d, trace, device, i, dpus,
                                                              passes, s.transitions, dtype)})
                    rows.append({**key, **_cpu_baseline(p, trace, d, i, cpu_ns[algorithm],
                                                        dpus, passes, ppr, s.transitions)})
                    if _runs_released(algorithm, dtype):
                        rows.append({**key, "dtype": PAPER_DTYPE, **_simulate_point(
                            p, d, trace, "pim", i, dpus, passes, s.transitions, dtype,
                            PAPER_KERNEL)})
                bar.update()
    return pd.DataFrame(rows)


def _multi_timing(p: Params, traces: dict, transitions: int, cpu_ns: Measurement
                  ) -> pd.DataFrame:
    """SwiftRL's multi-agent reference: every agent learns over all ``transitions`` (its own
    copy on its DPU; the GPU's threads share one copy), ``passes`` passes each. The released
    kernel runs every pass in one launch and averages once (passes_per_round = passes)."""
    ma, rows = p.multi_agent, []
    total = ma.agents * transitions  # each agent's chunk is the whole dataset
    released = False
    for (algorithm, dtype, ppr), trace in traces.items():
        d = Design(p, trace)
        for i in _draws(p):
            key = {"part": "multi_agent", "env": ma.env, "algorithm": algorithm,
                   "dtype": dtype, "dpus": ma.agents, "passes_per_round": ppr}
            for device in ("pim", "gpu"):
                row = _simulate_point(p, d, trace, device, i, ma.agents, ma.passes, total,
                                      dtype)
                if device == "gpu":  # one copy of the dataset, not one per agent
                    gm = make_model(load_part("gpu", p.scaling.gpu, **{
                        k.split(".", 1)[1]: v for k, v in d.values(i)["gpu"].items()
                        if k.startswith("gpu.")}))
                    one = float(gm.copy_times(transitions * OFFLINE_TRANSITION_BYTES).wall_s)
                    row["total_s"] -= row["h2d_s"] - one
                    row["h2d_s"] = one
                rows.append({**key, **row})
            rows.append({**key, **_cpu_baseline(p, trace, d, i, cpu_ns, ma.agents, ma.passes,
                                                ppr, total)})
            if _runs_released(algorithm, dtype) and not released:
                rows.append({**key, "dtype": PAPER_DTYPE, "passes_per_round": ma.passes,
                             **_simulate_point(p, d, trace, "pim", i, ma.agents, ma.passes,
                                               total, dtype, PAPER_KERNEL)})
        released = released or _runs_released(algorithm, dtype)
    return pd.DataFrame(rows)


# ---- the runs together -------------------------------------------------------------------------

@dataclass(frozen=True)
class Runs:
    """What the runs produced, for the report: every simulated point (``res``: results.csv)
    and learned run (``learn``: learning.csv), the optimal policy's success per env, why
    INT32 and FP32 policies differ, the datasets' statistics and the stored CPU baseline
    measurements by (dataset, algorithm)."""

    params: Params
    res: pd.DataFrame
    learn: pd.DataFrame
    optimal: dict
    reasons: list
    datasets: pd.DataFrame
    measured: dict


def _counts(p: Params) -> tuple[int, int]:
    """(real learning runs, simulated points) the study makes."""
    s, lr, ma = p.scaling, p.learning, p.multi_agent
    n_learn = len(p.envs) * len(p.algorithms) * 2 * (1 + len(lr.dpus)) \
        + len(p.algorithms) * 2 * len(ma.passes_per_round)
    return n_learn, len(p.envs) * len(p.algorithms) * 2 * len(s.passes) * len(s.dpus)


#: updates a probe of an offline learning run asks for (passes over the probed dataset):
#: at the ~0.8 µs per update measured on the development host, past the probe's CPU time
PROBE_UPDATES = 4_000_000


def _learning_cost(study_dir: Path, p: Params, passes: int | None, updates: int | None):
    """The costliest (algorithm, dtype) learning run of ``updates`` updates (None: the first
    env's dataset × ``passes``), from a probe on that dataset with one agent
    (rldse.sim.run_cost.priced): the agents' own overhead is not in it (at 2,000
    agents of 1M transitions it added about a third on the development host)."""
    import math

    from rldse.sim.run_cost import priced

    env_id = p.envs[0]
    data, name = dataset(study_dir, p.data.files.get(env_id), EnvModel(env_id),
                         p.data.transitions, p.data.seed)
    probe_passes = max(1, math.ceil(PROBE_UPDATES / len(data)))
    costs = []
    for algorithm in p.algorithms:
        for dtype in p.dtypes:
            cfg = CaptureConfig(workload="tabular", env_id=env_id, dataset=name, agents=1,
                                dtype=dtype, seed=p.data.seed,
                                options=_options(p, probe_passes))
            costs.append(priced(f"swiftrl_pim {algorithm} {cfg.model_dump_json()}",
                                lambda progress, c=cfg, a=algorithm:
                                capture_dataset(c, data, a, progress),
                                len(data) * probe_passes, 0,
                                updates if updates is not None else len(data) * passes))
    return max(costs, key=lambda c: c.wall_s)


def plan(study_dir: Path) -> list[Planned]:
    """The study's work, for its up-front estimate (rldse.studies.plan): real learning
    runs, priced at the costliest algorithm and number format (`_learning_cost`), and
    simulations of the traces they write, which cannot be priced before they run."""
    from functools import partial

    p = load_params(study_dir, Params)
    lr, ma = p.learning, p.multi_agent
    n_learn, n_sim = _counts(p)
    n_multi = len(p.algorithms) * 2 * len(ma.passes_per_round)
    return [Planned(f"real tabular learning runs of {lr.passes} pass(es) over a dataset",
                    n_learn - n_multi, learning=partial(_learning_cost, study_dir, p,
                                                        lr.passes, None)),
            Planned(f"multi-agent learning runs of {ma.transitions * ma.passes:,} updates",
                    n_multi, learning=partial(_learning_cost, study_dir, p, None,
                                              ma.transitions * ma.passes)),
            Planned("simulated points of the traces they write", n_sim)]


def collect(study_dir: Path, out: Path, progress: bool = True) -> Runs:
    """Run every learned and simulated point; write results.csv and learning.csv in out."""
    p = load_params(study_dir, Params)
    s, lr, ma = p.scaling, p.learning, p.multi_agent
    pim_spec = load_part("pim", s.pim)
    if s.dpus[-1] > pim_spec.dpus or ma.agents > pim_spec.dpus:
        raise RldseError(f"{study_dir / 'study.yaml'}: scaling.dpus / multi_agent.agents: "
                         f"{max(s.dpus[-1], ma.agents)} DPUs, but {s.pim} has {pim_spec.dpus}")
    agents_list = [1, *lr.dpus]
    n_learn, n_sim = _counts(p)
    learn_rows, time_rows, datasets, optimal, reasons, measured = [], [], [], {}, [], {}
    with tqdm(total=n_learn + n_sim, desc="swiftrl_pim", disable=None if progress else True,
              unit="run") as bar:
        for env_id in p.envs:
            model = EnvModel(env_id)
            data, name = dataset(study_dir, p.data.files.get(env_id), model,
                                  p.data.transitions, p.data.seed)
            datasets.append(data_stats(env_id, name, data))
            optimal[env_id] = model.evaluate(model.optimal_policy(p.hyperparameters.gamma))[0]
            rows, traces, tables = _learn(p, data, name, env_id, model, agents_list,
                                          lr.dpus[0], lr.passes, 1, bar, "scaling")
            learn_rows.append(rows)
            reasons += _reasons(tables, rows, model, env_id, "")
            cpu_ns = {a: ckernel.stored(f"{env_id}/{a}") for a in p.algorithms}
            measured.update({(env_id, a): m for a, m in cpu_ns.items()})
            time_rows.append(_timing(p, traces, env_id, cpu_ns, bar))
        model = EnvModel(ma.env)
        if ma.env not in optimal:
            optimal[ma.env] = model.evaluate(model.optimal_policy(p.hyperparameters.gamma))[0]
        data, name = dataset(study_dir, ma.file, model, ma.transitions, p.data.seed + 1)
        datasets.append(data_stats(ma.env, name, data))
        multi_traces = {}
        for ppr in ma.passes_per_round:
            # every agent learns from the whole dataset from the same zero table: one agent's
            # run is each agent's (Q-learning: all equal, so also their average)
            rows, traces, tables = _learn(p, data, name, ma.env, model, [1], 1, ma.passes,
                                          ppr, bar, "multi_agent")
            learn_rows.append(rows)
            reasons += _reasons(tables, rows, model, ma.env,
                                f"multi-agent, {ppr} pass(es) per round")
            multi_traces.update(traces)
        ma_ns = ckernel.stored(f"{ma.env} multi-agent/{p.algorithms[0]}")
        measured[f"{ma.env} multi-agent", p.algorithms[0]] = ma_ns
        time_rows.append(_multi_timing(p, multi_traces, len(data), ma_ns))
    learn = pd.concat(learn_rows, ignore_index=True)
    res = pd.concat(time_rows, ignore_index=True)

    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "results.csv", lambda tmp: res.to_csv(tmp, index=False))
    atomic_write(out / "learning.csv", lambda tmp: learn.to_csv(tmp, index=False))
    return Runs(p, res, learn, optimal, reasons, pd.DataFrame(datasets), measured)


def _measure_cpu(p: Params, cache: Path, key: str, algorithm: str, data: pd.DataFrame,
                 model: EnvModel, host_mhz: float) -> Measurement:
    """The compiled baseline's ns per update on ``data`` (SARSA: its a' drawn ε-greedily,
    as the learned runs draw them)."""
    next_a = None
    if algorithm == "sarsa":
        rng = np.random.default_rng([p.data.seed, 0])
        explore = rng.random(len(data)) < p.hyperparameters.epsilon
        next_a = np.where(explore, rng.integers(model.n_actions, size=len(data)), -1)
    return ckernel.measure(cache, f"{key}/{algorithm}", data, model.n_states,
                           model.n_actions, alpha=p.hyperparameters.alpha,
                           gamma=p.hyperparameters.gamma, host_clock_mhz=host_mhz,
                           next_a=next_a)


def measure_cpu_baselines(study_dir: Path, cache: Path) -> dict:
    """Time the compiled CPU baseline on every dataset the study reads (the study itself
    times nothing): measurements.json's content, with its provenance (host, clock,
    compiler, flags, UTC date). benchmarks/external/swiftrl_cpu_baseline.py stores it."""
    import datetime

    from rldse.host import measure as measure_host

    p = load_params(study_dir, Params)
    host = measure_host()
    jobs = []
    for env_id in p.envs:
        model = EnvModel(env_id)
        data, _ = dataset(study_dir, p.data.files.get(env_id), model, p.data.transitions,
                           p.data.seed)
        jobs += [(env_id, a, data, model) for a in p.algorithms]
    ma = p.multi_agent
    model = EnvModel(ma.env)
    data, _ = dataset(study_dir, ma.file, model, ma.transitions, p.data.seed + 1)
    jobs.append((f"{ma.env} multi-agent", p.algorithms[0], data, model))
    measured = {f"{key}/{a}": _measure_cpu(p, cache, key, a, data, model, host.clock_mhz)
                for key, a, data, model in jobs}
    first = next(iter(measured.values()))
    return {"host": f"{host.cpu_model}, {host.cores} CPUs",
            "compiler": ckernel.compiler_version(), "flags": " ".join(ckernel.FLAGS),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "how": f"benchmarks/external/swiftrl_cpu_baseline.py ({first.source})",
            "host_clock_mhz": host.clock_mhz,
            "ns_per_update": {k: list(m.ns_per_update) for k, m in measured.items()}}


def _reasons(tables: dict, rows: pd.DataFrame, model: EnvModel, env_id: str,
             where: str) -> list[str]:
    out = []
    for (algorithm, agents, _), q in tables.items():
        bits = rows[(rows.algorithm == algorithm) & (rows.agents == agents)
                    & (rows["dtype"] == "int32")].int32_scale_bits.iloc[0]
        why = _disagreement_reason(q, model, int(bits))
        if why:
            label = "1 agent" if agents == 1 else f"{agents} agents"
            out.append(f"{env_id}, {algorithm}, {label}{', ' + where if where else ''}: {why}")
    return out

