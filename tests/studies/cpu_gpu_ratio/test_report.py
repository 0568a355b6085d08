"""The CPU/GPU-ratio study's claims: consistency checks against rldse's own knee and
bottleneck labels, the optimum's move judged per paired draw, and rows with nothing
published said to be so."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rldse.search import load_study_file
from rldse.sim.bands import uncertain_params
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[3]


def test_cpu_gpu_ratio_claims_say_what_they_compare(ratio_out):
    claims = pd.read_csv(ratio_out / "claims.csv").set_index("claim")
    assert set(claims.columns) >= {"kind", "published", "p5", "p50", "p95", "verdict", "reason"}
    pong = claims.loc["ALE/Pong-v5: steps per joule peaks near the analytic knee (consistency: "
                      "optimal actors per GPU against rldse's own knee)"]
    assert pong.p5 <= pong.p50 <= pong.p95
    rises = claims.loc["ALE/Pong-v5: throughput rises with actors until the GPU-side learner "
                       "saturates (consistency: rldse's bottleneck label)"]
    assert rises.verdict == "reproduced"
    # rldse against itself (its knee, its bottleneck label) is never called a reproduction;
    # rows with nothing published to compare with say so
    assert (claims[claims.index.str.contains("consistency")].kind == "consistency").all()
    assert pong.kind == rises.kind == "consistency"
    assert claims.kind.value_counts().to_dict() == {"consistency": 4, "prediction": 3,
                                                     "reproduction": 1}
    # the whole DGX-1's answer beside the one-GPU one, from whole_dgx1.csv's best row
    whole = pd.read_csv(ratio_out / "whole_dgx1.csv")
    pong_whole = whole[whole.environment == "ALE/Pong-v5"]
    assert set(pong_whole.gpus) == {8} and set(pong_whole.learner_gpus) == {8}
    best = pong_whole.loc[pong_whole.steps_per_joule.idxmax()]
    row = claims[claims.index.str.contains("whole DGX-1")]
    assert len(row) == 1 and row.iloc[0].kind == "prediction"
    assert row.iloc[0].p50 == best.cores_per_gpu
    assert "abstract" in claims[claims.kind == "reproduction"].published.iloc[0]
    unread = claims[claims.verdict == "not comparable"]
    assert (unread.kind == "prediction").all() and unread.published.str.contains(
        "nothing published can be read").all()
    cores = claims[claims.index.str.startswith("optimal CPU cores per V100")].iloc[0]
    assert cores.p50 == pong.p50 + 1


def test_cpu_gpu_ratio_optimum_move_is_judged_per_paired_draw(ratio_out):
    claims = pd.read_csv(ratio_out / "claims.csv").set_index("claim")
    # the optimum's move is judged per paired draw (the same hypercube row for both
    # environments) against "grows": at least one step of the ratio grid (16 -> 32: 2x)
    grows = claims.loc["the optimal ratio grows with the env step's cost (CartPole-v1 → "
                       "ALE/Pong-v5)"]
    assert "optimum ≥ 2, one step of the ratio grid" in grows.published
    assert grows.p5 <= grows.p50 <= grows.p95
    assert (grows.verdict == "reproduced") == (grows.p50 >= 2)
    assert grows.tolerance.startswith("p50 ≥ 2x")
    # pairing holds: both captures vary the same ranged numbers, so draw i is one system
    sf = load_study_file(ratio_out.parent / "search.yaml")
    spec = sf.search_space.spec({"workload.actors": 4, "workload.cores": 4}, where="test")
    assert uncertain_params(spec, sf.loaded_trace) == uncertain_params(
        spec, load_trace(ROOT / "traces" / "pong_ppo.parquet"))
