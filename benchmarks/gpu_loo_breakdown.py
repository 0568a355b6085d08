"""Where the leave-one-GPU-out GPU model misses NeuSight's large GEMMs (``rldse validate
external``, regime "linear+bmm, all dims >= 512"): each GPU's rows split by operator, by
whether nn.Linear's dimensions are multiples of 4 (m = B·M rows, k = in_features, n =
out_features; any of them not: "misaligned") and by the reduction dimension k, with the
achieved TFLOP/s and the median error of the shipped model's LOO prediction.

It also prints the what-if of one candidate model the breakdown suggests: misaligned
nn.Linear on Pascal (sm_6x, whose cuBLAS runs such shapes with Maxwell-era kernels)
bound by DRAM at a shared intensity of I flop/byte. With one other Pascal board to fit I
on, leave-one-GPU-out gives each Pascal board the other's I (P4 needs about 8, P100 at
least 10), so the what-if shows both values' medians: it does not bring both within 15 %.

    python benchmarks/gpu_loo_breakdown.py      # about 1 min (six least-squares fits)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rldse.external import neusight
from rldse.models import load_part

BIG = neusight.BIG_GEMM
PASCAL = ("p4", "p100-pcie")  # compute capability 6.x (spec sheets)
#: reduction dimension bins (k = in_features for nn.Linear)
K_BINS = [0, 2048, 8192, 32768, 1 << 20]


def loo_rows() -> pd.DataFrame:
    """NeuSight's and the H200's rows with the shipped model's LOO prediction (seconds)."""
    d = neusight.measurements()
    pred = neusight.rows()
    parts = []
    for name, preset in neusight.PRESETS.items():
        r = d[d["device"] == name].copy()
        r["preset"] = preset
        r["pred_s"] = pred.loc[pred["device"] == preset, "predicted"].to_numpy() * 1e-3
        parts.append(r)
    out = pd.concat(parts, ignore_index=True)
    out["flops"] = 2.0 * out["batch"] * out["m"] * out["n"] * out["k"]
    out["tflops"] = out["flops"] / out["measured_s"] / 1e12
    out["misaligned"] = (out["op"] == "linear") & (
        (out["m"] % 4 != 0) | (out["n"] % 4 != 0) | (out["k"] % 4 != 0))
    return out


def err(pred_s, measured_s) -> np.ndarray:
    return np.asarray(pred_s) / np.asarray(measured_s) - 1.0


def breakdown(big: pd.DataFrame) -> pd.DataFrame:
    big = big.assign(err=err(big["pred_s"], big["measured_s"]),
                     k_bin=pd.cut(big["k"], K_BINS))
    return (big.groupby(["preset", "op", "misaligned", "k_bin"], observed=True)
            .agg(rows=("err", "size"), tflops=("tflops", "median"), median_err=("err", "median"))
            .round(3))


def pascal_dram_whatif(big: pd.DataFrame, intensity: float) -> dict[str, float]:
    """Median |error| per Pascal board with misaligned linear priced at least flops /
    (I × mem_bw × mem_bw_efficiency)."""
    out = {}
    for preset in PASCAL:
        r = big[big["preset"] == preset]
        spec = load_part("gpu", preset)
        floor_s = r["flops"] / (intensity * spec.mem_bw_gbs * 1e9 * spec.mem_bw_efficiency)
        pred = np.where(r["misaligned"], np.maximum(r["pred_s"], floor_s), r["pred_s"])
        out[preset] = float(np.median(np.abs(err(pred, r["measured_s"]))))
    return out


def main() -> None:
    rows = loo_rows()
    big = rows[rows["regime"] == BIG]
    print("median |error|, large linear/bmm, leave-one-GPU-out:")
    for preset, r in big.groupby("preset"):
        print(f"  {preset:14s} {np.median(np.abs(err(r['pred_s'], r['measured_s']))):6.1%}"
              f"  ({len(r)} rows, {r['misaligned'].mean():.0%} misaligned linear)")
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(breakdown(big).to_string())
    for intensity in (8.0, 10.0):
        got = pascal_dram_whatif(big, intensity)
        print(f"what-if: misaligned linear on Pascal DRAM-bound at {intensity:g} flop/B: "
              + ", ".join(f"{p} {v:.1%}" for p, v in got.items()))


if __name__ == "__main__":
    main()
