"""One core's roofline of counted work, and the rules that rescale trace rows by it: the
part of a row's measured time the host's roofline explains scales with the work; the
rest (interpreter and call overhead) stays (rldse.models.cpu, the scheme and "GEMMs,
element-wise, caches")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from rldse.models.cpu.gemm_curve import gemm_seconds
from rldse.models.cpu.spec import CpuSpec
from rldse.models.ops import ArrayLike, OpColumns


def roofline_seconds(spec: CpuSpec, flops: ArrayLike, bytes_: ArrayLike,
                     touches: ArrayLike) -> np.ndarray:
    """One core: flops / FLOP/s + bytes / bandwidth + touches × random-access time.

    A sum, not max(flops, bytes): an operation's numpy kernels run one after another, so
    its compute-bound and memory-bound parts do not overlap (docs/architecture.md, "The CPU
    model")."""
    f = np.asarray(flops, dtype=np.float64)
    b = np.asarray(bytes_, dtype=np.float64)
    k = np.asarray(touches, dtype=np.float64)
    return (f / (spec.core_gflops * 1e9) + b / (spec.core_bw_gbs * 1e9)
            + k * spec.random_access_ns * 1e-9)


def rescaled(explained: np.ndarray, old_s: np.ndarray, new_s: np.ndarray) -> np.ndarray:
    """``explained`` seconds of a roofline time ``old_s`` at the roofline time ``new_s``:
    new × explained/old. explained ≤ old, so the share is at most 1, and a denormal
    ``old_s`` cannot overflow it the way new/old can (inf × 0 is NaN)."""
    share = np.divide(explained, old_s, out=np.zeros_like(old_s), where=old_s > 0)
    return new_s * share


def with_work(host: CpuSpec, ops: OpColumns, flops: ArrayLike, bytes_: ArrayLike,
              items: float) -> OpColumns:
    """Trace rows with their work replaced (another batch size, agent count, ...): the part
    of each row's measured time the host's roofline explains scales by new/old roofline;
    the rest (interpreter and call overhead) stays. The one rescaling rule every program
    uses when a knob changes an operation's size."""
    n = len(ops)
    flops = np.asarray(flops, np.float64) + np.zeros(n)
    bytes_ = np.asarray(bytes_, np.float64) + np.zeros(n)
    old = roofline_seconds(host, ops.flops, ops.bytes, ops.touches)
    new = roofline_seconds(host, flops, bytes_, ops.touches)
    explained = np.minimum(ops.host_dur_s, old)
    return OpColumns(phase=ops.phase, dtype=ops.dtype, items=np.full(n, float(items)),
                     flops=flops, bytes=bytes_, touches=ops.touches,
                     host_dur_s=ops.host_dur_s - explained + rescaled(explained, old, new))



def work_seconds(spec: CpuSpec, work: WorkLike) -> float:
    """One core's roofline of an analytic Work (rldse.kernels.mlp): the GEMMs by the curve,
    contiguous-vector bytes at the vector rate, cold state at the copy rate (core_bw_gbs),
    the other bytes at the element-wise rate, the other flops at core_gflops. A sum: the
    kernels run one after another (docs/architecture.md, "The CPU model")."""
    other = work.bytes - work.gemm_bytes - work.vector_bytes - work.cold_bytes
    return (gemm_seconds(spec, work.gemms)
            + (work.flops - work.gemm_flops) / (spec.core_gflops * 1e9)
            + work.vector_bytes / (spec.vector_gbs * 1e9)
            + work.cold_bytes / (spec.core_bw_gbs * 1e9)
            + other / (spec.elementwise_gbs * 1e9))


class WorkLike(Protocol):
    """An analytic Work (rldse.kernels.mlp.Work)."""

    flops: int
    bytes: int
    gemms: tuple[tuple[str, int, int, int], ...]
    gemm_bytes: int
    vector_bytes: int
    cold_bytes: int
    calls: int

    @property
    def gemm_flops(self) -> int: ...


@dataclass(frozen=True, eq=False)
class WorkColumns(OpColumns):
    """Trace rows rescaled to an analytic Work (``with_works``), with that Work's kernel
    classes, so ``op_seconds`` prices GEMMs, element-wise, contiguous and cold-state work
    each at its own rate. ``flops`` and ``bytes`` stay the trace's counts (scaled by the
    formulas' ratio), what other parts' models read."""

    gemm_host_s: np.ndarray  # float64: the GEMMs on the capture host's curve
    other_flops: np.ndarray  # float64: flops outside the GEMMs
    elementwise_bytes: np.ndarray  # float64: bytes of element-wise kernels
    vector_bytes: np.ndarray  # float64: bytes of contiguous kernels (Adam, Polyak)
    cold_bytes: np.ndarray  # float64: state read from memory
    #: the distinct Works the rows do (their operators: a GPU prices each GEMM by shape)
    works: tuple[WorkLike, ...] = ()
    #: int64 per row: its Work in ``works``, -1 for a row that did none
    work_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def with_works(host: CpuSpec, ops: OpColumns, new: WorkLike | Sequence[WorkLike],
               old: WorkLike | Sequence[WorkLike], items: ArrayLike,
               did: np.ndarray | None = None) -> WorkColumns:
    """Trace rows measured doing ``old`` (one Work, or one per row), rescaled to ``new``
    (another batch, network shape, ...): the part of each row's time the host's roofline
    of ``old`` explains (``work_seconds``) scales by new/old roofline; the rest
    (interpreter and call overhead) stays, plus the host's numpy call cost for each call
    ``new`` adds (or less for each it drops). ``did``: the rows that did the work (others,
    e.g. exploring acts, did none and stay as they are). The rows' flops and bytes become
    the trace's counts × new/old formula counts (unchanged at the trace's own shape). The
    rescaling rule for work the formulas count exactly; ``with_work`` is the one for bare
    flops and bytes."""
    n = len(ops)
    mask = np.ones(n, bool) if did is None else np.asarray(did, bool)
    news, olds = _per_row(new, n), _per_row(old, n)
    memo: dict[int, tuple[float, ...]] = {}  # by identity: rows share Work objects, and
    # hashing a Work (its GEMM tuples) per row costs more than the lookup saves

    def cols(w: WorkLike) -> tuple[float, ...]:
        key = id(w)
        if key not in memo:
            ew = w.bytes - w.gemm_bytes - w.vector_bytes - w.cold_bytes
            memo[key] = (work_seconds(host, w), w.calls, w.flops, w.bytes,
                         gemm_seconds(host, w.gemms), w.flops - w.gemm_flops, ew,
                         w.vector_bytes, w.cold_bytes)
        return memo[key]

    distinct = list({id(w): w for w in news}.values())
    position = {id(w): j for j, w in enumerate(distinct)}
    work_index = np.where(mask, np.array([position[id(w)] for w in news], np.int64)
                          .reshape(-1), -1) if n else np.zeros(0, np.int64)
    new_c = np.array([cols(w) for w in news], np.float64).reshape(-1, 9) * mask[:, None]
    old_c = np.array([cols(w) for w in olds], np.float64).reshape(-1, 9) * mask[:, None]
    r_new, r_old = new_c[:, 0], old_c[:, 0]
    calls_s = (new_c[:, 1] - old_c[:, 1]) * (host.numpy_call_ns or 0.0) * 1e-9
    explained = np.minimum(ops.host_dur_s, r_old)
    dur = np.maximum(ops.host_dur_s - explained + rescaled(explained, r_old, r_new) + calls_s,
                     0.0)

    def counted(column: np.ndarray, k: int) -> np.ndarray:
        """The trace's count × new/old formula count (the new count where old has none)."""
        ratio = np.divide(new_c[:, k], old_c[:, k], out=np.zeros(n), where=old_c[:, k] > 0)
        return np.where(~mask, column, np.where(old_c[:, k] > 0, column * ratio, new_c[:, k]))

    return WorkColumns(phase=ops.phase, dtype=ops.dtype,
                       items=np.where(mask, np.zeros(n) + items, ops.items),
                       flops=counted(ops.flops, 2), bytes=counted(ops.bytes, 3),
                       touches=ops.touches, host_dur_s=dur, gemm_host_s=new_c[:, 4],
                       other_flops=new_c[:, 5], elementwise_bytes=new_c[:, 6],
                       vector_bytes=new_c[:, 7], cold_bytes=new_c[:, 8],
                       works=tuple(distinct), work_index=work_index)


def _per_row(work: WorkLike | Sequence[WorkLike], n: int) -> list[WorkLike]:
    """One Work per row; a single Work stands for every row (without a per-row loop)."""
    if not isinstance(work, Sequence):
        return [work] if n else []
    if len(work) != n:
        raise ValueError(f"{len(work)} works for {n} rows")
    return list(work)


def rows_roofline_s(spec: CpuSpec, ops: OpColumns, gemm_s: ArrayLike | None = None
                    ) -> np.ndarray:
    """One core's roofline of trace rows: rows carrying their work (``WorkColumns``) each
    kernel class at its own rate, their GEMMs taking ``gemm_s`` (default: on the capture
    host's curve, ``gemm_host_s``); other rows ``roofline_seconds``."""
    if not isinstance(ops, WorkColumns):
        return roofline_seconds(spec, ops.flops, ops.bytes, ops.touches)
    gemm = ops.gemm_host_s if gemm_s is None else np.asarray(gemm_s, dtype=np.float64)
    return (gemm + ops.other_flops / (spec.core_gflops * 1e9)
            + ops.elementwise_bytes / (spec.elementwise_gbs * 1e9)
            + ops.vector_bytes / (spec.vector_gbs * 1e9) + ops.cold_bytes / (spec.core_bw_gbs * 1e9)
            + ops.touches * spec.random_access_ns * 1e-9)


def framework_s(host: CpuSpec, ops: OpColumns) -> np.ndarray:
    """The part of each row's measured time its work does not explain on the capture
    host's roofline (``rows_roofline_s``): interpreter, framework and call overhead."""
    return ops.host_dur_s - np.minimum(ops.host_dur_s, rows_roofline_s(host, ops))
