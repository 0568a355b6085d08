"""The study's report: claims judged per configuration under the strict rule
(rldse.studies.report), tables and sections, from what ``runs.collect`` produced.

The paper's program on PIM is SwiftRL's released kernel (``PAPER_KERNEL``): its rows are the
reproductions. rldse's split kernel in INT32 and FP32 (``WHAT_IF_KERNEL``) is a what-if:
its rows say whether that kernel would bear the paper's claims out, never that the paper's
program does.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from rldse.sim.bands import percentiles
from rldse.studies.report import Claim, Report, Tolerance, markdown_table
from rldse.studies.swiftrl_pim import figures
from rldse.studies.swiftrl_pim.params import (
    PAPER_ALGORITHM,
    PAPER_DTYPE,
    PAPER_KERNEL,
    SPLIT,
    SPLIT_LABELS,
    STREAMS,
    WHAT_IF_KERNEL,
    Params,
)
from rldse.studies.swiftrl_pim.runs import GPU_ONCHIP_LATENCY, Runs

#: what "faster" means where SwiftRL gives no number
FASTER = "'faster': a gain beyond parity's ±25 % tolerance; the paper states no number"
#: how the two PIM programs read in claims and tables
RELEASED = "SwiftRL's released kernel"
WHAT_IF = "what-if, rldse's split kernel"
#: the released kernel is FrozenLake's; other envs run its program with their table size
FROZENLAKE = "FrozenLake-v1"
OTHER_ENV = ("the released kernel is written for FrozenLake (NUM_STATES 16, NUM_ACTIONS 4, "
             "a uint8 table); {env} runs the same program with its own table size, for time "
             "only (a uint8 table cannot hold its negative values)")
#: why the paper's program cannot be judged on number formats, and what it learns
NO_FORMATS = ("the released code (Multiagent_version.zip, PIM_code/Qlearning.c) has no INT32 "
              "or FP32 kernel: it keeps a uint8 table and computes each update with double "
              "literals (0.1, 0.95), FP64 that DPUs emulate in software")
UINT8_LEARNING = ("the released kernel is not run for learning: by C's conversion rule its "
                  "`q_table[s][a] += 0.1 * (r + 0.95 * max - q)` truncates the double result "
                  "to uint8, so from the zero table (FrozenLake rewards 0 and 1, a change of "
                  "at most 0.1) every entry stays 0 (read from the source; that update "
                  "compiled with the development host's cc stays 0 after 1e5 updates with "
                  "reward 1; not run on a DPU). The learned runs are rldse's "
                  "split-and-average scheme in INT32 and FP32")


# ---- tables ------------------------------------------------------------------------------------

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


def _dashes(df: pd.DataFrame) -> pd.DataFrame:
    """Missing cells as '—' for the report's tables."""
    return df.astype(object).where(df.notna(), "—")


# ---- the two programs' frames ---------------------------------------------------------------

def paper_frame(res: pd.DataFrame) -> pd.DataFrame:
    """The paper's program beside the baselines: the released kernel's PIM rows and the
    CPU and GPU rows of the same runs (Q-learning; their times do not depend on the number
    format, the INT32 trace's rows are taken), relabelled with the released dtype so that
    they pair by (env, dpus, passes, draw)."""
    base = res[res.device.isin(["cpu", "gpu"]) & (res.algorithm == PAPER_ALGORITHM)
               & (res["dtype"] == "int32")]
    if "passes_per_round" in res and res.part.eq("multi_agent").any():
        released = res[res["dtype"] == PAPER_DTYPE]
        base = base[base.passes_per_round.isin(released.passes_per_round.unique())]
    return pd.concat([res[res["dtype"] == PAPER_DTYPE], base.assign(dtype=PAPER_DTYPE)],
                     ignore_index=True)


def what_if_frame(res: pd.DataFrame) -> pd.DataFrame:
    """rldse's split kernel (INT32, FP32) beside the baselines."""
    return res[res.kernel != PAPER_KERNEL]


# ---- claims ------------------------------------------------------------------------------------

def _band(values) -> tuple[float, float, float]:
    return percentiles(np.asarray(values, np.float64))


#: how a configuration's index level reads in a claim's reason
_LEVEL_LABELS = {"env": lambda v: str(v).split("-")[0], "dpus": lambda v: f"{v} DPUs",
                 "passes": lambda v: f"{v} pass(es)",
                 "passes_per_round": lambda v: f"average every {int(v)} pass(es)",
                 "dtype": lambda v: str(v).upper()}


def _configuration_bands(values: pd.Series) -> dict[str, tuple[float, float, float]]:
    """Each configuration's band (every index level but ``draw``) over the draws alone."""
    levels = [n for n in values.index.names if n != "draw"]
    out = {}
    for key, v in values.groupby(level=levels):
        key = key if isinstance(key, tuple) else (key,)
        label = " ".join(_LEVEL_LABELS.get(n, str)(k) for n, k in zip(levels, key, strict=True))
        out[label] = _band(v)
    return out


def _at_least(claim: str, published: str, values: pd.Series, low: float,
              high: float = math.inf, note: str = "", why: str = "",
              kind: str = "reproduction") -> Claim:
    """A claim that must hold in every configuration of ``values`` (a ratio indexed by the
    configuration's levels and ``draw``), against a published range [low, high] or, with
    ``high`` inf, the threshold ``low`` the paper implies (``why`` says what it is)."""
    tol = Tolerance.at_least(low, "x", why) if math.isinf(high) else None
    return Claim.per_configuration(claim, published=published, low=low, high=high,
                                   bands=_configuration_bands(values), unit="x", note=note,
                                   tolerance=tol, kind=kind)


def _ratios(res: pd.DataFrame, index: list[str], column: str, value: str, num, den
            ) -> pd.Series:
    wide = res.pivot_table(index=index, columns=column, values=value)
    return (wide[num] / wide[den]).dropna()


def _loses(ratio: pd.Series) -> bool:
    """Whether some configuration's median ratio lies below parity."""
    levels = [n for n in ratio.index.names if n != "draw"]
    return bool((ratio.groupby(level=levels).median() < 1).any())


def _scaling_claims(p: Params, pim: pd.DataFrame, table: pd.DataFrame, program: str,
                    kind: str) -> list[Claim]:
    """The kernel's and each env's total near-linear scaling, smallest to largest DPU
    count, per configuration of ``pim`` (one program's PIM rows over the draws)."""
    lo, hi = p.scaling.dpus[0], p.scaling.dpus[-1]
    key = ["env", "algorithm", "dtype", "passes", "draw"]
    out = [_at_least(
        f"{program}: DPU kernel time scales near-linearly, {lo} → {hi} DPUs",
        f"near-linear up to 2,000 DPUs (≥ {p.published.near_linear_min:g}x of the ideal "
        f"{hi / lo:.0f}x)", _ratios(pim, key, "dpus", "kernel_s", lo, hi),
        p.published.near_linear_min, hi / lo, kind=kind)]
    total_sp = _ratios(pim, key, "dpus", "total_s", lo, hi)
    for env in p.envs:
        worst = table[table.env == env].sort_values("total_speedup").iloc[0]
        out.append(_at_least(
            f"{program}, {env}: total training time (with transfers) scales near-linearly, "
            f"{lo} → {hi} DPUs", "near-linear performance scaling",
            total_sp.xs(env, level="env"), p.published.near_linear_min, hi / lo, kind=kind,
            note=f"lowest for {worst['algorithm']} {worst['dtype']}, {worst['passes']} "
            f"pass(es): {worst['total_stops_scaling']}; its total is shortest at "
            f"{worst['fastest_total_at']} DPUs. The CPU→DPU load scales (ranks copy in "
            "parallel), but every DPU's table comes back to the host and the host's average "
            "(agents × S × A adds, on one core) grows with DPUs"
            + (". " + OTHER_ENV.format(env=env) if kind == "reproduction"
               and env != FROZENLAKE else "")))
    return out


def _claims(p: Params, r: Runs, drawn: pd.DataFrame, multi: pd.DataFrame, tables: dict,
            n_multi: int) -> list[Claim]:
    s, ma = p.scaling, p.multi_agent
    paper, what_if = paper_frame(drawn), what_if_frame(drawn)
    ckey = ["env", "algorithm", "dtype", "dpus", "passes", "draw"]
    claims = _scaling_claims(p, paper[paper.device == "pim"], tables[PAPER_DTYPE], RELEASED,
                             "reproduction")
    # -- number formats: the paper's program has none; the what-if times both
    dkey = ["env", "algorithm", "dpus", "passes", "draw"]
    pim_w = what_if[what_if.device == "pim"]
    kr = _ratios(pim_w, dkey, "dtype", "kernel_s", "fp32", "int32")
    tr = _ratios(pim_w, dkey, "dtype", "total_s", "fp32", "int32")
    claims.append(Claim(
        "INT32 fixed point is faster than FP32 on DPUs (the paper's program)",
        "INT32 instead of FP32, which DPUs emulate in software (faster)",
        "no INT32 or FP32 version of the released kernel", "—", "not comparable",
        note=NO_FORMATS + "; the two what-if rows below time rldse's split kernel in each",
        tolerance=Tolerance.at_least(p.published.faster_min, "x", FASTER).text))
    claims.append(_at_least(f"{WHAT_IF}: kernel time FP32/INT32", "faster", kr,
                            p.published.faster_min, why=FASTER, kind="what-if"))
    claims.append(_at_least(f"{WHAT_IF}: total time FP32/INT32", "faster", tr,
                            p.published.faster_min, why=FASTER, kind="what-if"))
    # -- devices
    for other, name in (("cpu", f"SwiftRL's CPU code (compiled, one thread, {s.cpu})"),
                        ("gpu", f"the {s.gpu} (one thread per agent, tables on chip)")):
        ratio = _ratios(paper, ckey, "device", "total_s", other, "pim")
        claims.append(_at_least(
            f"{RELEASED} faster than {name}: {other.upper()}/PIM time",
            f"PIM faster than the {other.upper()} version", ratio, p.published.faster_min,
            why=FASTER, note=_device_note(other, "released", ratio, kr, p.envs)))
    for dtype in ("int32", "fp32"):
        for other, name in (("cpu", "the compiled CPU loop"), ("gpu", s.gpu)):
            ratio = _ratios(what_if, ckey, "device", "total_s", other, "pim").xs(
                dtype, level="dtype")
            claims.append(_at_least(
                f"{WHAT_IF} ({dtype.upper()}) faster than {name}: {other.upper()}/PIM time",
                f"PIM faster than the {other.upper()} version", ratio,
                p.published.faster_min, why=FASTER, kind="what-if",
                note=_device_note(other, dtype, ratio, kr)))
    # -- multi-agent reference
    mkey = ["passes_per_round", "draw"]
    scope = (f"multi-agent reference ({ma.agents:,} agents × all {n_multi:,} "
             f"{ma.env.split('-')[0]} transitions × {ma.passes} passes = "
             f"{ma.agents * n_multi * ma.passes:.0e} updates)")
    released = paper_frame(multi)
    int32 = multi[(multi.kernel != PAPER_KERNEL) & (multi.algorithm == PAPER_ALGORITHM)
                  & (multi["dtype"] == "int32")]
    for frame, program, kind in ((released, RELEASED, "reproduction"),
                                 (int32, f"{WHAT_IF} (INT32)", "what-if")):
        for other in ("cpu", "gpu"):
            ratio = _ratios(frame, mkey, "device", "total_s", other, "pim")
            claims.append(_at_least(
                f"{scope}, {program} faster than the "
                f"{'compiled CPU loop' if other == 'cpu' else s.gpu}: {other.upper()}/PIM "
                "time", f"PIM faster than the {other.upper()} version", ratio,
                p.published.faster_min, why=FASTER, kind=kind,
                note=_multi_note(other, kind)))
    claims += _scaling_claims(p, pim_w, tables["what-if"], WHAT_IF, "what-if")
    claims += _learning_claims(p, r)
    return claims


def _device_note(other: str, program: str, ratio: pd.Series, kr: pd.Series,
                 envs: list[str] = ()) -> str:
    """Why PIM loses, where it does (nothing where it does not); ``envs``: the study's envs
    (the released kernel's note names those it was not written for)."""
    if not _loses(ratio):
        return ""
    if program == "released":
        return ("the released kernel computes every update in emulated FP64 in every "
                "tasklet (no split), so a DPU pays about tasklets × an FP64 update's "
                "instructions per transition: its kernel is hundreds of times the split "
                "INT32 kernel's (report.md)" + "".join(
                    ". " + OTHER_ENV.format(env=e) for e in envs if e != FROZENLAKE))
    if other == "cpu":
        return ("where PIM is slower, the compiled loop runs an update in a few ns from L1 "
                "while the DPUs pay the transfers and the host's average")
    if program == "fp32":
        return (f"the FP32 kernel is emulated on DPUs (FP32/INT32 kernel {kr.min():.1f}x-"
                f"{kr.max():.1f}x) while the GPU's time does not depend on the number format")
    return ("where PIM loses, the host's average of every DPU's table (Taxi: 12 KB each, on "
            "one core) outweighs the whole GPU run, which averages on the device")


def _multi_note(other: str, kind: str) -> str:
    if kind == "reproduction":
        return ("the released kernel as host.py runs it: one launch for every pass (every "
                "tasklet runs the whole loop on the shared uint8 table), one gather, the "
                "host's integer average")
    if other == "cpu":
        return ("the compiled loop's few ns per update from L1, one thread, against 1,000 "
                "DPUs each running its updates at about 87 instructions each (PrIM's 350 MHz "
                "DPUs, 11-stage pipeline)")
    return ("the GPU runs every agent's update chain at on-chip latencies, about as fast "
            "per update as a DPU, and averages on the device")


def _learning_claims(p: Params, r: Runs) -> list[Claim]:
    learn = r.learn
    agree = learn.drop_duplicates(["part", "env", "algorithm", "agents", "passes_per_round"])
    same = [a.split("/")[0] == a.split("/")[1] for a in agree.agree_states]
    out = [Claim(
        f"{WHAT_IF}: INT32 fixed point learns the same greedy policy as FP32",
        "INT32 trains the same agents (no accuracy loss stated in SwiftRL (arXiv 2405.03967))",
        f"same policy in {sum(same)}/{len(agree)} learned configurations",
        "identical everywhere" if all(same) else f"differs in {len(agree) - sum(same)}",
        "reproduced" if all(same) else "not reproduced", kind="what-if",
        tolerance="the same greedy policy in every learned configuration",
        note="; ".join([NO_FORMATS + " (SwiftRL's INT32 kernel is not released; these are "
                        "rldse's INT32 and FP32 runs)", *r.reasons])
        + ("" if not r.reasons else ". So: averaging over many agents that each saw few "
           "transitions leaves the values far from the reward tiny; below one INT32 step "
           "they round to 0, the row ties and the argmax falls to action 0, while FP32 "
           "keeps their order"))]
    best = learn[learn.part == "scaling"].groupby(["env", "agents"]).success_rate.max()
    summary = "; ".join(
        f"{env.split('-')[0]}: optimal {r.optimal[env]:.0%}, 1 agent {best[env][1]:.0%}, "
        + ", ".join(f"{a} DPUs {best[env][a]:.0%}" for a in p.learning.dpus)
        for env in p.envs)
    good = all(best[env][a] >= 0.8 * r.optimal[env] for env in p.envs
               for a in p.learning.dpus)
    multi = learn[learn.part == "multi_agent"].success_rate.max()
    out.append(Claim(
        "the policies learned from the dataset are good (greedy success rate)",
        "SwiftRL trains on these datasets (no success rate in SwiftRL (arXiv 2405.03967))",
        summary + f"; multi-agent reference (each agent's table) ≤ {multi:.0%}",
        "≥ 80 % of the optimal policy's success everywhere" if good else
        "below 80 % of optimal in some configurations",
        "reproduced" if good else "not reproduced",
        tolerance="success rate ≥ 80 % of the optimal policy's in every configuration",
        note=UINT8_LEARNING + ("" if good else
                               ". One agent over the whole dataset learns near-optimal "
                               "policies, so the random-policy data suffice; split over D "
                               "agents and averaged, a round moves the table about as far "
                               "as 1/D of the data would, so after one pass the averaged "
                               "table is far from converged (worst for Taxi, whose +20 lies "
                               "~13 steps away). More passes close the gap slowly "
                               "(learning.passes)")))
    return out


# ---- the report --------------------------------------------------------------------------------

def build(r: Runs, out: Path) -> Report:
    """The report: claims, sections and figures (written into ``out``)."""
    p, res, learn = r.params, r.res, r.learn
    s = p.scaling
    n_multi = int(r.datasets.transitions.iloc[-1])  # the multi-agent dataset is the last
    scal_all = res[res.part == "scaling"]
    scal = scal_all[scal_all.draw == -1]  # the presets' values: tables and figures
    drawn = scal_all[scal_all.draw >= 0]  # the bands
    multi_all = res[res.part == "multi_agent"]
    tables = {PAPER_DTYPE: _scaling_table(paper_frame(scal), s.dpus),
              "what-if": _scaling_table(what_if_frame(scal), s.dpus)}
    src = next(iter(r.measured.values())).source
    report = Report(
        draws=s.bands,
        name="swiftrl_pim",
        title="SwiftRL: offline tabular RL on UPMEM processing-in-memory",
        source="Gogineni, Dayapule, Gómez-Luna, Gogineni, Wei, Lan, Sadrosadati, Mutlu and "
               "Venkataramani, SwiftRL: Towards Efficient Reinforcement Learning on Real "
               "Processing-In-Memory Systems, ISPASS 2024, arXiv 2405.03967",
        summary=_summary(p, r, src, n_multi))
    report.claims = _claims(p, r, drawn, multi_all[multi_all.draw >= 0], tables, n_multi)
    report.sections = _sections(p, r, scal, drawn, multi_all[multi_all.draw == -1], tables,
                                n_multi, src)
    report.figures += [
        (figures.fig_scaling(scal, p, out),
         "Strong scaling: DPU kernel and total time vs DPUs (log-log), with the ideal line: "
         "the released kernel (the paper's program) and the split what-ifs"),
        (figures.fig_split(scal, p, out), "SwiftRL's time split of the released kernel per "
                                          "DPU count (share of the total; the total above "
                                          "each bar)"),
        (figures.fig_dtype(scal, p, out), "What-if: INT32 fixed point vs emulated FP32 on "
                                          "DPUs (rldse's split kernel)"),
        (figures.fig_devices(scal, p, out), "PIM vs CPU vs GPU, same agents and data"),
        (figures.fig_learning(learn, r.optimal, out),
         "Success rate of the learned greedy policies"),
    ]
    report.parameters = _parameters(p, src, n_multi)
    return report


def _summary(p: Params, r: Runs, src: str, n_multi: int) -> str:
    s, ma = p.scaling, p.multi_agent
    return (f"Q-learning and SARSA learn offline from {r.datasets.transitions.iloc[0]:,} "
            "transitions per env (" + ("SwiftRL's files" if p.data.files else
                                       "a random behaviour policy, generated at study time "
                                       "from the Gymnasium model, seeded") + "), the dataset "
            "split over agents whose tables the host averages, in INT32 fixed point and FP32 "
            "(rldse's runs, for learning quality). Time, on rldse's twin of "
            f"{s.pim} ({s.transitions:,} transitions): the paper's program is SwiftRL's "
            "released kernel (Multiagent_version.zip, PIM_code/Qlearning.c and host.py: a "
            "uint8 table updated in emulated FP64, every tasklet running the whole loop, one "
            "launch, one gather; Q-learning only); rldse's INT32 and FP32 kernel split over "
            "tasklets with the host averaging every round is a labelled what-if. Beside "
            "them SwiftRL's baselines: its CPU code as a compiled single-threaded double-"
            f"precision loop (rldse's `tabular_update.c`, {src}) scaled to the {s.cpu} by "
            f"its part model, and one {s.gpu} thread per agent with the tables in on-chip "
            f"memory. Multi-agent reference: {ma.agents:,} agents, each over all "
            f"{n_multi:,} {ma.env} transitions for {ma.passes} passes, "
            f"{ma.agents * n_multi * ma.passes:.0e} updates in total; on PIM one agent per "
            "DPU with its own copy. Every number is a band: p5-p95 over "
            f"{s.bands} Latin-hypercube draws of every assumed number's range (PIM, host, "
            "GPU, CPU baseline; rldse.sim.bands). Nothing is tuned to SwiftRL's results.")


def _sections(p: Params, r: Runs, scal: pd.DataFrame, drawn: pd.DataFrame,
              multi: pd.DataFrame, tables: dict, n_multi: int, src: str
              ) -> list[tuple[str, str]]:
    """The report's sections after its summary: the baselines, the scaling, the
    comparisons."""
    return [*_baseline_sections(p, r, multi, n_multi, src),
            *_scaling_sections(p, scal, drawn, tables),
            *_comparison_sections(p, r, scal)]


def _baseline_sections(p: Params, r: Runs, multi: pd.DataFrame, n_multi: int, src: str
                       ) -> list[tuple[str, str]]:
    s, ma = p.scaling, p.multi_agent
    out = []
    mcols = ["algorithm", "dtype", "kernel", "passes_per_round", "device", "transitions",
             "total_s", "kernel_s", "inter_dpu_s", "q_update_s", "energy_j"]
    mtable = markdown_table(_dashes(multi[mcols].sort_values(
        ["passes_per_round", "algorithm", "dtype", "device"])), 3)
    out.append(("Multi-agent reference", (
        f"SwiftRL's code (`multiq.c` on the CPU, `host.py` + `Qlearning.c` on PIM, authors' "
        f"repository) gives every one of its {ma.agents:,} agents all {n_multi:,} "
        f"transitions for {ma.passes} passes: {ma.agents:,} × {n_multi:,} × {ma.passes} = "
        f"{ma.agents * n_multi * ma.passes:.0e} updates. The paper's program on PIM is the "
        "released kernel: one agent per DPU, each DPU loaded with its own copy of the "
        "dataset, one launch that runs every pass (every tasklet over the whole loop), "
        "then one gather and the host's integer average (`dtype` uint8/fp64, "
        f"`passes_per_round` {ma.passes}). The what-if: rldse's split kernel in INT32 or "
        "FP32, the host averaging after every pass or once. On the GPU one thread per agent "
        "over one shared copy; on the CPU the compiled loop runs every update one after "
        "another. Every agent starts from the same zero table on the same data, so "
        "(Q-learning) every agent learns the same table and the average is it: the learned "
        "row is one agent's run over the whole dataset.\n\n" + mtable
        + "\n\n`transitions` counts every agent's copy (agents × dataset).")))
    ctable = pd.DataFrame([{"dataset": env, "algorithm": alg,
                            "ns_per_update (best)": m.best_ns,
                            "repeats": ", ".join(f"{v:.3g}" for v in m.ns_per_update),
                            "host clock (MHz)": m.host_clock_mhz}
                           for (env, alg), m in r.measured.items()])
    out.append(("CPU baseline: the compiled loop", (
        "ns per update of rldse's `tabular_update.c` (one agent, double precision, one "
        f"thread), {src}; scaled to the {s.cpu} by its part model (clock × "
        "IPC, both ranged):\n\n" + markdown_table(ctable, 3))))
    out.append(("Datasets", markdown_table(r.datasets)))
    return out


def _scaling_sections(p: Params, scal: pd.DataFrame, drawn: pd.DataFrame, tables: dict
                      ) -> list[tuple[str, str]]:
    s = p.scaling
    lo, hi = s.dpus[0], s.dpus[-1]
    out = []
    released, split = _kernels(scal)
    ratio = (released.kernel_s / split.kernel_s).dropna()
    kt = ratio.rename("released / split INT32 kernel time").reset_index()
    out.append(("The paper's program against the what-if: kernel time", (
        f"{RELEASED}: {NO_FORMATS}; every one of the DPU's tasklets runs the whole loop over "
        "its chunk on the shared table and reads each transition's four uint8 fields with "
        "one MRAM DMA each (`rldse/workloads/tabular/program/released.py`). "
        "The released source fixes its loop bounds (10,000 transitions, NUM_ITERATIONS "
        "1,000 passes); here its program runs each DPU's chunk for the study's passes. "
        f"Its kernel takes {ratio.min():.0f}-{ratio.max():.0f}x the split INT32 kernel's "
        "time (Q-learning, presets' values):\n\n" + markdown_table(kt, 3))))
    for name, table in ((f"the paper's program ({RELEASED})", tables[PAPER_DTYPE]),
                        (f"{WHAT_IF}", tables["what-if"])):
        out.append((f"Strong scaling on {s.pim}, {lo} → {hi} DPUs, {name} (presets' values)",
                    markdown_table(table, 3)
                    + "\n\n`fastest_total_at`: the DPU count with the shortest total. "
                    "`total_stops_scaling`: the first step where the total gains less than "
                    "80 % of the step's ideal, and the non-kernel part that is largest "
                    "there."))
    out.append(("Bands (p5 / p50 / p95 over the draws)", _band_table(drawn, lo, hi)))
    for passes in s.passes:
        for env in p.envs:
            for dtype, name in ((PAPER_DTYPE, "released kernel"), ("int32", "what-if INT32")):
                out.append((
                    f"Time split: {env}, {PAPER_ALGORITHM} {name}, {passes} pass(es) "
                    f"({s.transitions:,} transitions)",
                    markdown_table(_pivot_split(scal, env, PAPER_ALGORITHM, dtype, passes),
                                   3)))
    out.append(("What the time split holds", (
        "Released kernel: CPU→DPU is the dataset's four uint8 vectors (each DPU's chunk, "
        "ranks in parallel); DPU kernel is the one launch that runs every pass; DPU→CPU the "
        "uint8 tables; inter-DPU the host's integer average. Split kernel (what-if): "
        "CPU→DPU: the dataset (16-byte transitions) and the first start table; DPU kernel: "
        "every round's updates on the busiest DPU; inter-DPU: between rounds every DPU's "
        "table to the host and the new start table back (UPMEM DPUs have no path to each "
        "other), plus the host's average after every round; DPU→CPU: the last round's "
        "tables. The twin's formulas: `rldse/workloads/tabular/program/pim.py`, "
        "`dpu_kernel.py` and `released.py`.")))
    return out


def _comparison_sections(p: Params, r: Runs, scal: pd.DataFrame) -> list[tuple[str, str]]:
    s = p.scaling
    out = []
    what_if = what_if_frame(scal)
    both = what_if[what_if.device == "pim"].pivot_table(
        index=["env", "algorithm", "dpus", "passes"], columns="dtype",
        values=["kernel_s", "total_s"])
    dt = both.reset_index()
    dt.columns = ["_".join(col).strip("_") for col in dt.columns]
    dt["fp32/int32 kernel"] = dt.kernel_s_fp32 / dt.kernel_s_int32
    dt["fp32/int32 total"] = dt.total_s_fp32 / dt.total_s_int32
    out.append((f"What-if: INT32 vs FP32 on DPUs (split kernel), {s.passes[0]} pass(es) "
                "(seconds)", markdown_table(dt[dt.passes == s.passes[0]], 3)))
    cmp_ = pd.concat([_compare(paper_frame(scal)), _compare(what_if)], ignore_index=True)
    cols = ["env", "algorithm", "dtype", "dpus", "passes", "pim", "cpu", "gpu",
            "cpu_over_pim", "gpu_over_pim"]
    out.append((
        f"PIM vs CPU vs GPU, {s.passes[0]} pass(es) (total seconds, same agents and data)",
        markdown_table(cmp_[cmp_.passes == s.passes[0]][cols], 3)
        + f"\n\n`dtype` {PAPER_DTYPE}: the released kernel (the paper's program); int32 and "
        "fp32: the split kernel (what-if). CPU: the compiled loop, one thread, scaled to "
        f"the {s.cpu}. GPU: one thread per agent, tables on chip. Every pass count and draw "
        "is in results.csv (`draw` -1: the presets' values)."))
    lcols = ["part", "env", "algorithm", "dtype", "agents", "transitions", "passes",
             "passes_per_round", "success_rate", "expected_return", "agree_states",
             "int32_scale_bits"]
    out.append((
        "Learning quality (exact evaluation of each greedy policy within the time limit)",
        markdown_table(r.learn[lcols], 3)
        + "\n\nOptimal policy at the same γ: "
        + ", ".join(f"{e} {v:.1%}" for e, v in r.optimal.items())
        + ". `agree_states`: non-terminal states where the INT32 and FP32 greedy policies "
        f"choose the same action. {UINT8_LEARNING}."))
    return out


def _kernels(scal: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The released kernel's and the split INT32 kernel's PIM rows (Q-learning), indexed
    alike."""
    key = ["env", "dpus", "passes"]
    pim = scal[(scal.device == "pim") & (scal.algorithm == PAPER_ALGORITHM)]
    return (pim[pim["dtype"] == PAPER_DTYPE].set_index(key),
            pim[(pim["dtype"] == "int32") & (pim.kernel == WHAT_IF_KERNEL)].set_index(key))


def _band_table(drawn: pd.DataFrame, lo: int, hi: int) -> str:
    """p5/p50/p95 per env and program of every banded quantity."""
    rows = []

    def add(name, series):
        for k, v in series.groupby(level="env"):
            rows.append({"quantity": name, "env": k, **dict(zip(
                ("p5", "p50", "p95"), _band(v), strict=True))})

    key = ["env", "algorithm", "dtype", "passes", "draw"]
    ckey = ["env", "algorithm", "dtype", "dpus", "passes", "draw"]
    for label, frame in ((RELEASED, paper_frame(drawn)), (WHAT_IF, what_if_frame(drawn))):
        pim = frame[frame.device == "pim"]
        for dtype, g in pim.groupby("dtype"):
            tag = label if dtype == PAPER_DTYPE else f"{label} {dtype.upper()}"
            add(f"{tag}: kernel speedup {lo}→{hi}",
                _ratios(g, key, "dpus", "kernel_s", lo, hi))
            add(f"{tag}: total speedup {lo}→{hi}", _ratios(g, key, "dpus", "total_s", lo, hi))
            both = frame[frame["dtype"] == dtype]
            for other in ("cpu", "gpu"):
                add(f"{tag}: {other.upper()}/PIM",
                    _ratios(both, ckey, "device", "total_s", other, "pim"))
            share = (g.kernel_s / g.total_s).groupby([g.env, g.dpus])
            for (env, dpus), v in share:
                if dpus in (lo, hi):
                    rows.append({"quantity": f"{tag}: kernel share of the PIM total, {dpus} "
                                 "DPUs", "env": env,
                                 **dict(zip(("p5", "p50", "p95"), _band(v), strict=True))})
    return markdown_table(pd.DataFrame(rows), 3)


def _parameters(p: Params, src: str, n_multi: int) -> dict:
    s, ma = p.scaling, p.multi_agent
    return {
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
        "PIM": f"{s.pim}, host {s.pim_host}",
        "PIM programs": f"the paper's: {PAPER_KERNEL} (workload.pim_kernel: {PAPER_KERNEL}, "
                        f"{PAPER_ALGORITHM} only); what-if: {WHAT_IF_KERNEL}, INT32 and FP32",
        "CPU baseline": f"compiled loop ({src}), one thread, scaled to {s.cpu}",
        "GPU baseline": f"{s.gpu}, tables on chip ({GPU_ONCHIP_LATENCY.value:g} ns, range "
                        f"{GPU_ONCHIP_LATENCY.range[0]:g}-{GPU_ONCHIP_LATENCY.range[1]:g})",
        "multi-agent": f"{ma.env}, {ma.agents} agents × all {n_multi:,} transitions × "
                       f"{ma.passes} passes, passes per round {ma.passes_per_round} "
                       f"(released kernel: {ma.passes}, one launch)",
        "bands": f"{s.bands} Latin-hypercube draws, seed {s.bands_seed}",
    }
