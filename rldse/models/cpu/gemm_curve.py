"""GEMM time on one core from a measured GEMM curve (rate by MLP layer shape and product),
or at the core's one matmul rate where there is no curve."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from rldse.models.cpu.spec import CpuSpec


def gemm_seconds(spec: CpuSpec, gemms: Sequence[tuple[str, int, int, int]]) -> float:
    """Seconds of GEMMs on one core, each given as (product, batch, inputs, outputs) of its
    layer (rldse.kernels.mlp.gemm): on the spec's measured curve, log time
    interpolated trilinearly in log batch, inputs and outputs; outside the grid the shape
    is clamped to it, and the time scaled by the flops above its top (the rate at the edge
    holds) but not below its bottom (thinner products are call- and output-bound). Where the
    spec has no curve, every GEMM runs at core_gflops."""
    if not gemms:
        return 0.0
    if not spec.gemm_curve:
        return sum(2.0 * b * i * o for _, b, i, o in gemms) / (spec.core_gflops * 1e9)
    return sum(_curve_seconds(spec.gemm_curve, g) for g in gemms)


@lru_cache(maxsize=8)
def _grids(curve: tuple) -> dict[str, tuple[list[np.ndarray], np.ndarray]]:
    """Per product: the grid's log axes and its log seconds."""
    out = {}
    for product in {c[0] for c in curve}:
        rows = [c for c in curve if c[0] == product]
        axes = [np.unique(np.log([r[k] for r in rows])) for k in (1, 2, 3)]
        table = np.full([len(a) for a in axes], np.nan)
        for _, b, i, o, gflops in rows:
            idx = tuple(int(np.searchsorted(a, np.log(v))) for a, v in zip(axes, (b, i, o),
                                                                           strict=True))
            table[idx] = np.log(2.0 * b * i * o / (gflops * 1e9))
        out[product] = (axes, table)
    return out


#: _curve_seconds' answers by (id of the curve, GEMM), each kept with its curve so the id
#: stays that curve's: a simulate prices the same few GEMMs in every pilot and run, and
#: hashing a measured curve (540 rows: 36 us) costs a tenth of interpolating it
_SECONDS: dict[tuple[int, tuple], tuple[tuple, float]] = {}
_SECONDS_MAX = 4_096


def _curve_seconds(curve: tuple, g: tuple[str, int, int, int]) -> float:
    key = (id(curve), g)
    hit = _SECONDS.get(key)
    if hit is not None and hit[0] is curve:
        return hit[1]
    seconds = _interpolated_seconds(curve, g)
    if len(_SECONDS) >= _SECONDS_MAX:
        _SECONDS.clear()
    _SECONDS[key] = (curve, seconds)
    return seconds


def _interpolated_seconds(curve: tuple, g: tuple[str, int, int, int]) -> float:
    product, *dims = g
    axes, table = _grids(curve)[product]
    logs = [float(np.clip(np.log(max(d, 1)), a[0], a[-1])) for d, a in zip(dims, axes,
                                                                          strict=True)]
    lo = [min(int(np.searchsorted(a, x, side="right")) - 1, len(a) - 2) for a, x in
          zip(axes, logs, strict=True)]
    w = [(x - a[k]) / (a[k + 1] - a[k]) for a, x, k in zip(axes, logs, lo, strict=True)]
    t = 0.0
    for corner in range(8):
        bits = [(corner >> j) & 1 for j in range(3)]
        weight = float(np.prod([wj if bj else 1 - wj for wj, bj in zip(w, bits, strict=True)]))
        if weight:
            t += weight * table[tuple(k + bj for k, bj in zip(lo, bits, strict=True))]
    above = np.exp(np.maximum(np.log(np.maximum(dims, 1)) - [a[-1] for a in axes], 0.0))
    return float(np.exp(t) * np.prod(above))
