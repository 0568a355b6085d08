"""SwiftRL (Gogineni et al., ISPASS 2024, arXiv 2405.03967): offline tabular Q-learning and
SARSA on UPMEM processing-in-memory, the experience dataset split over DPUs.

Data: per environment, a dataset of transitions from a uniform-random behaviour policy,
generated at study time from the Gymnasium env's own transition model (seeded; as
SwiftRL's published datasets are made), or SwiftRL's files when study.yaml names them.

Part 1 (learning, real): ``tabular.train_offline`` runs SwiftRL's scheme for real (each
agent learns over its contiguous chunk, the host averages the tables) in INT32 fixed point
and FP32, for one agent over the whole dataset and for the DPU counts of
``learning.dpus``; each greedy policy is evaluated exactly (its success probability and
expected return within the env's time limit, from the transition model) and set beside
the optimal policy's. These runs are also the captures (traces) of part 2.

Part 2 (time, simulated): ``tabular.program`` replays the traces on upmem-p21 for every
DPU count of ``scaling.dpus``, INT32 and FP32 kernels, with SwiftRL's time split (CPU→DPU,
kernel, inter-DPU, DPU→CPU), and on an 8-core xeon-silver-4110 and an a100-40g with as
many agents (the same computation). Part 3: SwiftRL's multi-agent reference (1,000 agents
× 10 passes × 10k FrozenLake transitions, tables averaged on the host), learned and timed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullLocator
from pydantic import BaseModel, ConfigDict, Field, model_validator
from tqdm import tqdm

from rldse.errors import RldseError
from rldse.models.registry import load_part
from rldse.sim import simulate
from rldse.studies.common import load_params, save_figure
from rldse.studies.report import Claim, Report, markdown_table, pct
from rldse.system import parse_spec
from rldse.trace import Trace
from rldse.workloads.common.base import CaptureConfig
from rldse.workloads.tabular.swiftrl_format import read_swiftrl
from rldse.workloads.tabular.train import (
    EVAL_MAX_STEPS,
    TABULAR_ENVS,
    capture_dataset,
    greedy_policy,
)

#: Behaviour streams generated side by side; stream i fills rows [i·n/STREAMS, (i+1)·n/STREAMS)
#: of the dataset, so every agent's contiguous chunk is in-order experience, as in a file
#: written by one sequential generator.
STREAMS = 100
SPLIT = ("cpu_to_dpu_s", "kernel_s", "inter_dpu_s", "dpu_to_cpu_s")
SPLIT_LABELS = ("CPU→DPU", "DPU kernel", "inter-DPU (via host)", "DPU→CPU")
#: What-if only (not a twin): cycles of one compiled Q-learning update on a CPU core, a
#: chain of two dependent L1 loads (≈5 cycles each on Skylake-SP) and ≈10 ALU/branch ops.
COMPILED_CYCLES_PER_UPDATE = 20


class Data(BaseModel):
    model_config = ConfigDict(extra="forbid")
    transitions: int = Field(ge=1000, description="generated transitions per env")
    seed: int = 0
    files: dict[str, str] = Field(default_factory=dict,
                                  description="env id -> SwiftRL-format file used instead")


class Hyper(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(gt=0, le=1)
    gamma: float = Field(ge=0, lt=1)
    epsilon: float = Field(ge=0, le=1, description="offline SARSA: the ε of a'")


class Scaling(BaseModel):
    model_config = ConfigDict(extra="forbid")
    transitions: int = Field(ge=1, description="simulated dataset size")
    dpus: list[int]
    passes: list[int] = Field(description="rounds: each a pass over every chunk, then the "
                                          "host's average")
    pim: str
    pim_host: dict
    cpu: str
    cpu_cores: int
    gpu: str

    @model_validator(mode="after")
    def _sorted(self) -> Scaling:
        if self.dpus != sorted(set(self.dpus)) or len(self.dpus) < 2:
            raise ValueError("dpus must be at least two increasing DPU counts")
        return self


class Learning(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dpus: list[int] = Field(min_length=1, description="agents (one per DPU) of the learned "
                                                       "runs; the first one's runs are traced")
    passes: int = Field(ge=1)


class MultiAgent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    env: str
    transitions: int = Field(ge=1, description="generated transitions (or the file's)")
    file: str | None = Field(default=None, description="SwiftRL-format file used instead")
    agents: int
    passes: int
    passes_per_round: list[int] = Field(min_length=1)


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")
    near_linear_min: float = Field(description="kernel speedup, smallest to largest DPU "
                                               "count, that counts as near-linear")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    envs: list[str]
    algorithms: list[Literal["q_learning", "sarsa"]]
    dtypes: list[Literal["int32", "fp32"]]
    data: Data
    hyperparameters: Hyper
    learning: Learning
    scaling: Scaling
    multi_agent: MultiAgent
    published: Published

    @model_validator(mode="after")
    def _check(self) -> Params:
        for env in [*self.envs, self.multi_agent.env, *self.data.files]:
            if env not in TABULAR_ENVS:
                raise ValueError(f"'{env}' is not a tabular env ({', '.join(TABULAR_ENVS)})")
        if sorted(self.dtypes) != ["fp32", "int32"]:
            raise ValueError("dtypes must be [int32, fp32]: the study compares them")
        for ppr in self.multi_agent.passes_per_round:
            if self.multi_agent.passes % ppr:
                raise ValueError(f"multi_agent.passes must be a multiple of {ppr}")
        return self


# ---- the env's transition model: data generation and exact evaluation --------------------

class EnvModel:
    """Gymnasium's tabular model of an env as arrays (outcomes padded to K per (s, a))."""

    def __init__(self, env_id: str) -> None:
        env = gym.make(env_id)
        u = env.unwrapped
        self.env_id = env_id
        self.n_states, self.n_actions = int(env.observation_space.n), int(env.action_space.n)
        self.horizon = env.spec.max_episode_steps or EVAL_MAX_STEPS
        self.init = np.asarray(u.initial_state_distrib, np.float64)
        k = max(len(u.P[s][a]) for s in range(self.n_states) for a in range(self.n_actions))
        shape = (self.n_states, self.n_actions, k)
        self.prob, self.reward = np.zeros(shape), np.zeros(shape)
        self.next, self.term = np.zeros(shape, np.int64), np.zeros(shape, bool)
        for s in range(self.n_states):
            for a in range(self.n_actions):
                for i, (p, sp, r, done) in enumerate(u.P[s][a]):
                    self.prob[s, a, i], self.next[s, a, i] = p, sp
                    self.reward[s, a, i], self.term[s, a, i] = r, done
        # success = terminating at the goal: FrozenLake also terminates in holes (reward 0)
        frozen = env_id.startswith("FrozenLake")
        self.success = self.term & ((self.reward > 0) | (not frozen))

    def generate(self, n: int, seed: int) -> pd.DataFrame:
        """n transitions of the uniform-random policy, episodes cut at the time limit (the
        cut transition is kept; the next row starts a new episode), in STREAMS streams."""
        rng = np.random.default_rng(seed)
        m = min(STREAMS, n)
        length = -(-n // m)
        cum = np.cumsum(self.prob, axis=2)
        cum[..., -1] = 1.0
        out = np.zeros((4, m, length), np.int64)
        rew = np.zeros((m, length))
        s = rng.choice(self.n_states, size=m, p=self.init)
        t_ep = np.zeros(m, np.int64)
        for t in range(length):
            a = rng.integers(self.n_actions, size=m)
            k = (rng.random(m)[:, None] > cum[s, a]).sum(axis=1)
            sp, r, done = self.next[s, a, k], self.reward[s, a, k], self.term[s, a, k]
            out[0, :, t], out[1, :, t], out[3, :, t], rew[:, t] = s, a, sp, r
            t_ep += 1
            reset = done | (t_ep >= self.horizon)
            s = np.where(reset, rng.choice(self.n_states, size=m, p=self.init), sp)
            t_ep[reset] = 0
        flat = out.reshape(4, -1)[:, :n]
        return pd.DataFrame({"state": flat[0].astype(np.int32),
                             "action": flat[1].astype(np.int32),
                             "reward": rew.reshape(-1)[:n].astype(np.float32),
                             "next_state": flat[3].astype(np.int32)})

    def evaluate(self, policy: np.ndarray) -> tuple[float, float]:
        """(success probability, expected return) of a deterministic policy from the
        initial distribution within the time limit: exact, no sampling."""
        idx = np.arange(self.n_states)
        p, sp = self.prob[idx, policy], self.next[idx, policy]
        r, term, win = self.reward[idx, policy], self.term[idx, policy], self.success[idx, policy]
        d, success, ret = self.init.copy(), 0.0, 0.0
        for _ in range(self.horizon):
            mass = d[:, None] * p
            success += float(mass[win].sum())
            ret += float((mass * r).sum())
            d = np.bincount(sp[~term], weights=mass[~term], minlength=self.n_states)
        return success, ret

    def optimal_policy(self, gamma: float, tol: float = 1e-10) -> np.ndarray:
        """Value iteration at the study's discount (terminal outcomes end the sum)."""
        v = np.zeros(self.n_states)
        for _ in range(100_000):
            q = (self.prob * (self.reward + gamma * v[self.next] * ~self.term)).sum(axis=2)
            new = q.max(axis=1)
            if np.abs(new - v).max() < tol:
                break
            v = new
        return greedy_policy(q)


def _dataset(study_dir: Path, file: str | None, model: EnvModel, n: int,
             seed: int) -> tuple[pd.DataFrame, str]:
    """SwiftRL's file when one is named (relative paths from the study folder), else n
    generated transitions."""
    if file:
        path = Path(file).expanduser()
        path = path if path.is_absolute() else study_dir / path
        return read_swiftrl(path), path.name
    return model.generate(n, seed), f"{model.env_id.split('-')[0]}_random_{n}_seed{seed}"


# ---- part 1: learning (real runs; also the traces) -----------------------------------------

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
                             "int32_scale_bits": run.scale_bits,
                             "capture_wall_s": trace.meta.wall_time_s})
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


# ---- part 2: time (simulated) ---------------------------------------------------------------

def _spec(p: Params, device: str, workload: dict):
    s = p.scaling
    if device == "pim":
        raw = {"cpu": s.pim_host, "pim": {"preset": s.pim}, "placement": {"q_update": "pim"}}
    elif device == "gpu":
        raw = {"cpu": {"preset": s.cpu, "cores": s.cpu_cores}, "gpu": {"preset": s.gpu},
               "placement": {"q_update": "gpu"}}
    else:
        raw = {"cpu": {"preset": s.cpu, "cores": s.cpu_cores}}
        workload = {**workload, "cores": s.cpu_cores}
    return parse_spec({"name": f"swiftrl-{device}", **raw, "workload": workload},
                      where="swiftrl_pim")


def _simulate_point(p: Params, trace: Trace, device: str, agents: int, passes: int,
                    transitions: int, dtype: str) -> dict:
    r = simulate(trace, _spec(p, device, {"transitions": transitions, "agents": agents,
                                          "passes": passes, "dtype": dtype}), seed=0)
    return {"device": device, "agents": agents, "passes": passes, "transitions": transitions,
            "total_s": r.sim_time_s, "energy_j": r.energy_j, "avg_power_w": r.avg_power_w,
            "updates_per_s": r.updates_per_s, **r.breakdown_s}


def _timing(p: Params, traces: dict, env_id: str, bar) -> pd.DataFrame:
    s, rows = p.scaling, []
    for (algorithm, dtype, _), trace in traces.items():
        for passes in s.passes:
            for dpus in s.dpus:
                for device in ("pim", "cpu", "gpu"):
                    rows.append({"part": "scaling", "env": env_id, "algorithm": algorithm,
                                 "dtype": dtype, "dpus": dpus,
                                 **_simulate_point(p, trace, device, dpus, passes,
                                                   s.transitions, dtype)})
                bar.update()
    return pd.DataFrame(rows)


def _multi_timing(p: Params, traces: dict, transitions: int) -> pd.DataFrame:
    ma, rows = p.multi_agent, []
    for (algorithm, dtype, ppr), trace in traces.items():
        for device in ("pim", "cpu", "gpu"):
            rows.append({"part": "multi_agent", "env": ma.env, "algorithm": algorithm,
                         "dtype": dtype, "dpus": ma.agents, "passes_per_round": ppr,
                         **_simulate_point(p, trace, device, ma.agents, ma.passes,
                                           transitions, dtype)})
    return pd.DataFrame(rows)


# ---- analysis -------------------------------------------------------------------------------

def _scaling_table(res: pd.DataFrame, dpus: list[int]) -> pd.DataFrame:
    """Per env × algorithm × dtype × passes: kernel and total speedup, smallest to largest
    DPU count, and where the total stops scaling."""
    pim = res[res.device == "pim"]
    lo, hi = dpus[0], dpus[-1]
    rows = []
    for key, g in pim.groupby(["env", "algorithm", "dtype", "passes"]):
        g = g.set_index("dpus").sort_index()
        rows.append({"env": key[0], "algorithm": key[1], "dtype": key[2], "passes": key[3],
                     "kernel_speedup": g.kernel_s[lo] / g.kernel_s[hi],
                     "total_speedup": g.total_s[lo] / g.total_s[hi], "ideal": hi / lo,
                     f"kernel_share_{lo}": g.kernel_s[lo] / g.total_s[lo],
                     f"kernel_share_{hi}": g.kernel_s[hi] / g.total_s[hi],
                     "fastest_total_at": int(g.total_s.idxmin()),
                     "total_stops_scaling": _knee(g, dpus)})
    return pd.DataFrame(rows)


def _knee(g: pd.DataFrame, dpus: list[int]) -> str:
    """The first step between DPU counts where the total gains less than 80 % of the
    step's ideal, and the non-kernel part that is largest there."""
    for a, b in zip(dpus, dpus[1:], strict=False):
        gain = g.total_s[a] / g.total_s[b]
        if gain < 0.8 * b / a:
            parts = {name: g[col][b] for col, name in zip(SPLIT, SPLIT_LABELS, strict=True)
                     if col != "kernel_s"}
            worst = max(parts, key=parts.get)
            return (f"{a}→{b}: total {gain:.2f}x for {b / a:.0f}x DPUs; {worst} "
                    f"{parts[worst] / g.total_s[b]:.0%} of the total at {b}")
    return f"scales to {dpus[-1]} (≥ 80 % per step)"


def _pivot_split(res: pd.DataFrame, env: str, algorithm: str, dtype: str,
                 passes: int) -> pd.DataFrame:
    g = res[(res.device == "pim") & (res.env == env) & (res.algorithm == algorithm)
            & (res["dtype"] == dtype) & (res.passes == passes)].sort_values("dpus")
    out = pd.DataFrame({"DPUs": g.dpus})
    for col, name in zip(SPLIT, SPLIT_LABELS, strict=True):
        out[f"{name} (ms)"] = g[col].to_numpy() * 1e3
    out["of which host average (ms)"] = g.inter_dpu_average_s.to_numpy() * 1e3
    out["total (ms)"] = g.total_s.to_numpy() * 1e3
    out["kernel share"] = [f"{v:.0%}" for v in g.kernel_s / g.total_s]
    return out


def _compare(res: pd.DataFrame) -> pd.DataFrame:
    """Per point: the CPU's and the GPU's time over the PIM's, same dtype, same agents."""
    key = ["part", "env", "algorithm", "dtype", "dpus", "passes"]
    wide = res.pivot_table(index=key, columns="device", values="total_s").reset_index()
    wide.columns.name = None
    wide["cpu_over_pim"] = wide.cpu / wide.pim
    wide["gpu_over_pim"] = wide.gpu / wide.pim
    return wide


def _largest_overhead(res: pd.DataFrame, r) -> str:
    """The largest non-kernel part of the PIM run behind comparison row r."""
    g = res[(res.device == "pim") & (res.part == r.part) & (res.env == r.env)
            & (res.algorithm == r.algorithm) & (res["dtype"] == r.dtype)
            & (res.dpus == r.dpus) & (res.passes == r.passes)].iloc[0]
    parts = {name: g[col] for col, name in zip(SPLIT, SPLIT_LABELS, strict=True)
             if col != "kernel_s"}
    worst = max(parts, key=parts.get)
    return f"{worst} {parts[worst] / g.total_s:.0%}"


def _dashes(df: pd.DataFrame) -> pd.DataFrame:
    """Missing cells as '—' for the report's tables."""
    return df.astype(object).where(df.notna(), "—")


def _ratio(v: float) -> str:
    return f"{v:.3g}x"


# ---- figures ---------------------------------------------------------------------------------

def _grid(rows: int, cols: int):
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 4.3 * rows), squeeze=False)
    return fig, axes


def _dpu_axis(ax, dpus: list[int], label: str = "DPUs (upmem-p21)") -> None:
    ax.set_xscale("log")
    ax.set_xticks(dpus, [str(d) for d in dpus])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


def _fig_scaling(res: pd.DataFrame, p: Params, out: Path) -> Path:
    alg, passes = p.algorithms[0], p.scaling.passes[0]
    pim = res[(res.device == "pim") & (res.passes == passes) & (res.algorithm == alg)]
    fig, axes = _grid(1, len(p.envs))
    for ax, env in zip(axes[0], p.envs, strict=True):
        for dtype, c in (("int32", "C0"), ("fp32", "C3")):
            g = pim[(pim.env == env) & (pim["dtype"] == dtype)].sort_values("dpus")
            ax.plot(g.dpus, g.kernel_s, "-o", color=c, label=f"{dtype}: DPU kernel")
            ax.plot(g.dpus, g.total_s, "--s", color=c, alpha=0.6,
                    label=f"{dtype}: total (with transfers)")
            ax.plot(g.dpus, g.kernel_s.iloc[0] * g.dpus.iloc[0] / g.dpus, ":", color=c,
                    label=f"{dtype}: ideal (kernel at {g.dpus.iloc[0]} × {g.dpus.iloc[0]}"
                          "/DPUs)")
        _dpu_axis(ax, p.scaling.dpus)
        ax.set(yscale="log", ylabel="time (s)",
               title=f"{env}, {alg}: {p.scaling.transitions:,} transitions, {passes} pass(es)")
        ax.legend(fontsize=7)
    return save_figure(fig, out, "strong_scaling")


def _fig_split(res: pd.DataFrame, p: Params, out: Path) -> Path:
    pim = res[(res.device == "pim") & (res.algorithm == p.algorithms[0])
              & (res["dtype"] == "int32")]
    fig, axes = _grid(len(p.scaling.passes), len(p.envs))
    colors = ("C2", "C0", "C3", "C1")
    for i, passes in enumerate(p.scaling.passes):
        for ax, env in zip(axes[i], p.envs, strict=True):
            g = pim[(pim.env == env) & (pim.passes == passes)].sort_values("dpus")
            x = np.arange(len(g))
            bottom = np.zeros(len(g))
            for col, name, c in zip(SPLIT, SPLIT_LABELS, colors, strict=True):
                share = (g[col] / g.total_s).to_numpy() * 100
                ax.bar(x, share, bottom=bottom, color=c, label=name)
                bottom += share
            for xi, total in zip(x, g.total_s, strict=True):
                ax.text(xi, 101.5, f"{total * 1e3:.3g} ms", ha="center", fontsize=7)
            ax.set_xticks(x, [str(d) for d in g.dpus])
            ax.set(xlabel="DPUs (upmem-p21)", ylabel="share of total time (%)", ylim=(0, 110),
                   title=f"{env}, {p.algorithms[0]} INT32, {passes} pass(es)")
    axes[0][0].legend(fontsize=7, loc="lower left", framealpha=0.9)
    return save_figure(fig, out, "time_split")


def _fig_dtype(res: pd.DataFrame, p: Params, out: Path) -> Path:
    """FP32 time over INT32 time per DPU count: the kernel's and the total's."""
    passes = p.scaling.passes[0]
    pim = res[(res.device == "pim") & (res.passes == passes)]
    both = pim.pivot_table(index=["env", "algorithm", "dpus"], columns="dtype",
                           values=["kernel_s", "total_s"]).reset_index()
    fig, axes = _grid(1, 1)
    ax = axes[0][0]
    for i, ((env, alg), g) in enumerate(both.groupby(["env", "algorithm"])):
        g = g.sort_values("dpus")
        c = f"C{i}"
        ax.plot(g.dpus, g["kernel_s"]["fp32"] / g["kernel_s"]["int32"], "-o", color=c,
                label=f"{env}, {alg}: DPU kernel")
        ax.plot(g.dpus, g["total_s"]["fp32"] / g["total_s"]["int32"], "--s", color=c,
                alpha=0.6, label=f"{env}, {alg}: total")
    ax.axhline(1, color="k", linewidth=0.8)
    _dpu_axis(ax, p.scaling.dpus)
    ax.set(ylabel="FP32 time / INT32 time (x)", ylim=(0, None),
           title=f"Emulated FP32 vs INT32 fixed point on DPUs ({passes} pass(es))")
    ax.legend(fontsize=6)
    return save_figure(fig, out, "int32_vs_fp32")


def _fig_devices(res: pd.DataFrame, p: Params, out: Path) -> Path:
    s, alg = p.scaling, p.algorithms[0]
    sub = res[(res.passes == s.passes[0]) & (res.algorithm == alg)]
    fig, axes = _grid(1, len(p.envs))
    names = {"pim": f"PIM {s.pim}", "cpu": f"CPU {s.cpu} ({s.cpu_cores} cores)",
             "gpu": f"GPU {s.gpu}"}
    for ax, env in zip(axes[0], p.envs, strict=True):
        for (device, dtype), g in sub[sub.env == env].groupby(["device", "dtype"]):
            g = g.sort_values("dpus")
            ax.plot(g.dpus, g.total_s * 1e3, marker="o",
                    linestyle="-" if dtype == "int32" else "--",
                    color={"pim": "C0", "cpu": "C3", "gpu": "C2"}[device],
                    label=f"{names[device]}, {dtype}")
        _dpu_axis(ax, s.dpus, "agents (= DPUs on PIM)")
        ax.set(yscale="log", ylabel="training time, total (ms)",
               title=f"{env}, {alg}: {s.transitions:,} transitions, {s.passes[0]} pass(es)")
        ax.legend(fontsize=7)
    return save_figure(fig, out, "pim_cpu_gpu")


def _fig_learning(learn: pd.DataFrame, optimal: dict, out: Path) -> Path:
    envs = list(dict.fromkeys(learn.env))
    sizes = [learn[learn.env == e].groupby(["part", "algorithm", "agents",
                                            "passes_per_round"]).ngroups for e in envs]
    fig, axes = plt.subplots(1, len(envs), figsize=(sum(0.75 * n + 2 for n in sizes), 4.8),
                             width_ratios=sizes, squeeze=False)
    for ax, env in zip(axes[0], envs, strict=True):
        g = learn[learn.env == env]
        keys = list(dict.fromkeys(zip(g.part, g.algorithm, g.agents, g.passes_per_round,
                                      strict=True)))
        labels = [f"{a}, " + ("1 agent" if n == 1 else f"{n} DPUs")
                  + ("" if part == "scaling" else f"\nmulti-agent, {ppr} pass(es)/round")
                  for part, a, n, ppr in keys]
        x = np.arange(len(keys))
        for i, dtype in enumerate(("int32", "fp32")):
            vals = [g[(g.part == k[0]) & (g.algorithm == k[1]) & (g.agents == k[2])
                      & (g.passes_per_round == k[3]) & (g["dtype"] == dtype)]
                    .success_rate.iloc[0] * 100 for k in keys]
            bars = ax.bar(x + (i - 0.5) * 0.38, vals, 0.38, label=dtype)
            ax.bar_label(bars, fmt="%.0f", fontsize=6)
        ax.axhline(optimal[env] * 100, color="k", linestyle=":", label="optimal policy (γ)")
        ax.set_xticks(x, labels, fontsize=7, rotation=35, ha="right")
        ax.set(ylabel="greedy policy success rate (%)", ylim=(0, 108),
               title=f"{env}: policies learned offline (exact evaluation)")
        ax.legend(fontsize=7)
    return save_figure(fig, out, "learning")


# ---- the study -------------------------------------------------------------------------------

def run(study_dir: Path, progress: bool = True) -> Report:
    p = load_params(study_dir, Params)
    out = study_dir / "out"
    s, lr, ma = p.scaling, p.learning, p.multi_agent
    pim_spec = load_part("pim", s.pim)
    if s.dpus[-1] > pim_spec.dpus:
        raise RldseError(f"{study_dir / 'study.yaml'}: scaling.dpus: {s.dpus[-1]} DPUs, but "
                         f"{s.pim} has {pim_spec.dpus}")
    agents_list = [1, *lr.dpus]
    n_learn = len(p.envs) * len(p.algorithms) * 2 * len(agents_list) \
        + len(p.algorithms) * 2 * len(ma.passes_per_round)
    n_sim = len(p.envs) * len(p.algorithms) * 2 * len(s.passes) * len(s.dpus)
    learn_rows, time_rows, datasets, optimal, reasons = [], [], [], {}, []
    with tqdm(total=n_learn + n_sim, desc="swiftrl_pim", disable=not progress,
              unit="run") as bar:
        for env_id in p.envs:
            model = EnvModel(env_id)
            data, name = _dataset(study_dir, p.data.files.get(env_id), model,
                                  p.data.transitions, p.data.seed)
            datasets.append(_data_stats(env_id, name, data))
            optimal[env_id] = model.evaluate(model.optimal_policy(p.hyperparameters.gamma))[0]
            rows, traces, tables = _learn(p, data, name, env_id, model, agents_list,
                                          lr.dpus[0], lr.passes, 1, bar, "scaling")
            learn_rows.append(rows)
            reasons += _reasons(tables, rows, model, env_id, "")
            time_rows.append(_timing(p, traces, env_id, bar))
        model = EnvModel(ma.env)
        if ma.env not in optimal:
            optimal[ma.env] = model.evaluate(model.optimal_policy(p.hyperparameters.gamma))[0]
        data, name = _dataset(study_dir, ma.file, model, ma.transitions, p.data.seed + 1)
        datasets.append(_data_stats(ma.env, name, data))
        multi_traces = {}
        for ppr in ma.passes_per_round:
            rows, traces, tables = _learn(p, data, name, ma.env, model, [ma.agents],
                                          ma.agents, ma.passes, ppr, bar, "multi_agent")
            learn_rows.append(rows)
            reasons += _reasons(tables, rows, model, ma.env,
                                f"multi-agent, {ppr} pass(es) per round")
            multi_traces.update(traces)
        time_rows.append(_multi_timing(p, multi_traces, len(data)))
    learn = pd.concat(learn_rows, ignore_index=True)
    res = pd.concat(time_rows, ignore_index=True)

    out.mkdir(parents=True, exist_ok=True)
    res.to_csv(out / "results.csv", index=False)
    learn.to_csv(out / "learning.csv", index=False)
    return _report(p, res, learn, optimal, reasons, pd.DataFrame(datasets), out)


def _data_stats(env_id: str, name: str, data: pd.DataFrame) -> dict:
    r = data.reward.to_numpy()
    return {"env": env_id, "dataset": name, "transitions": len(data),
            "distinct_states": int(data.state.nunique()),
            "rewards (value: count)": ", ".join(
                f"{v:g}: {c:,}" for v, c in zip(*np.unique(r, return_counts=True),
                                                strict=True))}


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


def _report(p: Params, res: pd.DataFrame, learn: pd.DataFrame, optimal: dict,
            reasons: list[str], datasets: pd.DataFrame, out: Path) -> Report:
    s, ma = p.scaling, p.multi_agent
    lo, hi = s.dpus[0], s.dpus[-1]
    n_multi = int(datasets.transitions.iloc[-1])  # the multi-agent dataset is the last
    scal = res[res.part == "scaling"]
    table = _scaling_table(scal, s.dpus)
    cmp_ = _compare(scal)
    report = Report(
        name="swiftrl_pim",
        title="SwiftRL: offline tabular RL on UPMEM processing-in-memory",
        source="Gogineni, Dayapule, Gómez-Luna, Gogineni, Wei, Lan, Sadrosadati, Mutlu and "
               "Venkataramani, SwiftRL: Towards Efficient Reinforcement Learning on Real "
               "Processing-In-Memory Systems, ISPASS 2024, arXiv 2405.03967",
        summary=f"Q-learning and SARSA learn offline from {datasets.transitions.iloc[0]:,} "
                "transitions per env (" + ("SwiftRL's files" if p.data.files else
                                           "a random behaviour policy, generated at study "
                                           "time from the Gymnasium model, seeded") + "), "
                "the dataset split over agents whose tables the host averages, in INT32 fixed "
                "point and FP32: for real (learning quality), and on rldse's twin of "
                f"{s.pim} (time, {s.transitions:,} transitions) beside an "
                f"{s.cpu_cores}-core {s.cpu} and an {s.gpu} running the same agents on the "
                "same data. Every device number comes from a preset (`rldse parts`); none is "
                "tuned here. Times are per training run: loading the data, every round, and "
                "the final table back on the host.")

    # -- near-linear scaling
    kmin, kmax = table.kernel_speedup.min(), table.kernel_speedup.max()
    ok = kmin >= p.published.near_linear_min
    report.claims.append(Claim(
        f"DPU kernel time scales near-linearly, {lo} → {hi} DPUs",
        f"near-linear up to 2,000 DPUs (ideal {hi / lo:.0f}x)",
        f"{kmin:.1f}x-{kmax:.1f}x (every env, algorithm, dtype, passes)",
        f"{pct(kmin, hi / lo)} to {pct(kmax, hi / lo)} vs ideal",
        "reproduced" if ok else "not reproduced",
        note="" if ok else "the busiest DPU's chunk no longer shrinks with DPUs"))
    lowest = table.loc[table.kernel_speedup.idxmin()]
    tmin, tmax = table.total_speedup.min(), table.total_speedup.max()
    worst = table.loc[table.total_speedup.idxmin()]
    total_ok = tmin >= p.published.near_linear_min
    per_env = "; ".join(f"{e} {g.total_speedup.min():.1f}x-{g.total_speedup.max():.1f}x"
                        for e, g in table.groupby("env"))
    report.claims.append(Claim(
        f"total training time (with transfers) scales near-linearly, {lo} → {hi} DPUs",
        "near-linear performance scaling", per_env,
        f"{pct(tmin, hi / lo)} to {pct(tmax, hi / lo)} vs ideal",
        "reproduced" if total_ok else "partly reproduced",
        note="" if total_ok else
        f"lowest for {worst['env']} {worst['algorithm']} {worst['dtype']}, "
        f"{worst['passes']} pass(es): {worst['total_stops_scaling']}; its total is "
        f"shortest at {worst['fastest_total_at']} DPUs. The CPU→DPU load "
        "scales (ranks copy in parallel), but the inter-DPU work does not: every DPU's "
        "table comes back to the host and the host's average (agents × S × A adds, on one "
        "core in the twin) grows with DPUs; for Taxi's 12 KB table (FrozenLake's is 256 B) "
        "it overtakes the kernel. SwiftRL's near-linear scaling most likely refers to the "
        "kernel (it reports the split), or a multi-threaded host average would push the "
        f"knee out. (The least linear kernel, {lowest['env']} {lowest['dtype']} "
        f"{lowest['kernel_speedup']:.1f}x, pays a fixed MRAM↔WRAM swap of the table per "
        "agent.)"))
    # -- INT32 vs FP32
    pim = scal[scal.device == "pim"]
    both = pim.pivot_table(index=["env", "algorithm", "dpus", "passes"], columns="dtype",
                           values=["kernel_s", "total_s"])
    kr = both["kernel_s"]["fp32"] / both["kernel_s"]["int32"]
    tr = both["total_s"]["fp32"] / both["total_s"]["int32"]
    report.claims.append(Claim(
        "INT32 fixed point is faster than FP32 on DPUs",
        "INT32 instead of FP32, which DPUs emulate in software",
        f"FP32/INT32: kernel {kr.min():.1f}x-{kr.max():.1f}x, total {tr.min():.1f}x-"
        f"{tr.max():.1f}x", "same direction",
        "reproduced" if kr.min() > 1 and tr.min() > 1 else "not reproduced",
        note="" if tr.min() > 1 else "transfers dominate the total"))
    # -- PIM vs CPU
    compiled = _compiled_cpu_s(p, s.transitions)
    for dtype in ("int32", "fp32"):
        g = cmp_[cmp_["dtype"] == dtype]
        lose = g[g.cpu_over_pim < 1]
        report.claims.append(Claim(
            f"PIM ({dtype.upper()}) faster than the {s.cpu_cores}-core {s.cpu}",
            "PIM faster than the CPU version",
            f"CPU/PIM time {_ratio(g.cpu_over_pim.min())}-{_ratio(g.cpu_over_pim.max())}",
            "PIM faster everywhere" if lose.empty else f"PIM slower at {len(lose)}/{len(g)}",
            "reproduced" if lose.empty else "partly reproduced",
            note=("the size of the gap is not comparable: rldse's CPU twin replays the "
                  "captured Python loop (its measured time per update, scaled to the "
                  f"preset, {s.cpu_cores} worker processes). A compiled loop at "
                  f"{COMPILED_CYCLES_PER_UPDATE} cycles per update (what-if, assumed) would "
                  f"take {compiled * 1e3:.2f} ms per pass on {s.cpu_cores} cores and beat "
                  f"PIM (INT32, {p.algorithms[0]}, {min(s.passes)} pass) at: "
                  f"{_compiled_beats(cmp_, compiled, p.algorithms[0], dtype)}")
            if dtype == "int32" else "as for INT32 (the CPU twin is the Python loop); the "
            "compiled what-if would beat PIM's emulated FP32 at: "
            f"{_compiled_beats(cmp_, compiled, p.algorithms[0], dtype)}"))
    # -- PIM vs GPU
    for dtype in ("int32", "fp32"):
        g = cmp_[cmp_["dtype"] == dtype]
        lose = g[g.gpu_over_pim < 1]
        verdict = "reproduced" if lose.empty else \
            "partly reproduced" if len(lose) < len(g) else "not reproduced"
        cases = ", ".join(f"{r.env.split('-')[0]} {r.algorithm} {r.dpus} DPUs "
                          f"{r.passes} pass(es) ({_ratio(1 / r.gpu_over_pim)} the GPU's time; "
                          f"PIM {_largest_overhead(res, r)})"
                          for r in lose.sort_values("gpu_over_pim").head(3).itertuples())
        why = ("the FP32 kernel is emulated on DPUs (FP32/INT32 kernel "
               f"{kr.min():.1f}x-{kr.max():.1f}x), while the GPU twin's time does not depend "
               "on the number format: its kernel is a chain of dependent global loads per "
               "transition, one thread per agent") if dtype == "fp32" else (
               "where PIM loses, the host's average of every DPU's table (Taxi: 12 KB each, "
               "on one core) outweighs the whole GPU run, which averages on the device")
        report.claims.append(Claim(
            f"PIM ({dtype.upper()}) faster than the {s.gpu}",
            "PIM faster than the GPU version",
            f"GPU/PIM time {_ratio(g.gpu_over_pim.min())}-{_ratio(g.gpu_over_pim.max())}",
            "PIM faster everywhere" if lose.empty else
            f"PIM slower at {len(lose)}/{len(g)} points",
            verdict, note="" if lose.empty else f"slowest cases: {cases}. Why: {why}"))
    # -- multi-agent reference
    mt = res[res.part == "multi_agent"]
    parts = []
    for ppr in ma.passes_per_round:
        one = mt[(mt.passes_per_round == ppr) & (mt["dtype"] == "int32")
                 & (mt.algorithm == p.algorithms[0])].set_index("device")
        parts.append((ppr, one.total_s.to_dict(), one.loc["pim"]))
    fast = all(t["pim"] < t["cpu"] and t["pim"] < t["gpu"] for _, t, _ in parts)
    report.claims.append(Claim(
        f"multi-agent reference ({ma.agents:,} agents × {ma.passes} passes × "
        f"{n_multi:,} {ma.env.split('-')[0]} transitions): PIM (INT32) faster than "
        "CPU and GPU", "PIM faster than the CPU and GPU versions",
        "; ".join(f"averaging every {ppr} pass(es): PIM {t['pim'] * 1e3:.3g} ms, CPU "
                  f"{t['cpu'] * 1e3:.3g} ms, GPU {t['gpu'] * 1e3:.3g} ms"
                  for ppr, t, _ in parts),
        "; ".join(f"GPU/PIM {_ratio(t['gpu'] / t['pim'])} ({ppr} per round)"
                  for ppr, t, _ in parts),
        "reproduced" if fast else "partly reproduced",
        note="" if fast else "; ".join(
            f"averaging every {ppr} pass(es), inter-DPU is {sub.inter_dpu_s / sub.total_s:.0%}"
            f" of the PIM time ({ma.passes // ppr} gathers of {ma.agents:,} tables and host "
            "averages) while the DPU kernel runs only "
            f"{n_multi // ma.agents} transitions per DPU per pass"
            for ppr, t, sub in parts if t["pim"] >= min(t["cpu"], t["gpu"]))))
    # -- INT32 == FP32 policies
    agree = learn.drop_duplicates(["part", "env", "algorithm", "agents", "passes_per_round"])
    same = [a.split("/")[0] == a.split("/")[1] for a in agree.agree_states]
    report.claims.append(Claim(
        "INT32 fixed point learns the same greedy policy as FP32",
        "INT32 trains the same agents (no accuracy loss stated in SwiftRL (arXiv 2405.03967))",
        f"same policy in {sum(same)}/{len(agree)} learned configurations",
        "identical everywhere" if all(same) else f"differs in {len(agree) - sum(same)}",
        "reproduced" if all(same) else "partly reproduced",
        note="" if not reasons else "; ".join(reasons) + ". So: averaging over many "
        "agents that each saw few transitions leaves the values far from the reward tiny; "
        "below one INT32 step they round to 0, the row ties and the argmax falls to "
        "action 0, while FP32 keeps their order" + (
            f". In every {datasets.transitions.iloc[0]:,}-transition run the two agree in "
            "every state" if all(ok_ for ok_, part in zip(same, agree.part, strict=True)
                                 if part == "scaling") else "")))
    # -- good policies
    best = learn[learn.part == "scaling"].groupby(["env", "agents"]).success_rate.max()
    summary = "; ".join(
        f"{env.split('-')[0]}: optimal {optimal[env]:.0%}, 1 agent {best[env][1]:.0%}, "
        + ", ".join(f"{a} DPUs {best[env][a]:.0%}" for a in p.learning.dpus)
        for env in p.envs)
    good = all(best[env][a] >= 0.8 * optimal[env] for env in p.envs for a in p.learning.dpus)
    multi = learn[learn.part == "multi_agent"].success_rate.max()
    report.claims.append(Claim(
        "the policies learned from the dataset are good (greedy success rate)",
        "SwiftRL trains on these datasets (no success rate in SwiftRL (arXiv 2405.03967))",
        summary + f"; multi-agent reference ≤ {multi:.0%}",
        "≥ 80 % of the optimal policy's success everywhere" if good else
        "below 80 % of optimal in some configurations",
        "reproduced" if good else "partly reproduced",
        note="" if good else
        "one agent over the whole dataset learns near-optimal policies, so the random-"
        "policy data suffice; split over D agents and averaged, a round moves the table "
        "about as far as 1/D of the data would (each agent learns from its chunk alone, "
        "then the increments are averaged), so after one pass the averaged table is far "
        "from converged: worst for Taxi (the +20 lies ~13 steps away) and for the "
        f"multi-agent reference ({n_multi // ma.agents} transitions per agent). "
        "More passes close the gap slowly (learning.passes)"))

    # -- sections
    report.sections.append(("Datasets", markdown_table(datasets)))
    report.sections.append((
        f"Strong scaling on {s.pim}, {lo} → {hi} DPUs", markdown_table(table, 3)
        + "\n\n`fastest_total_at`: the DPU count with the shortest total. "
        "`total_stops_scaling`: the first step where the total gains less than 80 % "
        "of the step's ideal, and the non-kernel part that is largest there."))
    for passes in s.passes:
        for env in p.envs:
            report.sections.append((
                f"Time split: {env}, {p.algorithms[0]} INT32, {passes} pass(es) "
                f"({s.transitions:,} transitions)",
                markdown_table(_pivot_split(scal, env, p.algorithms[0], "int32", passes), 3)))
    report.sections.append(("What the time split holds", (
        "CPU→DPU: the dataset (each DPU's chunk, ranks in parallel) and the first start "
        "table; DPU kernel: every round's updates on the busiest DPU; inter-DPU: between "
        "rounds every DPU's table to the host and the new start table back (UPMEM DPUs have "
        "no path to each other), plus the host's average after every round; DPU→CPU: the "
        "last round's tables. The twin's formulas: `rldse/workloads/tabular.py`, "
        "`_pim_program`.")))
    dt = both.reset_index()
    dt.columns = ["_".join(col).strip("_") for col in dt.columns]
    dt["fp32/int32 kernel"] = dt.kernel_s_fp32 / dt.kernel_s_int32
    dt["fp32/int32 total"] = dt.total_s_fp32 / dt.total_s_int32
    report.sections.append((f"INT32 vs FP32 on DPUs, {s.passes[0]} pass(es) (seconds)",
                            markdown_table(dt[dt.passes == s.passes[0]], 3)))
    cols = ["env", "algorithm", "dtype", "dpus", "passes", "pim", "cpu", "gpu",
            "cpu_over_pim", "gpu_over_pim"]
    report.sections.append((
        f"PIM vs CPU vs GPU, {s.passes[0]} pass(es) (total seconds, same agents and data)",
        markdown_table(cmp_[cmp_.passes == s.passes[0]][cols], 3)
        + f"\n\nCPU: rldse's CPU twin, the captured Python loop ({s.cpu_cores} worker "
        f"processes on {s.cpu_cores} cores). GPU: one thread per agent. Every pass count is "
        "in results.csv."))
    mcols = ["algorithm", "dtype", "passes_per_round", "device", "total_s", "cpu_to_dpu_s",
             "kernel_s", "inter_dpu_s", "dpu_to_cpu_s", "inter_dpu_average_s", "energy_j"]
    report.sections.append((
        f"Multi-agent reference: {ma.agents:,} agents × {ma.passes} passes × "
        f"{n_multi:,} {ma.env} transitions (time)",
        markdown_table(_dashes(mt[mcols].sort_values(["passes_per_round", "algorithm",
                                                       "dtype"])), 3)
        + f"\n\nOne pass per round averages the tables after every pass ({ma.passes} "
        f"gathers and averages); {ma.passes} passes per round averages once at the end. "
        "The CPU and GPU have their own split (results.csv); `kernel_s` of a GPU row is "
        "its kernel."))
    lcols = ["part", "env", "algorithm", "dtype", "agents", "transitions", "passes",
             "passes_per_round", "success_rate", "expected_return", "agree_states",
             "int32_scale_bits"]
    report.sections.append((
        "Learning quality (exact evaluation of each greedy policy within the time limit)",
        markdown_table(learn[lcols], 3)
        + "\n\nOptimal policy at the same γ: "
        + ", ".join(f"{e} {v:.1%}" for e, v in optimal.items())
        + ". `agree_states`: non-terminal states where the INT32 and FP32 greedy policies "
        "choose the same action."))

    report.figures += [
        (_fig_scaling(scal, p, out),
         "Strong scaling: DPU kernel and total time vs DPUs (log-log), with the ideal line"),
        (_fig_split(scal, p, out), "SwiftRL's time split per DPU count (share of the total; "
                                   "the total above each bar)"),
        (_fig_dtype(scal, p, out), "INT32 fixed point vs emulated FP32 on DPUs"),
        (_fig_devices(scal, p, out), "PIM vs CPU vs GPU, same agents and data"),
        (_fig_learning(learn, optimal, out), "Success rate of the learned greedy policies"),
    ]
    report.parameters = {
        "envs": ", ".join(p.envs), "algorithms": ", ".join(p.algorithms),
        "data": "SwiftRL files: " + ", ".join(f"{k}: {v}" for k, v in p.data.files.items())
        if p.data.files else f"generated: {p.data.transitions:,} random-policy transitions "
        f"per env, seed {p.data.seed}, {STREAMS} streams",
        "hyperparameters": f"α {p.hyperparameters.alpha}, γ {p.hyperparameters.gamma}, "
                           f"SARSA ε {p.hyperparameters.epsilon}",
        "learned runs": f"1 agent and {', '.join(map(str, p.learning.dpus))} agents, "
                        f"{p.learning.passes} pass(es); traces from "
                        f"{p.learning.dpus[0]} agents",
        "simulated transitions": f"{s.transitions:,}", "DPUs": ", ".join(map(str, s.dpus)),
        "passes (rounds)": ", ".join(map(str, s.passes)),
        "PIM": f"{s.pim}, host {s.pim_host}", "CPU baseline": f"{s.cpu}, {s.cpu_cores} cores",
        "GPU baseline": s.gpu,
        "multi-agent": f"{ma.env}, {ma.agents} agents, {ma.passes} passes, "
                       f"{n_multi:,} transitions, passes per round "
                       f"{ma.passes_per_round}",
        "compiled-CPU what-if": f"{COMPILED_CYCLES_PER_UPDATE} cycles per update (assumed)",
    }
    return report


def _compiled_cpu_s(p: Params, transitions: int) -> float:
    """What-if only: a compiled update loop on the baseline CPU's cores (no twin)."""
    cpu = load_part("cpu", p.scaling.cpu)
    return transitions * COMPILED_CYCLES_PER_UPDATE / (cpu.clock_mhz * 1e6) \
        / p.scaling.cpu_cores


def _compiled_beats(c: pd.DataFrame, compiled_s: float, algorithm: str, dtype: str) -> str:
    """Where the compiled what-if would be faster than PIM (one algorithm and dtype)."""
    g = c[(c["dtype"] == dtype) & (c.passes == c.passes.min()) & (c.algorithm == algorithm)]
    parts = []
    for env, e in g.groupby("env"):
        lose = e[e.pim > compiled_s * e.passes].dpus.tolist()
        parts.append(f"{env.split('-')[0]} " + (f"{', '.join(map(str, lose))} DPUs"
                                                 if lose else "no DPU count"))
    return "; ".join(parts)
