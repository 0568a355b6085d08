"""One framework operator of known shape on a GPU: the kernel model NeuSight's measurements
demand (``rldse validate external --dataset neusight``), shared by ``GpuModel.op_cost``
(``rldse parts cost``) and the validation, so both price an operator with the same code.

Per GPU only spec-sheet numbers enter; the shared coefficients are fitted once on
NeuSight's five GPUs. Four parts: the clock a board sustains under its power limit,
GEMMs as thread-block tiles in waves over the SMs, element-wise ops at achieved
bandwidth, and the eager per-call floor with the kernel overlapping the host's remaining
dispatch. Each, with its formula: docs/architecture.md, "The GPU kernel model".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rldse.errors import RldseError
from rldse.models.power import utilisation_power_w

if TYPE_CHECKING:
    from rldse.models.gpu import GpuModel, GpuSpec

#: Bytes of one FP32 element (the only dtype NeuSight measured; ``--dtype`` picks the peak).
F32_BYTES = 4

#: Widest global load a thread issues (LDG.128): an operand whose rows start 16 bytes apart
#: can be loaded a vector at a time, others one element at a time.
VECTOR_LOAD_BYTES = 16

#: Dynamic power of the same logic at the same clock, relative to TSMC 16 nm FinFET (16FF+).
#: TSMC's published iso-speed power reductions: 10FF 40 % below 16FF+, N7 40 % below 10FF
#: (so 0.36), N5 30 % below N7 (0.25; NVIDIA's 4N is an N5-family node); 12FFN is a 16 nm
#: optimisation (UNVERIFIED: taken as 0.8, TSMC quotes 12FFC ≈ 10-25 % below 16FFC);
#: Samsung 8N (GA102) UNVERIFIED at 0.6. Sources: TSMC technology pages (logic, 16/12/7/5
#: nm), https://www.tsmc.com/english/dedicatedFoundry/technology/logic.
PROCESS_POWER: dict[str, float] = {"16nm": 1.0, "12nm": 0.8, "8nm": 0.6, "7nm": 0.36,
                                   "4nm": 0.25}

#: Thread-block tiles (rows × columns of output) a GEMM may run with: CUTLASS's SGEMM
#: shapes, largest first (https://github.com/NVIDIA/cutlass/blob/main/media/docs/
#: efficient_gemm.md); cuBLAS's FP32 kernels use the same family.
GEMM_TILES: tuple[tuple[int, int], ...] = ((128, 128), (128, 64), (64, 64), (64, 32),
                                           (32, 32))

#: Model terms that may bind an operator's cost (``OpCost.bound``).
BOUNDS = ("compute", "memory", "waves/launch", "dispatch floor")


def power_limited_ops(spec: GpuSpec, energy_scale=1.0):
    """Operations per second the board's power above idle pays for at the node's energy
    per FP32 flop × ``energy_scale``, or at its base clock where that is more
    (docs/architecture.md, "The GPU kernel model"); other dtypes are taken at the same
    energy per op. Element-wise over arrays."""
    joules_per_op = spec.flop_energy_pj * 1e-12 * np.asarray(energy_scale) \
        * PROCESS_POWER[spec.process_node] ** spec.node_power_exponent
    base_ops = spec.fp32_tflops * 1e12 * spec.base_clock_mhz / spec.boost_clock_mhz
    return np.maximum(base_ops, (spec.max_w - spec.idle_w) / joules_per_op)


def sustained_clock_share(spec: GpuSpec, energy_scale=1.0):
    """Share of the boost clock a board sustains under full FP32 load whose energy per flop
    is ``energy_scale`` × the board's (docs/architecture.md, "The GPU kernel model");
    element-wise over arrays."""
    return np.minimum(1.0, power_limited_ops(spec, energy_scale) / (spec.fp32_tflops * 1e12))


def sustained_flops(spec: GpuSpec, peak_flops, energy_scale=1.0, tensor: bool = False):
    """Operations per second a full load of one kind sustains under the power limit:
    SIMT work (FP32, FP64, INT32 lanes) no more than the power above idle pays for at the
    energy per op of FP32 × ``energy_scale`` (``power_limited_ops``); tensor-core work
    (``tensor``: TF32) its peak at the clock the same FP32 load would sustain."""
    if tensor:
        return np.asarray(peak_flops) * sustained_clock_share(spec, energy_scale)
    return np.minimum(peak_flops, power_limited_ops(spec, energy_scale))


def tile_efficiency(spec: GpuSpec, tm: int, tn: int) -> float:
    """Share of its SM's FP32 peak a tm×tn tile's inner loop reaches: per k-step it issues
    F FMA instructions and F × gemm_tile_half / reuse others (shared-memory loads, address
    arithmetic, loop), reuse = tm·tn/(tm+tn). One scheduler issues one warp instruction
    per cycle; an FMA occupies its FP32 lanes 32 / fp32_lanes_per_scheduler cycles (c),
    so the cycles are max(c·F, F + others) and e = min(1, c · reuse / (reuse + half)):
    16-lane schedulers (Volta, Turing, GA100) hide the other instructions behind the FMAs,
    32-lane ones (Pascal, GA102, Hopper) pay for them."""
    reuse = tm * tn / (tm + tn)
    issue_cycles = 32.0 / spec.fp32_lanes_per_scheduler
    return min(1.0, issue_cycles * reuse / (reuse + spec.gemm_tile_half))


def operands_aligned(k, n, element_bytes: int = F32_BYTES):
    """Whether a GEMM's operands (batch × (m×k)·(k×n), row-major, as nn.Linear and bmm lay
    them out) have every row start on a 16-byte boundary: the m×k input and nn.Linear's n×k
    weight step k elements per row, bmm's k×n operand and the output n; element-wise."""
    per_vector = VECTOR_LOAD_BYTES // element_bytes
    return (np.asarray(k) % per_vector == 0) & (np.asarray(n) % per_vector == 0)


def gemm_device_s(spec: GpuSpec, peak_flops: float, batch, m, n, k,
                  tensor: bool = False) -> tuple[np.ndarray, ...]:
    """Device seconds of GEMMs (batch × (m×k)·(k×n)), element-wise over arrays: (work_s,
    compute_s at the chosen tile, memory_s, waves, full-wave compute_s), at
    ``sustained_flops``. Excludes kernel_overhead_s."""
    b, m, n, k = (np.asarray(x, dtype=np.float64) for x in (batch, m, n, k))
    energy = 1.0 + spec.unaligned_energy_share * ~operands_aligned(k, n)
    sm_flops = sustained_flops(spec, peak_flops, energy, tensor) / spec.sm_count
    best = np.full(np.broadcast(b, m, n, k).shape, np.inf)
    waves_at = np.zeros_like(best)
    for tm, tn in GEMM_TILES:
        eff = tile_efficiency(spec, tm, tn)
        waves = np.ceil(b * np.ceil(m / tm) * np.ceil(n / tn) / spec.sm_count)
        t = waves * 2.0 * tm * tn * (k + spec.gemm_k_fill) / (sm_flops * eff)
        better = t < best
        best, waves_at = np.where(better, t, best), np.where(better, waves, waves_at)
    # the same flops spread evenly over every SM at the largest tile: what waves cost
    even = 2.0 * b * m * n * (k + spec.gemm_k_fill) / (
        sm_flops * spec.sm_count * tile_efficiency(spec, *GEMM_TILES[0]))
    memory = F32_BYTES * b * (m * k + k * n + m * n) / achieved_bps(spec)
    return np.maximum(best, memory), best, memory, waves_at, even


#: Bytes of one element of the tensor-core dtypes ``tensor_gemm_work`` prices.
TENSOR_BYTES = {"bf16": 2, "fp8": 1}
#: Output tiles of a Hopper/Blackwell tensor-core GEMM: CUTLASS 3's SM90 warp-specialised
#: kernels' shapes, largest first (https://github.com/NVIDIA/cutlass/blob/main/media/docs/
#: efficient_gemm.md; cuBLAS picks among the same family).
TENSOR_TILES: tuple[tuple[int, int], ...] = ((128, 256), (128, 128), (64, 128), (64, 64))


def tensor_gemm_work(spec: GpuSpec, peak_flops: float, dtype: str, batch: int, m: int,
                     n: int, k: int) -> OpWork:
    """A BF16/FP8 GEMM on tensor cores, which the FP32 SIMT tile model above does not
    describe: each candidate tile (``TENSOR_TILES``) runs at ``tensor_gemm_efficiency`` of
    the SM's share of the dense peak (a measured large-GEMM fraction, which already holds
    the clock the board sustains), wave-quantised over the SMs with the shared k-fill;
    the fastest tile wins, and the GEMM takes at least its operands' bytes at achieved
    bandwidth (a decode GEMV is memory-bound)."""
    elem = TENSOR_BYTES[dtype]
    sm_flops = peak_flops * spec.tensor_gemm_efficiency / spec.sm_count
    best, even = np.inf, 0.0
    for tm, tn in TENSOR_TILES:
        waves = math.ceil(batch * math.ceil(m / tm) * math.ceil(n / tn) / spec.sm_count)
        best = min(best, waves * 2.0 * tm * tn * (k + spec.gemm_k_fill) / sm_flops)
    even = 2.0 * batch * m * n * (k + spec.gemm_k_fill) / (sm_flops * spec.sm_count)
    nbytes = float(elem * batch * (m * k + k * n + m * n))
    memory = nbytes / achieved_bps(spec)
    bound = "memory" if memory >= best else (
        "waves/launch" if best > 1.25 * even else "compute")
    return OpWork(2.0 * batch * m * n * k, nbytes, max(best, memory), bound)


def achieved_bps(spec: GpuSpec) -> float:
    """Device memory bandwidth a streaming kernel reaches, bytes/s."""
    return spec.mem_bw_gbs * 1e9 * spec.mem_bw_efficiency


@dataclass(frozen=True)
class OpWork:
    """What one operator does on the device: its flops and bytes, and its device seconds
    (``work_s`` excludes the per-kernel overhead) with the term that bound them."""

    flops: float  # GEMM flops (0: an element-wise kernel, costed by its bytes)
    bytes: float
    work_s: float
    bound: str
    kernels: int = 1


@dataclass(frozen=True)
class GpuOp:
    """An operator ``rldse parts cost`` can price: its shape's dimension names and how its
    device work follows from them; ``zero_ok``: dimensions that may be 0."""

    name: str
    dims: tuple[str, ...]
    work: Callable[[GpuSpec, float, tuple[int, ...], bool], OpWork]
    zero_ok: tuple[str, ...] = ()


def _gemm_work(spec: GpuSpec, peak: float, tensor: bool, batch: int, m: int, n: int,
               k: int) -> OpWork:
    work, compute, memory, waves, even = (float(x) for x in
                                          gemm_device_s(spec, peak, batch, m, n, k, tensor))
    if memory >= compute:
        bound = "memory"
    else:  # quantization or too few tiles cost more than a quarter over the even spread
        bound = "waves/launch" if compute > 1.25 * even else "compute"
    return OpWork(2.0 * batch * m * n * k, F32_BYTES * batch * (m * k + k * n + m * n),
                  work, bound)


def _elementwise(operands: int) -> Callable[[GpuSpec, float, tuple[int, ...], bool], OpWork]:
    """``operands`` tensors of B×H read, one written."""
    def work(spec: GpuSpec, peak: float, shape: tuple[int, ...], tensor: bool) -> OpWork:
        nbytes = float(F32_BYTES * (operands + 1) * int(np.prod(shape)))
        return OpWork(0.0, nbytes, nbytes / achieved_bps(spec), "memory")
    return work


def large_gemm_flops(spec: GpuSpec, peak_flops, tensor: bool = False):
    """The rate of work whose GEMM shapes are unknown: every SM at ``sustained_flops`` and
    the largest tile's efficiency, the limit ``gemm_device_s`` approaches for large aligned
    shapes (no wave quantisation or k-fill), so a lower bound on its time."""
    return sustained_flops(spec, peak_flops, 1.0, tensor) * tile_efficiency(spec,
                                                                              *GEMM_TILES[0])


def _kernels(spec: GpuSpec, peak: float, dims: tuple[int, ...], tensor: bool) -> OpWork:
    """``kernels`` element-wise, reduction or optimizer kernels moving ``bytes`` and
    computing ``flops`` in all: the per-kernel model (bytes at achieved bandwidth) is
    affine, so their sum is priced exactly from the totals; flops, where they outlast the
    bytes (a shape-less GEMM-like layer counted by FLOPs alone), at ``large_gemm_flops``."""
    kernels, nbytes, flops = dims
    memory_s = nbytes / achieved_bps(spec)
    compute_s = flops / large_gemm_flops(spec, peak, tensor) if flops else 0.0
    return OpWork(float(flops), float(nbytes), max(memory_s, compute_s),
                  "compute" if compute_s > memory_s else "memory", int(kernels))


#: Operators by name; shapes as NeuSight gives them. linear: input (B·M)×N through an
#: N→K layer; bmm: (B, M, N) × (B, N, K); element-wise: B×H. A new operator (an env step
#: on a CPU preset is another part kind's) registers here.
GPU_OPS: dict[str, GpuOp] = {}


def register_op(op: GpuOp) -> GpuOp:
    GPU_OPS[op.name] = op
    return op


register_op(GpuOp("linear", ("B", "M", "N", "K"), lambda s, p, d, t: _gemm_work(
    s, p, t, 1, d[0] * d[1], d[3], d[2])))
register_op(GpuOp("bmm", ("B", "M", "N", "K"), lambda s, p, d, t: _gemm_work(
    s, p, t, d[0], d[1], d[3], d[2])))
for _name, _operands in (("add", 2), ("mul", 2), ("relu", 1), ("tanh", 1)):
    register_op(GpuOp(_name, ("B", "H"), _elementwise(_operands)))
#: a traced operation's non-GEMM kernels in total (``_kernels``)
register_op(GpuOp("kernels", ("KERNELS", "BYTES", "FLOPS"), _kernels,
                  zero_ok=("BYTES", "FLOPS")))



@dataclass(frozen=True)
class OpCost:
    """One eager call: host dispatch seconds (on the issuing core), device seconds, the
    board's energy for the device time, and the model term that bound the call."""

    op: str
    shape: tuple[int, ...]
    dtype: str
    host_s: float
    launch_s: float  # the part of host_s before the kernel launches
    device_s: float
    energy_j: float
    bound: str
    flops: float
    bytes: float

    @property
    def call_s(self) -> float:
        """One call timed between CUDA events on an idle GPU: the kernel starts after the
        launch and runs beside the rest of the host's dispatch (docs/architecture.md,
        "The GPU kernel model")."""
        return call_s(self.host_s, self.launch_s, self.device_s)


def call_s(host_s, launch_s, device_s):
    """One eager call between CUDA events: launch + max(rest of the host's dispatch, device
    time); element-wise over arrays."""
    return launch_s + np.maximum(np.asarray(host_s) - launch_s, device_s)


def dispatch_calls(spec: GpuSpec, ops, module=False) -> np.ndarray:
    """Host dispatch of eager calls of ``ops`` (operator names) in ``dispatch_s`` units:
    ``op_dispatch_calls[op]`` (1 where not listed), plus ``op_dispatch_calls['module']``
    where ``module`` (the call goes through an ``nn.Module``, as ``nn.ReLU()`` does, rather
    than the torch function); element-wise over arrays."""
    names = np.asarray(ops)
    calls = np.ones(names.shape)
    for op, weight in spec.op_dispatch_calls.items():
        calls[names == op] = weight
    return calls + np.asarray(module, dtype=bool) * spec.op_dispatch_calls.get("module", 0.0)


def parse_shape(op: str, shape: str | tuple[int, ...]) -> tuple[int, ...]:
    """``'256,64,64'`` → (256, 64, 64) for ``op``; fewer numbers than the op's dimensions
    are leading 1s (linear 256,64,64 is B=1, M=256, N=64, K=64)."""
    if op not in GPU_OPS:
        raise RldseError(f"--op {op}: unknown (expected one of {', '.join(GPU_OPS)})")
    dims = GPU_OPS[op].dims
    try:
        values = tuple(int(v) for v in shape.split(",")) if isinstance(shape, str) \
            else tuple(int(v) for v in shape)
    except ValueError:
        raise RldseError(f"--shape {shape}: expected comma-separated integers "
                         f"({','.join(dims)})") from None
    full = (1,) * (len(dims) - len(values)) + values
    zero_ok = GPU_OPS[op].zero_ok
    if not 1 <= len(values) <= len(dims) or any(
            v < (0 if d in zero_ok else 1) for d, v in zip(dims, full, strict=True)):
        raise RldseError(f"--shape {shape}: expected 1 to {len(dims)} positive integers "
                         f"({','.join(dims)})")
    return full


def op_cost(model: GpuModel, op: str, shape: str | tuple[int, ...],
            dtype: str = "fp32") -> OpCost:
    """One eager call of ``op`` on ``model``'s GPU (docs/architecture.md, "The GPU kernel
    model"): ``rldse parts cost``, and every operator ``rldse simulate`` prices
    (``GpuModel.work_costs``)."""
    return price(model, op, parse_shape(op, shape), dtype)


def price(model: GpuModel, op: str, dims: tuple[int, ...], dtype: str = "fp32") -> OpCost:
    """``op_cost`` of a shape already checked (``parse_shape``)."""
    s = model.spec
    peak = model.peak_flops(dtype)
    if dtype in TENSOR_BYTES and op in ("linear", "bmm"):
        b, m, n, k = (1, dims[0] * dims[1], dims[3], dims[2]) if op == "linear" else \
            (dims[0], dims[1], dims[3], dims[2])
        w = tensor_gemm_work(s, peak, dtype, b, m, n, k)
    else:
        w = GPU_OPS[op].work(s, peak, dims, model.is_tensor(dtype))
    host_s = w.kernels * float(dispatch_calls(s, op)) * model.dispatch_s
    launch_s = s.launch_share * host_s
    device_s = w.kernels * s.kernel_overhead_s + w.work_s
    bound = w.bound if w.work_s > w.kernels * s.kernel_overhead_s else "waves/launch"
    if host_s - launch_s > device_s:
        bound = "dispatch floor"
    occupancy = model.occupancy(w.flops, w.bytes, w.kernels)
    energy_j = float(utilisation_power_w(s.idle_w, s.max_w,
                                         model.power_share(occupancy))[()] * device_s)
    return OpCost(op, dims, dtype, host_s, launch_s, device_s, energy_j, bound, w.flops,
                  w.bytes)
