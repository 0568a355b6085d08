"""Uncertainty bands: how much a Result moves when the assumed numbers move.

Every preset number that is UNVERIFIED or an assumption carries a ``range`` (the
registry checks this). ``bands`` samples all of them that a system uses at once, over
their ranges, with a seeded Latin hypercube (scipy.stats.qmc: every parameter's range is
covered evenly even for small N, which plain random sampling does not do), runs one
simulation per point with the same simulation seed, and reports p5 / p50 / p95 of every
numeric metric. Fields the spec sets itself (in its file or by ``--set``) are the user's
numbers, not assumptions, and are not varied; nor are numbers of presets a part names
(its host link), which a spec cannot override.

Deterministic: the same trace, spec, N and seed give the same bands, bit for bit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import qmc

from rldse.errors import RldseError
from rldse.models import PART_KINDS
from rldse.models.presets import get_preset
from rldse.sim import simulate
from rldse.sim.budget import Limits, check_runs, per_run_s
from rldse.system import parse_spec, resolve
from rldse.trace import Trace

#: (lower, upper) field pairs a spec validates as lower ≤ upper (idle ≤ full-load power):
#: a sampled value is clamped to its partner so independent draws stay valid specs.
AT_MOST = (("idle_w", "max_w"), ("dpu_idle_w", "dpu_w"), ("core_idle_w", "core_active_w"))
PERCENTILES = (5.0, 50.0, 95.0)


@dataclass(frozen=True)
class UncertainParam:
    """One varied number: its SystemSpec path, range, nominal value and why it is uncertain."""

    path: str  # e.g. 'gpu.idle_w'
    preset: str
    low: float
    high: float
    nominal: float
    integer: bool
    source: str

    def at(self, u: float) -> float | int:
        """The value at quantile ``u`` in [0, 1) of the range (integers rounded)."""
        value = self.low + u * (self.high - self.low)
        return round(value) if self.integer else float(value)


@dataclass(frozen=True)
class Bands:
    """p5 / p50 / p95 of every numeric metric over ``n`` sampled systems."""

    n: int
    seed: int
    params: tuple[UncertainParam, ...]
    points: np.ndarray  # n × len(params) sampled values
    metrics: dict[str, tuple[float, float, float]]
    runs: dict[str, np.ndarray]  # every metric's n values, in design order: two systems
    # sampled with the same parameters and seed pair up draw by draw

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "seed": self.seed, "method": "LatinHypercube (scipy.stats.qmc)",
                "params": [{"path": p.path, "preset": p.preset, "low": p.low, "high": p.high,
                            "nominal": p.nominal, "source": p.source} for p in self.params],
                "bands": {k: list(v) for k, v in self.metrics.items()}}

    def table(self, nominal: dict[str, float] | None = None) -> str:
        """The varied parameters, then metric  (nominal)  p5  p50  p95, as text; with the
        nominal run's metrics, a note where a band is lopsided about the nominal value and
        which parameters' ranges make it so."""
        lines = [f"uncertainty bands: {self.n} simulations, seed {self.seed}, Latin hypercube "
                 f"over {len(self.params)} parameters"]
        if not self.params:
            lines.append("  (nothing uncertain: every ranged number is set by the spec)")
        pw = max([len(p.path) for p in self.params] + [6])
        for p in self.params:
            lines.append(f"  {p.path:{pw}}  {_g(p.low):>10} – {_g(p.high):<10} "
                         f"(nominal {_g(p.nominal)}, {p.preset}{_end_note(p)})")
        nominal = nominal or {}
        width = max([len(k) for k in self.metrics] + [6])
        head = f"  {'metric':{width}}  " + (f"{'nominal':>12}  " if nominal else "")
        lines.append(head + f"{'p5':>12}  {'p50':>12}  {'p95':>12}")
        lopsided = []
        for key, (lo, mid, hi) in self.metrics.items():
            nom = f"{_g(nominal[key]):>12}  " if key in nominal else (" " * 14 if nominal else "")
            mark = ""
            if key in nominal and is_lopsided(nominal[key], (lo, mid, hi)):
                mark = "  *"
                lopsided.append(key)
            lines.append(f"  {key:{width}}  {nom}{_g(lo):>12}  {_g(mid):>12}  {_g(hi):>12}{mark}")
        if lopsided:
            ends = [p.path for p in self.params if _end_note(p)]
            lines.append(f"  * lopsided: the nominal value lies outside p5-p95 or nearer one "
                         f"end (the median is not the nominal result), for {len(lopsided)} "
                         "metrics" + (f"; ranges whose nominal sits near one end: "
                                      f"{', '.join(ends)}" if ends else ""))
        return "\n".join(lines)


def is_lopsided(nominal: float, band: tuple[float, float, float]) -> bool:
    """The nominal value outside [p5, p95], or more than three times farther from one
    end of it than from the other."""
    lo, _, hi = band
    if not lo <= nominal <= hi:
        return True
    below, above = nominal - lo, hi - nominal
    return max(below, above) > 3 * min(below, above) and hi > lo


def _end_note(p: UncertainParam) -> str:
    """', near the low/high end' where the nominal value sits in the outer fifth of the
    range: the draws then move the metric mostly one way."""
    u = (p.nominal - p.low) / (p.high - p.low) if p.high > p.low else 0.5
    return ", near the low end" if u < 0.2 else ", near the high end" if u > 0.8 else ""


def uncertain_params(spec: Any, trace: Trace) -> list[UncertainParam]:
    """Every ranged preset number of the system's parts the spec does not set itself, in
    registry order (the 'host' CPU's from the trace's fingerprint)."""
    out = []
    for kind, ref in spec.present().items():
        name = getattr(ref, "preset", None)
        if name is None or not PART_KINDS[kind].presets:
            continue
        preset = get_preset(kind, name, host=trace.meta.host)
        overrides = ref.overrides() if hasattr(ref, "overrides") else {}
        model = PART_KINDS[kind].spec
        for field in model.model_fields:
            p = preset.params.get(field)
            if p is None or p.range is None or field in overrides or p.range[0] == p.range[1]:
                continue
            integer = isinstance(p.value, int) and not isinstance(p.value, bool)
            out.append(UncertainParam(f"{kind}.{field}", name, float(p.range[0]),
                                      float(p.range[1]), float(p.value), integer, p.source))
    return out


def design(params: list[UncertainParam], n: int, seed: int) -> np.ndarray:
    """n × len(params) values: a seeded Latin hypercube scaled to each range."""
    if n < 1:
        raise RldseError(f"--bands {n}: must be at least 1")
    if not params:
        return np.empty((n, 0))
    unit = qmc.LatinHypercube(len(params), seed=seed).random(n)
    return np.array([[p.at(u) for p, u in zip(params, row, strict=True)] for row in unit])


def sampled_spec(spec: Any, trace: Trace, params: list[UncertainParam], values: np.ndarray):
    """``spec`` with each param set to its value (lower-of-a-pair fields clamped)."""
    raw = spec.model_dump(mode="json", exclude_none=True)
    chosen: dict[str, dict[str, Any]] = {}
    for p, v in zip(params, values, strict=True):
        kind, field = p.path.split(".", 1)
        chosen.setdefault(kind, {})[field] = int(v) if p.integer else float(v)
    for kind, fields in chosen.items():
        section = raw[kind]
        section.update(fields)
        preset = get_preset(kind, section["preset"], host=trace.meta.host)
        for low, high in AT_MOST:
            if low not in fields and high not in fields:
                continue
            lo = section.get(low, getattr(preset.params.get(low), "value", None))
            hi = section.get(high, getattr(preset.params.get(high), "value", None))
            if lo is None or hi is None or lo <= hi:
                continue
            if low in fields:
                section[low] = hi
            else:
                section[high] = lo
    try:
        return parse_spec(raw, where="bands")
    except RldseError as exc:
        raise RldseError(f"{exc} (a sampled point of {', '.join(p.path for p in params)})") \
            from None


def bands(trace: Trace, spec: Any, n: int, seed: int = 0, limits: Limits | None = None) -> Bands:
    """Simulate ``n`` sampled systems (simulation seed ``seed`` each) and return the
    p5 / p50 / p95 of every numeric metric present in all of them. With ``limits`` the n
    runs are estimated first (one design's cost times n, rldse.sim.budget): refused over
    them, shown as a progress bar when long."""
    params = uncertain_params(spec, trace)
    shown = False
    if params and limits is not None:  # before the design: n points are n x params floats
        run_s = per_run_s(trace, resolve(spec, trace))
        shown = check_runs(run_s, n, limits, f"--bands {n}", "simulate", "simulations",
                           "fewer of them, or lower workload.env_steps")
    points = design(params, n, seed)
    runs: list[dict[str, float]] = []
    if not params:  # nothing varies: one simulation stands for all n
        runs = [numeric(simulate(trace, spec, seed=seed).metrics())] * n
    rows = points if params else []
    if shown:
        from tqdm import tqdm

        rows = tqdm(rows, desc="bands", unit="sim", file=sys.stderr, disable=None)
    for row in rows:
        result = simulate(trace, sampled_spec(spec, trace, params, row), seed=seed)
        runs.append(numeric(result.metrics()))
    keys = [k for k in runs[0] if all(k in r for r in runs)]
    values = {k: np.array([r[k] for r in runs], dtype=np.float64) for k in keys}
    metrics = {k: percentiles(v) for k, v in values.items()}
    return Bands(n, seed, tuple(params), points, metrics, values)


def percentiles(values: np.ndarray) -> tuple[float, float, float]:
    """p5, p50, p95 of ``values``, ordered even where interpolation rounds."""
    q = np.maximum.accumulate(np.percentile(np.asarray(values, np.float64), PERCENTILES))
    return float(q[0]), float(q[1]), float(q[2])


def numeric(metrics: dict[str, Any]) -> dict[str, float]:
    """The numeric metrics of a Result (flags and the seed left out)."""
    return {k: float(v) for k, v in metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and k != "seed"}


def _g(x: float) -> str:
    return f"{x:.4g}"
