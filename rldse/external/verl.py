"""Data set "verl": verl's published step times of DAPO on Qwen2.5-Math-7B on 32 to 128
NVIDIA H20, colocated against fully asynchronous (data/verl_fully_async_7b_h20.csv;
data/README.md), predicted by ``rldse simulate`` on the llm_rl family.

Every row is simulated through ``rldse.simulate`` with a system built from its columns
(``system_for``) and the settings the page and verl's published fully_async scripts give
(``SETTING``; verl-project/verl verl/experimental/fully_async_policy/shell/
dapo_7b_math_fsdp2_*.sh and one_step_off_policy/shell/dapo_7b_math_fsdp2_colocate.sh):
rollout TP 4, Ulysses sequence parallel 4, vLLM at 80 % of GPU memory, micro-batches of
2 × (2K + 28K) tokens per GPU; colocated runs offload the trainer's parameters and optimizer
and recompute the old policy's log-probs, async runs keep them on the GPU and use the
rollout's log-probs; DAPO has no reference model (no KL).

The responses' mean length is not published. It is inferred from the 32-GPU colocated
row alone (its step time, by bisection through the same simulation); every other row is
then predicted from its own columns with nothing else fitted. That row is reported under
the regime "inferred: mean length", not among the predictions. The mean prompt length of
dapo-math-17k with DAPO's template is not published either: ``PROMPT_TOKENS`` (an
assumption) stands for it. The host CPU of the H20 nodes is not named: a 2-socket
Xeon Platinum 8570 stands for it (it prices only the offloaded optimizer).

Rows: each distinct configuration once (the page's 128-GPU mode table repeats rows of the
placement and staleness tables), regime "step time" with the table as subset; the
async/colocated speed-up at 32, 64 and 128 GPUs as regime "speed-up" (measured and
predicted ratios, colocated step over async step).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from rldse.external import ROW_COLUMNS, SUBSET, Dataset, register

TABLE = Path(__file__).with_name("data") / "verl_fully_async_7b_h20.csv"
MODEL = "qwen2.5-math-7b"
#: dapo-math-17k prompts in DAPO's template, mean tokens: assumption (the problem
#: statements are one to a few sentences; the template adds ≈60 tokens), not published.
PROMPT_TOKENS = 200
#: max_response_length of every row: 28K = 28 × 1024 tokens (the scripts' 1024 * 28).
RESPONSE_MAX = 28 * 1024
GPUS_PER_NODE = 8
#: Settings of every row, and of each mode (module docstring).
SETTING: dict[str, Any] = {
    "model": MODEL, "prompts_per_step": 512, "responses_per_prompt": 16,
    "train_batch": 32, "prompt_tokens": PROMPT_TOKENS, "rollout_tp": 4, "train_cp": 4,
    "gpu_memory_utilization": 0.8, "max_tokens_per_gpu": 2 * (2048 + RESPONSE_MAX),
    "ref_logprob": False, "steps": 1}
COLOCATED = {"offload": True, "old_logprob": True}
ASYNC = {"offload": False, "old_logprob": False, "require_batches": 4,
         "trigger_parameter_sync_step": 4}
#: The H20 nodes: HGX H20 boards on NDR InfiniBand with one 400 Gb/s NIC per GPU, the HGX
#: reference design: an assumption (the page names neither; range 4-8 NICs, the hgx-h20
#: preset's), which moves only the cross-node collectives of a 7B model.
NODE = {"fabric": {"preset": "hgx-h20"}, "network": {"preset": "ib-ndr", "nics_per_node": 8}}
#: Mean response tokens searched for the 32-GPU colocated row's step time.
MEAN_RANGE = (50.0, 20_000.0)


def system_for(row: Any, mean_tokens: float) -> dict[str, Any]:
    """The SystemSpec (as a mapping) of one published row at ``mean_tokens``."""
    workload = {**SETTING,
                "response_tokens": {"mean": float(mean_tokens), "max": RESPONSE_MAX}}
    colocated = row.mode == "colocate sync"
    if colocated:
        workload.update(COLOCATED)
    else:
        workload.update(ASYNC, rollout_gpus=int(row.rollout_gpus),
                        staleness_threshold=float(row.staleness_threshold),
                        partial_rollout=bool(row.partial_rollout))
    return {"name": f"verl-h20-{int(row.gpus)}", "nodes": int(row.gpus) // GPUS_PER_NODE,
            **NODE, "cpu": {"preset": "xeon-platinum-8570", "sockets": 2},
            "gpu": {"preset": "h20", "count": GPUS_PER_NODE},
            "placement": {"act": "gpu", "learn": "gpu",
                          "protocol": "colocated" if colocated else "async"},
            "workload": workload}


#: The llm_rl trace the rows replay (a copy of traces/llm_rl_grpo.parquet, rldse's GRPO
#: capture): it gives the loop; every knob above overrides its shape.
TRACE = Path(__file__).with_name("data") / "llm_rl_grpo.parquet"


@cache
def _trace():
    from rldse.workloads import open_trace

    return open_trace(TRACE)


#: What the length is inferred from: the anchor row's step time (the default), or its
#: update_actor time (a sensitivity check: the phase that follows most directly from the
#: tokens) against the simulated trainer time.
ANCHORS = {"step": ("step_s", "step_s"), "update": ("update_actor_s", "train_s")}


def predict_s(row: Any, mean_tokens: float, part: str = "step_s") -> float:
    from rldse import simulate
    from rldse.system import parse_spec

    result = simulate(_trace(), parse_spec(system_for(row, mean_tokens), where=""))
    return float(result.breakdown_s[part])


def predict_step_s(row: Any, mean_tokens: float) -> float:
    return predict_s(row, mean_tokens)


def infer_mean_tokens(row: Any, anchor: str = "step") -> float:
    """The mean response length at which ``row`` (the 32-GPU colocated one) is predicted
    at its measured time (``ANCHORS``): bisection on a log scale (time grows with length)."""
    column, part = ANCHORS[anchor]
    lo, hi = MEAN_RANGE
    for _ in range(16):
        mid = (lo * hi) ** 0.5
        if predict_s(row, mid, part) < getattr(row, column):
            lo = mid
        else:
            hi = mid
    return (lo * hi) ** 0.5


def table() -> pd.DataFrame:
    return pd.read_csv(TABLE)


@cache
def predictions(anchor: str = "step") -> tuple[float, pd.DataFrame]:
    """(inferred mean tokens, every distinct row with its prediction)."""
    t = table()
    row = next(t[(t["mode"] == "colocate sync") & (t["gpus"] == 32)].itertuples())
    mean = infer_mean_tokens(row, anchor)
    # partial rollout only acts with a staleness threshold above 0 (fully_async.md)
    t = t.assign(colocated=t["mode"] == "colocate sync", partial_rollout=t[
        "partial_rollout"].fillna(False).astype(bool) & (t["staleness_threshold"] > 0))
    key = ["colocated", "gpus", "rollout_gpus", "staleness_threshold", "partial_rollout"]
    distinct = t.drop_duplicates(subset=key, keep="first").reset_index(drop=True)
    distinct["predicted_s"] = [predict_step_s(r, mean) for r in distinct.itertuples()]
    return mean, distinct


def case(r: Any) -> str:
    if r.mode == "colocate sync":
        return f"colocated {int(r.gpus)} GPUs"
    return (f"async {int(r.trainer_gpus)}:{int(r.rollout_gpus)} staleness "
            f"{r.staleness_threshold:g}{' partial' if r.partial_rollout else ''}")


def rows() -> pd.DataFrame:
    mean, d = predictions()
    out = []
    for r in d.itertuples():
        anchor = r.mode == "colocate sync" and r.gpus == 32
        regime = f"inferred: mean length {mean:,.0f} tokens" if anchor else "step time"
        out.append(("verl", "h20", regime, case(r), float(r.step_s), float(r.predicted_s),
                    "s/step", "" if anchor else r.table))
    for gpus in (32, 64, 128):
        colo = d[d["colocated"] & (d["gpus"] == gpus)].iloc[0]
        asyn = d[(d["mode"] == "fully_async_policy") & (d["gpus"] == gpus)].iloc[0]
        out.append(("verl", "h20", "speed-up", f"async/colocated {gpus} GPUs",
                    colo.step_s / asyn.step_s, colo.predicted_s / asyn.predicted_s,
                    "x", ""))
    return pd.DataFrame(out, columns=[*ROW_COLUMNS, SUBSET])


register(Dataset(
    name="verl",
    description="verl's DAPO step times on Qwen2.5-Math-7B, 32-128 H20 GPUs: colocated "
                "against fully async, the stream/staleness ablations, from the H20 preset "
                "and the model's config (mean length inferred from one row)",
    citation="verl-project/verl docs/advance/fully_async.md, 'Experiments' (Apache-2.0); "
             "see rldse/external/data/README.md",
    rows=rows,
    part_of=lambda device: f"gpu/{device}"))
