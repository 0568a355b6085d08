"""NeuSight's measured PyTorch operator latencies on five GPUs, and our H200 measured the
same way, predicted by ``rldse.models.gpu_ops`` from each GPU's spec-sheet preset.

Shared coefficients (``FITTED``: energy per flop, how far it follows the process node and
how much more unaligned operands cost, tile half-reuse, tile fill, achieved bandwidth
share, the NeuSight hosts' dispatch, the share of it before the kernel launch, and each
GEMM operator's dispatch weight) are fitted by least squares on log(predicted / measured) with a Cauchy loss over a seeded
subsample of ``FIT_ROWS`` rows: robust, so that kernels the library runs far from any
spec-sheet model (the P4's cuBLAS runs nn.Linear shapes whose reduction dimension is not
a multiple of 4 with Maxwell-era TN kernels at 1.0-1.6 TFLOP/s, against 4.3 for aligned
shapes) do not drag the coefficients every GPU shares. Rows are predicted leave-one-GPU-out: each of the
five GPUs with coefficients fitted on the other four. The H200 (``h200_ops.csv.gz``,
measured by us on 2026-11-26) is held out entirely: predicted with coefficients fitted
on all five. Every measurement is predicted (no subsample of the rows reported).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import cast

import numpy as np
import pandas as pd
from scipy.optimize import brentq, least_squares

from rldse.external import SUBSET, Dataset, register
from rldse.models import load_part, make_model
from rldse.models.cpu import CpuSpec
from rldse.models.gpu import GpuModel
from rldse.models.gpu_ops import F32_BYTES, call_s, dispatch_calls, gemm_device_s, operands_aligned

#: NeuSight's device names → rldse presets.
PRESETS = {"Tesla P4": "p4", "Tesla P100-PCIE-16GB": "p100-pcie", "Tesla T4": "t4",
           "Tesla V100-PCIE-32GB": "v100-pcie-32g", "NVIDIA A100-PCIE-40GB": "a100-pcie-40g",
           "NVIDIA H200": "h200-sxm"}
#: Shared coefficients fitted: name, start, lower, upper, scale.
FITTED = (("flop_energy_pj", 17.0, 1.0, 200.0, 10.0),
          ("node_power_exponent", 0.35, 0.0, 1.5, 0.1),
          ("unaligned_energy_share", 0.1, 0.0, 2.0, 0.1),
          ("gemm_tile_half", 11.0, 0.0, 500.0, 10.0), ("gemm_k_fill", 8.0, 0.0, 500.0, 10.0),
          ("mem_bw_efficiency", 0.8, 0.2, 1.0, 0.1),
          ("dispatch_s", 14e-6, 0.0, 1e-4, 1e-5), ("launch_share", 0.5, 0.0, 1.0, 0.1),
          ("linear_calls", 2.0, 0.5, 5.0, 1.0), ("bmm_calls", 1.8, 0.5, 5.0, 1.0),
          ("module_calls", 0.2, 0.0, 3.0, 0.1))
#: FITTED's leading entries that are GpuSpec fields of the same name
SPEC_FIELDS = 8
#: The CPU each GPU's host dispatched from (``GpuModel.issue_from``, one busy core). NeuSight
#: names none of its hosts (its repository at the commit shipped, README, collection
#: scripts and paper give GPUs, PyTorch 2.1.0 and CUDA 12.1 only): they are unknown, and
#: taken as the stand-in ``xeon-silver-4110`` (Skylake-SP at its 3.0 GHz single-core turbo,
#: single-thread speed 2,340; the range a 2016-2021 server core spans is 1,595, Broadwell-EP
#: at a 2.2 GHz base clock, to 2,856, Zen 2 at 3.4 GHz: ``xeon-e5-2698-v4``, ``epyc-7742``).
#: Same-architecture boards show the hosts differ: the P4's and the P100's floors (both
#: Pascal, same driver and PyTorch) are 26.5 and 44.8 µs for one add. The H200's host is
#: its own preset, inferred from its fingerprint.
STAND_IN_HOST = "xeon-silver-4110"
HOSTS = {**{device: STAND_IN_HOST for device in PRESETS if device != "NVIDIA H200"},
         "NVIDIA H200": "xeon-platinum-8570"}
#: Operators NeuSight called through an nn.Module (its collect.py: ``torch.nn.ReLU()``; add,
#: mul, tanh and bmm as torch functions); the H200 was measured with ``torch.relu``
#: (benchmarks/external/gpu_measure.py). nn.Linear is a module in both, inside linear's weight.
MODULE_OPS = {device: ("relu",) for device in PRESETS if device != "NVIDIA H200"}
#: Rows (seeded subsample of the training GPUs) each fit uses: enough for 11 coefficients.
FIT_ROWS = 20000
SEED = 0
ELEMENTWISE_OPERANDS = {"add": 2, "mul": 2, "relu": 1, "tanh": 1}
BIG_GEMM = "linear+bmm, all dims >= 512"
OTHER_GEMM = "linear+bmm, other shapes"
#: BIG_GEMM's subsets (``rldse.external.SUBSET``): operands that can be loaded 16 bytes at a
#: time or not (``gpu_ops.operands_aligned``).
ALIGNED, UNALIGNED = "operands 16-byte aligned", "operands not 16-byte aligned"
BIG_EW = "element-wise >= 1 MB"
SMALL = "small shapes (per-call floor)"
#: SMALL again with each GPU's host dispatch scaled so its calibration row (the smallest
#: ``add``, one measurement of that host, as ``rldse calibrate gpu`` takes on a user's own
#: machine) is predicted exactly; the calibration row itself is not scored.
SMALL_CALIBRATED = "small shapes, host calibrated by one add"
#: GEMMs below this many flops and element-wise tensors below 1 MB: the per-call floor.
SMALL_GEMM_FLOPS = 2e7
BIG_TENSOR_BYTES = 1e6


def _data_path(name: str):
    return files("rldse.external") / "data" / name


@cache
def measurements() -> pd.DataFrame:
    """NeuSight's rows and the H200's, with GEMM dims (batch, m, n, k: batch × (m×k)·(k×n)),
    element-wise bytes moved, the regime, its subset and a case label."""
    cols = ["op", "device", "B", "M", "N", "K", "H", "latency_ms"]
    d = pd.concat([pd.read_csv(_data_path("neusight.csv.gz"), usecols=cols),
                   pd.read_csv(_data_path("h200_ops.csv.gz"), usecols=cols)],
                  ignore_index=True)
    lin = (d["op"] == "linear").to_numpy()
    gemm = d["op"].isin(["linear", "bmm"]).to_numpy()
    B, M, N, K, H = (d[c].to_numpy(np.float64) for c in "BMNKH")
    d["batch"], d["m"], d["n"], d["k"] = np.where(lin, 1, B), np.where(lin, B * M, M), K, N
    d["gemm"] = gemm
    tensor_b = F32_BYTES * B * H
    d["ew_bytes"] = np.where(gemm, 0.0, tensor_b * (d["op"].map(ELEMENTWISE_OPERANDS)
                                                     .fillna(0).to_numpy() + 1))
    flops = 2 * d["batch"] * d["m"] * d["n"] * d["k"]
    big = gemm & (d[["m", "n", "k"]].min(axis=1) >= 512).to_numpy()
    small = np.where(gemm, flops < SMALL_GEMM_FLOPS, tensor_b < BIG_TENSOR_BYTES)
    d["regime"] = np.select([big, small, gemm], [BIG_GEMM, SMALL, OTHER_GEMM], BIG_EW)
    d[SUBSET] = np.where(big, np.where(operands_aligned(d["k"], d["n"]), ALIGNED, UNALIGNED),
                           "")
    shape = np.where(gemm, d["B"].astype("Int64").astype(str) + "," + d["M"].astype("Int64")
                     .astype(str) + "," + d["N"].astype("Int64").astype(str) + "," +
                     d["K"].astype("Int64").astype(str),
                     d["B"].astype("Int64").astype(str) + "," + d["H"].astype("Int64").astype(str))
    d["case"] = d["op"] + " " + shape
    d["measured_s"] = d["latency_ms"] * 1e-3
    return d


def _model(device: str, x: np.ndarray) -> GpuModel:
    """The device's spec-sheet preset with shared coefficients ``x`` (order of FITTED)."""
    over = {name: float(v) for (name, *_), v in zip(FITTED[:SPEC_FIELDS], x[:SPEC_FIELDS],
                                                    strict=True)}
    over["op_dispatch_calls"] = {"linear": float(x[SPEC_FIELDS]),
                                 "bmm": float(x[SPEC_FIELDS + 1]),
                                 "module": float(x[SPEC_FIELDS + 2])}
    over["dispatch_core"] = STAND_IN_HOST  # the fitted dispatch_s is on NeuSight's hosts
    model = make_model(load_part("gpu", PRESETS[device], **over))
    model.issue_from(host_cpu(device))
    return model


@cache
def host_cpu(device: str) -> CpuSpec:
    """The CPU preset of the device's host (``HOSTS``)."""
    return cast(CpuSpec, load_part("cpu", HOSTS[device]))


def _columns(rows: pd.DataFrame) -> list[tuple[str, np.ndarray, dict[str, np.ndarray]]]:
    """Per device: its rows' positions and the numpy columns the predictor reads (taken out
    of pandas once, not at every step of a fit)."""
    out = []
    for device, idx in rows.groupby("device", sort=False).indices.items():
        r = rows.iloc[idx]
        out.append((device, idx, {c: r[c].to_numpy() for c in
                                  ("gemm", "batch", "m", "n", "k", "ew_bytes", "op")}))
    return out


def predict_s(rows: pd.DataFrame, x: np.ndarray, host_scale: float = 1.0) -> np.ndarray:
    """One eager call of each row, seconds: host dispatch (times ``host_scale``), kernel
    overhead and device work, by the same terms as ``GpuModel.op_cost`` (vectorized)."""
    return _predict(_columns(rows), len(rows), x, host_scale=host_scale)


def _predict(columns, n_rows: int, x: np.ndarray, gemm_term=None,
             host_scale: float = 1.0) -> np.ndarray:
    """``gemm_term(device, model, columns, work_s)``, where given, changes the GEMM device
    time (benchmarks/fidelity/gpu_loo_breakdown.py tries candidate terms through it)."""
    out = np.empty(n_rows)
    for device, idx, c in columns:
        gm = _model(device, x)
        s = gm.spec
        work, *_ = gemm_device_s(s, gm.peak_flops("fp32"), c["batch"], c["m"], c["n"], c["k"])
        if gemm_term is not None:
            work = gemm_term(device, gm, c, work)
        ew = c["ew_bytes"] / (s.mem_bw_gbs * 1e9 * s.mem_bw_efficiency)
        calls = dispatch_calls(s, c["op"], np.isin(c["op"], MODULE_OPS.get(device, ())))
        host = calls * gm.dispatch_s * host_scale
        out[idx] = call_s(host, s.launch_share * host,
                          s.kernel_overhead_s + np.where(c["gemm"], work, ew))
    return out


def fit(rows: pd.DataFrame) -> np.ndarray:
    """Shared coefficients fitted on ``rows`` (module docstring)."""
    rng = np.random.default_rng(SEED)
    sub = rows.iloc[rng.choice(len(rows), min(FIT_ROWS, len(rows)), replace=False)]
    measured = sub["measured_s"].to_numpy()
    start, lo, hi, scale = (np.array(c, float) for c in zip(*(f[1:] for f in FITTED),
                                                               strict=True))
    columns = _columns(sub)
    res = least_squares(lambda x: np.log(_predict(columns, len(sub), x) / measured), start,
                        bounds=(lo, hi), x_scale=scale, loss="cauchy", f_scale=0.05)
    return res.x


@cache
def _fits() -> dict[str, tuple[float, ...]]:
    """Coefficients per held-out device: each NeuSight GPU's from the other four, the
    H200's from all five."""
    d = measurements()
    neusight = d[d["device"] != "NVIDIA H200"]
    out = {dev: tuple(fit(neusight[neusight["device"] != dev]))
           for dev in neusight["device"].unique()}
    out["NVIDIA H200"] = tuple(fit(neusight))
    return out


def calibration_row(r: pd.DataFrame) -> int:
    """Index label of one device's calibration row: its ``add`` on the fewest bytes."""
    return int(r.loc[r["op"] == "add", "ew_bytes"].idxmin())


def host_scale(row: pd.DataFrame, x: np.ndarray) -> float:
    """Factor on one device's host dispatch that predicts its calibration ``row`` (a
    one-row frame) exactly (the prediction rises monotonically with it, from the device
    time alone at 0)."""
    measured = float(row["measured_s"].iloc[0])
    return float(brentq(lambda f: predict_s(row, x, f)[0] - measured, 0.0, 100.0))


def _frame(device: str, r: pd.DataFrame, regime, subset, predicted_s: np.ndarray
           ) -> pd.DataFrame:
    return pd.DataFrame({
        "dataset": "neusight", "device": PRESETS[device], "regime": regime,
        "case": r["case"], "measured": r["latency_ms"].to_numpy(),
        "predicted": predicted_s * 1e3, "unit": "ms",
        SUBSET: subset})


def rows() -> pd.DataFrame:
    d = measurements()
    parts = []
    for device, fitted in _fits().items():
        x = np.array(fitted)
        r = d[d["device"] == device]
        parts.append(_frame(device, r, r["regime"], r[SUBSET], predict_s(r, x)))
        calibration = calibration_row(r)
        small = r[(r["regime"] == SMALL) & (r.index != calibration)]
        parts.append(_frame(device, small, SMALL_CALIBRATED, "",
                            predict_s(small, x, host_scale(r.loc[[calibration]], x))))
    return pd.concat(parts, ignore_index=True)


def same_path() -> str:
    """The validation's vectorized predictor against ``GpuModel.op_cost`` (``gpu_ops.price``,
    the function ``rldse simulate`` prices every traced operator with) on one row per
    operator and device, with each device's fitted coefficients: the table checks the
    simulator's path only while they agree."""
    d, worst, n = measurements(), 0.0, 0
    for device, fitted in _fits().items():
        x = np.array(fitted)
        r = d[d["device"] == device].groupby("op").head(1)
        gm = _model(device, x)
        for (_, row), pred in zip(r.iterrows(), predict_s(r, x), strict=True):
            cost = gm.op_cost(row["op"], row["case"].split(" ")[1])
            module_s = (gm.spec.op_dispatch_calls.get("module", 0.0) * gm.dispatch_s
                        if row["op"] in MODULE_OPS.get(device, ()) else 0.0)
            host_s = cost.host_s + module_s
            expected = float(call_s(host_s, gm.spec.launch_share * host_s, cost.device_s))
            worst, n = max(worst, abs(pred / expected - 1.0)), n + 1
    verdict = "the same path" if worst <= 1e-9 else "NOT the same path"
    return (f"neusight: predictor against gpu_ops.price (what rldse simulate prices each "
            f"traced operator with) on {n} rows: largest relative difference {worst:.1e}, "
            f"{verdict}")


register(Dataset(
    name="neusight",
    description="PyTorch linear, bmm and element-wise ops, one eager FP32 call each, on P4, "
                "P100 PCIe, T4, V100 PCIe 32 GB, A100 PCIe 40 GB (leave-one-GPU-out) and "
                "H200 SXM (held out: fitted on all five)",
    citation="Lee et al., 'Forecasting GPU Performance for Deep Learning Training and "
             "Inference', ASPLOS 2025, doi 10.1145/3669940.3707265 (sitar-lab/NeuSight, "
             "MIT); H200: rldse's own measurement, 2026-11-26",
    rows=rows,
    part_of=lambda device: f"gpu/{device}", same_path=same_path))
