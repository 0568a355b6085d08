"""Where the leave-one-GPU-out GPU model misses NeuSight's large GEMMs (``rldse validate
external``, regime "linear+bmm, all dims >= 512"): each GPU's rows split by operator, by
whether nn.Linear's dimensions are multiples of 4 (m = B·M rows, k = in_features, n =
out_features; any of them not: "misaligned") and by the reduction dimension k, with the
achieved TFLOP/s and the median error of the shipped model's LOO prediction.

With ``--refit`` it also refits, leave-one-GPU-out, each candidate term the breakdown
suggests (``VARIANTS``: one extra shared coefficient on misaligned nn.Linear) and prints
the median |error| by board and regime: none brings the P4 within 15 %. On Pascal
(sm_6x) a coefficient only Pascal boards show is fitted, for a held-out Pascal board, on
the other one alone.

    python benchmarks/gpu_loo_breakdown.py [--refit]   # ~1 min (six fits); --refit ~4 more
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from rldse.external import neusight

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


#: Candidate terms, each one extra shared coefficient refitted leave-one-GPU-out: name ->
#: (start, lower, upper, scale, how GEMM work_s of misaligned nn.Linear changes).
VARIANTS = {
    "shared misalignment slowdown (all boards)":
        (0.1, 0.0, 3.0, 0.1, lambda pascal, s, flops, work, e: work * (1 + e)),
    "Pascal misalignment slowdown":
        (0.1, 0.0, 5.0, 0.1, lambda pascal, s, flops, work, e: work * (1 + e * pascal)),
    "Pascal misaligned DRAM-bound at I flop/B":
        (20.0, 2.0, 200.0, 5.0, lambda pascal, s, flops, work, e: np.maximum(
            work, pascal * flops / (e * s.mem_bw_gbs * 1e9 * s.mem_bw_efficiency))),
}


def _columns(rows: pd.DataFrame):
    out = []
    for device, idx in rows.groupby("device", sort=False).indices.items():
        c = {k: rows[k].to_numpy()[idx] for k in ("gemm", "batch", "m", "n", "k", "ew_bytes",
                                                  "op")}
        c["misaligned"] = (c["op"] == "linear") & (
            (c["m"] % 4 != 0) | (c["n"] % 4 != 0) | (c["k"] % 4 != 0))
        out.append((device, idx, c))
    return out


def _predict(variant: str, columns, n_rows: int, x: np.ndarray) -> np.ndarray:
    """neusight._predict with the variant's term on misaligned nn.Linear (x[-1])."""
    change = VARIANTS[variant][4]

    def term(device, gm, c, work):
        flops = 2.0 * c["batch"] * c["m"] * c["n"] * c["k"]
        pascal = float(neusight.PRESETS[device] in PASCAL)
        return np.where(c["misaligned"], change(pascal, gm.spec, flops, work, x[-1]), work)

    return neusight._predict(columns, n_rows, x[:-1], gemm_term=term)


def _fit(variant: str, rows: pd.DataFrame) -> np.ndarray:
    """neusight.fit with the variant's coefficient appended."""
    rng = np.random.default_rng(neusight.SEED)
    sub = rows.iloc[rng.choice(len(rows), min(neusight.FIT_ROWS, len(rows)), replace=False)]
    measured = sub["measured_s"].to_numpy()
    spec = [f[1:] for f in neusight.FITTED] + [VARIANTS[variant][:4]]
    start, lo, hi, scale = (np.array(c, float) for c in zip(*spec, strict=True))
    columns = _columns(sub)
    return least_squares(lambda x: np.log(_predict(variant, columns, len(sub), x) / measured),
                         start, bounds=(lo, hi), x_scale=scale, loss="cauchy",
                         f_scale=0.05).x


def refit(variant: str) -> pd.DataFrame:
    """Median |error| by board and regime with the variant refitted leave-one-GPU-out (the
    H200 fitted on all five, as ``rldse validate external`` does), and its coefficient."""
    d = neusight.measurements()
    train = d[d["device"] != "NVIDIA H200"]
    out = []
    for device in neusight.PRESETS:
        x = _fit(variant, train[train["device"] != device])
        r = d[d["device"] == device]
        e = np.abs(err(_predict(variant, _columns(r), len(r), x), r["measured_s"]))
        row = {"preset": neusight.PRESETS[device], "coefficient": round(float(x[-1]), 3)}
        row |= {regime: round(float(np.median(e[(r["regime"] == regime).to_numpy()])), 3)
                for regime in (BIG, neusight.OTHER_GEMM, neusight.BIG_EW, neusight.SMALL)}
        out.append(row)
    return pd.DataFrame(out)


def main(refit_variants: bool) -> None:
    rows = loo_rows()
    big = rows[rows["regime"] == BIG]
    print("median |error|, large linear/bmm, leave-one-GPU-out:")
    for preset, r in big.groupby("preset"):
        print(f"  {preset:14s} {np.median(np.abs(err(r['pred_s'], r['measured_s']))):6.1%}"
              f"  ({len(r)} rows, {r['misaligned'].mean():.0%} misaligned linear)")
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(breakdown(big).to_string())
    if refit_variants:
        for variant in VARIANTS:
            print(f"refitted leave-one-GPU-out with {variant}:")
            print(refit(variant).to_string(index=False))

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refit", action="store_true",
                        help="also refit each candidate term leave-one-GPU-out (~4 min)")
    main(parser.parse_args().refit)
