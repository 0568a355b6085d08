"""Properties over any valid spec (hypothesis): costs never rise with bandwidth or clock,
never fall with work; energy is at least idle power × time; outputs are finite and ≥ 0."""

from __future__ import annotations

import math
from typing import Any

import annotated_types as at
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rldse.models import (
    CpuModel,
    GpuModel,
    LinkModel,
    OpColumns,
    OpMix,
    PimModel,
    TcamModel,
    list_presets,
    load_part,
)
from rldse.models.kinds import PART_KINDS
from rldse.models.ops import DTYPE_NAMES, PHASE_NAMES
from rldse.models.presets import _preset_kinds
from rldse.models.spec import PartSpec, build

SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])  # examples: the profile
PRESETS = {k: [n for kk, n in zip(list_presets()["kind"], list_presets()["name"], strict=True)
               if kk == k and n != "host"] for k in _preset_kinds()}


def bounds(model: type[PartSpec], field: str) -> tuple[float, float]:
    lo, hi = 0.0, math.inf
    for b in model.model_fields[field].metadata:
        if isinstance(b, at.Ge):
            lo = b.ge
        elif isinstance(b, at.Gt):
            lo = b.gt * (1 + 1e-9) or 1e-12
        elif isinstance(b, at.Le):
            hi = b.le
    return float(lo), float(hi)


def numeric_fields(model: type[PartSpec]) -> list[str]:
    return [f for f, info in model.model_fields.items() if info.annotation in (int, float)]


@st.composite
def specs(draw, kind: str) -> PartSpec:
    """A preset with any subset of its numeric fields redrawn anywhere in their allowed range
    (log-uniformly, so tiny and huge values both appear)."""
    model = PART_KINDS[kind].spec
    name = draw(st.sampled_from(PRESETS[kind]))
    values: dict[str, Any] = {}
    for field in numeric_fields(model):
        if not draw(st.booleans()):
            continue
        lo, hi = bounds(model, field)
        if model.model_fields[field].annotation is int:
            values[field] = draw(st.integers(int(math.ceil(lo)), int(min(hi, 2**40))))
        else:
            u = draw(st.floats(0, 1))
            floor = lo if lo > 0 else hi * 1e-9
            values[field] = 0.0 if lo == 0 and u < 0.05 else floor * (hi / floor) ** u
    base = load_part(kind, name).model_dump()
    merged = {**base, **values}
    for idle, top in (("idle_w", "max_w"), ("dpu_idle_w", "dpu_w"),
                      ("core_idle_w", "core_active_w")):
        if idle in merged:
            merged[idle] = min(merged[idle], 0.9 * merged[top])  # a GPU needs headroom
    if kind == "pim":
        total = merged["dimms"] * merged["ranks_per_dimm"] * merged["dpus_per_rank"]
        merged["faulty_dpus"] = min(merged["faulty_dpus"], total - 1)
    # any allowed number, however implausible: the properties hold for parts that do not exist
    return build(model, {**merged, "hypothetical": True}, kind)


def ops_columns(n: int = 8):
    counts = st.lists(st.floats(0, 1e12), min_size=n, max_size=n)
    return st.builds(
        lambda ph, dt, it, fl, by, to, du: OpColumns.of(ph, items=it, flops=fl, bytes=by,
                                                        touches=to, dtype=dt, host_dur_s=du),
        st.lists(st.sampled_from(PHASE_NAMES), min_size=n, max_size=n),
        st.lists(st.sampled_from(DTYPE_NAMES), min_size=n, max_size=n),
        st.lists(st.floats(0, 1e6), min_size=n, max_size=n), counts, counts,
        st.lists(st.floats(0, 1e9), min_size=n, max_size=n),
        st.lists(st.floats(0, 100), min_size=n, max_size=n))


def raised(spec: PartSpec, field: str, factor: float) -> PartSpec:
    """The same spec with ``field`` multiplied by ``factor`` ≥ 1 (capped at its bound)."""
    hi = bounds(type(spec), field)[1]
    return build(type(spec), {**spec.model_dump(), field: min(getattr(spec, field) * factor, hi)},
                 "t")


def scaled(ops: OpColumns, k: float, **fields: bool) -> OpColumns:
    return OpColumns(**{f: (getattr(ops, f) * k if fields.get(f) else getattr(ops, f))
                        for f in ("phase", "dtype", "items", "flops", "bytes", "touches",
                                  "host_dur_s")})


def ok(x) -> bool:
    a = np.asarray(x, dtype=np.float64)
    return bool(np.all(np.isfinite(a)) and np.all(a >= 0))


def le(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return bool(np.all(a <= b * (1 + 1e-9) + 1e-300))


factors = st.floats(1, 100)


# ---- CPU ---------------------------------------------------------------------------------

@SETTINGS
@given(specs("cpu"), specs("cpu"), ops_columns(), factors,
       st.sampled_from(["clock_mhz", "mem_bw_gbs", "flops_per_cycle", "ipc_factor",
                        "mem_parallelism", "blas_efficiency", "dram_efficiency"]))
def test_cpu_faster_target_never_costs_more(target, host, ops, f, field):
    t = CpuModel(target, host).op_seconds(ops)
    assert ok(t)
    assert le(CpuModel(raised(target, field, f), host).op_seconds(ops), t)


@SETTINGS
@given(specs("cpu"), specs("cpu"), ops_columns(), factors)
def test_cpu_more_work_never_costs_less(target, host, ops, k):
    model = CpuModel(target, host)
    t = model.op_seconds(ops)
    # a longer measurement, or the same operation with k times its work and its time
    assert le(t, model.op_seconds(scaled(ops, k, host_dur_s=True)))
    assert le(t, model.op_seconds(scaled(ops, k, host_dur_s=True, flops=True, bytes=True,
                                         touches=True)))
    r = model.roofline_seconds(ops.flops, ops.bytes, ops.touches)
    assert ok(r)
    for field in ("flops", "bytes", "touches"):
        more = scaled(ops, k, **{field: True})
        assert le(r, model.roofline_seconds(more.flops, more.bytes, more.touches))


@SETTINGS
@given(specs("cpu"), st.floats(0, 1e4), st.floats(0, 1))
def test_cpu_energy_at_least_idle(spec, wall, u):
    model = CpuModel(spec, spec)
    e = model.energy(u * wall * model.lanes, wall).joules
    assert ok(e) and e >= model.idle_w * wall * (1 - 1e-12)
    assert ok(model.dram_energy(1e9).joules)


# ---- GPU ---------------------------------------------------------------------------------

@SETTINGS
@given(specs("gpu"), specs("link"), ops_columns(), st.integers(0, 20), factors,
       st.sampled_from(["mem_bw_gbs", "fp32_tflops", "fp64_tflops", "int32_tops"]))
def test_gpu_faster_part_never_costs_more(spec, link, ops, layers, f, field):
    t = GpuModel(spec, link).op_times(ops, layers).wall_s
    assert ok(t)
    assert le(GpuModel(raised(spec, field, f), link).op_times(ops, layers).wall_s, t)
    c = GpuModel(spec, link).copy_times([0, 1e3, 1e9]).wall_s
    assert ok(c) and le(GpuModel(spec, raised(link, "bandwidth_gbs", f)).copy_times(
        [0, 1e3, 1e9]).wall_s, c)


@SETTINGS
@given(specs("gpu"), specs("link"), ops_columns(), st.integers(0, 20), factors,
       st.sampled_from(["flops", "bytes", "touches"]))
def test_gpu_more_work_never_costs_less(spec, link, ops, layers, k, field):
    model = GpuModel(spec, link)
    t = model.op_times(ops, layers)
    more = model.op_times(scaled(ops, k, **{field: True}), layers)
    assert le(t.device_s, more.device_s) and le(t.wall_s, more.wall_s)
    deeper = model.op_times(ops, layers + 1)
    assert le(t.host_s, deeper.host_s) and le(t.wall_s, deeper.wall_s)
    s = model.sumtree_time(32, 2**16)
    assert ok(s.wall_s) and s.wall_s <= model.sumtree_time(32 * k, 2**16 * k).wall_s * (1 + 1e-12)


@SETTINGS
@given(specs("gpu"), st.floats(0, 1e4), st.floats(0, 1))
def test_gpu_energy_at_least_idle(spec, wall, u):
    model = GpuModel(spec, load_part("link", spec.host_link))
    e = model.energy(u * wall, wall).joules
    assert ok(e) and e >= model.idle_w * wall * (1 - 1e-12)


# ---- PIM ---------------------------------------------------------------------------------

mixes = st.builds(OpMix, add=st.floats(0, 100), mul=st.floats(0, 10), div=st.floats(0, 2),
                  native=st.floats(1, 100))


@SETTINGS
@given(specs("pim"), mixes, st.sampled_from(["int32", "int64", "fp32", "fp64"]),
       st.floats(0, 1e7), st.floats(0, 256), st.integers(1, 24), factors)
def test_pim_kernel_monotone(spec, mix, dtype, items, mram, tasklets, k):
    model = PimModel(spec)
    t = model.kernel_seconds(items, mix, dtype, mram_read_bytes_per_item=mram, tasklets=tasklets)
    assert ok(t)
    assert le(PimModel(raised(spec, "clock_mhz", k)).kernel_seconds(
        items, mix, dtype, mram_read_bytes_per_item=mram, tasklets=tasklets), t)
    if tasklets < 24:
        assert le(model.kernel_seconds(items, mix, dtype, mram_read_bytes_per_item=mram,
                                       tasklets=tasklets + 1), t)
    more = OpMix(mix.add * k, mix.mul * k, mix.div * k, mix.native * k)
    assert le(t, model.kernel_seconds(items * k, more, dtype, mram_read_bytes_per_item=mram * k,
                                      tasklets=tasklets))


@SETTINGS
@given(specs("pim"), st.floats(0, 1e8), st.floats(0, 1), factors,
       st.sampled_from(["serial", "parallel", "broadcast"]),
       st.sampled_from(["cpu_dpu_serial_gbs", "cpu_dpu_parallel_gbs", "cpu_dpu_broadcast_gbs",
                        "dpu_cpu_serial_gbs", "dpu_cpu_parallel_gbs"]))
def test_pim_transfers_monotone(spec, b, share, k, mode, field):
    model = PimModel(spec)
    n = max(1, int(share * spec.dpus))
    down = model.cpu_to_dpu_seconds(b, n, mode)
    up = model.dpu_to_cpu_seconds(b, n, "serial" if mode == "serial" else "parallel")
    assert ok(down) and ok(up)
    faster = PimModel(raised(spec, field, k))
    assert le(faster.cpu_to_dpu_seconds(b, n, mode), down)
    assert le(faster.dpu_to_cpu_seconds(b, n, "serial" if mode == "serial" else "parallel"), up)
    assert le(down, model.cpu_to_dpu_seconds(b * k, n, mode))
    assert le(down, model.cpu_to_dpu_seconds(b, min(spec.dpus, n + 1), mode))


@SETTINGS
@given(specs("pim"), st.floats(0, 1e15), st.floats(0, 1e4))
def test_pim_energy_at_least_idle(spec, instructions, wall):
    model = PimModel(spec)
    e = model.energy(instructions, wall).joules
    assert ok(e) and e >= model.idle_w * wall * (1 - 1e-12)


# ---- AM and links ------------------------------------------------------------------------

@SETTINGS
@given(specs("tcam"), st.floats(0, 1e9), st.floats(0, 1e6), st.floats(0, 1e4), factors)
def test_am_monotone_and_energy_at_least_leakage(spec, searches, rows, wall, k):
    model = TcamModel(spec)
    outs = [model.sample_seconds(searches, 0, 0), model.search_joules(searches),
            model.write_seconds(rows), model.write_joules(rows)]
    more = [model.sample_seconds(searches * k, 0, 0), model.search_joules(searches * k),
            model.write_seconds(rows * k), model.write_joules(rows * k)]
    assert all(ok(o) for o in outs) and all(le(a, b) for a, b in zip(outs, more, strict=True))
    e = model.energy(searches, rows, wall).joules
    assert ok(e) and e >= model.idle_w * wall * (1 - 1e-12)


@SETTINGS
@given(specs("link"), st.floats(0, 1e12), factors)
def test_link_monotone(spec, b, k):
    t = LinkModel(spec).transfer_seconds(b)
    assert ok(t)
    assert le(LinkModel(raised(spec, "bandwidth_gbs", k)).transfer_seconds(b), t)
    assert le(t, LinkModel(spec).transfer_seconds(b * k))


@pytest.mark.parametrize("byte_count", [5e-324, 1e-310, 2.2e-308])
def test_cpu_denormal_work_costs_finite(byte_count):
    """A row whose roofline time is denormal (a subnormal byte count, no measured time)
    costs a finite, non-negative time: the measured share of the host's roofline is
    rescaled, never new/old (which overflows to inf, and inf × 0 is NaN)."""
    spec = load_part("cpu", "xeon-silver-4110")
    host = load_part("cpu", "xeon-silver-4110", mem_latency_ns=0.0)
    ops = OpColumns.of(["act"] * 2, items=[0, 0], flops=[0, 0], bytes=[byte_count, 0],
                       touches=[1, 0], dtype=["fp32"] * 2, host_dur_s=[0, 0])
    assert ok(CpuModel(spec, host).op_seconds(ops))
