"""GPU part: kernels launched from the host, a roofline per kernel, copies over a link.

- An operation is ``kernels`` launches plus a roofline of its work:
  t = kernels × launch_s + max(flops / peak(dtype), bytes / memory bandwidth)
  + dependent levels × global-memory latency. Small RL networks are launch-bound, so the
  kernel count matters more than the peak: it is a parameter per phase,
  kernels = kernels_fixed[phase] + kernels_per_layer[phase] × layers, with ``layers`` the
  network depth the engine reads from the trace (an MLP forward of L layers is 2L
  kernels: GEMM with bias, then activation).
- Host↔device copies: copy_fixed_s + bytes / link bandwidth (public cudaMemcpy
  microbenchmarks: a small copy costs ≈10 µs fixed; the fixed cost includes the link's
  latency).
- A sum tree (prioritized replay) is a descent of log2(capacity) levels per sampled item,
  each level a dependent global-memory load: levels serialize, batch items run in
  parallel. A priority update climbs the same levels, so it costs the same.
- ``mem_bytes`` is the capacity the engine checks for out-of-memory (``fits``).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field, field_validator

from rldse.errors import RldseError
from rldse.models.kinds import Check, PartKind, ReplayJob, register
from rldse.models.link import LinkSpec
from rldse.models.ops import DTYPE_NAMES, ArrayLike, OpColumns, Phase, per_phase
from rldse.models.power import UtilisationPower
from rldse.models.spec import PartSpec, idle_at_most_max, quantity

KernelCounts = dict[Phase, Annotated[float, Field(ge=0, le=1e6)]]

#: Bytes one dependent global-memory load moves: a 32-byte sector (CUDA's transaction size).
SECTOR_BYTES = 32


class GpuSpec(PartSpec):
    fp32_tflops: float = quantity("TFLOP/s", "peak FP32 (non-tensor)", ge=0.001, le=1e4)
    fp64_tflops: float = quantity("TFLOP/s", "peak FP64 (non-tensor)", ge=0.001, le=1e4)
    int32_tops: float = quantity("TOP/s", "peak INT32 (int64 is costed at this rate)",
                                 ge=0.001, le=1e4)
    tf32_tflops: float = quantity("TFLOP/s", "peak TF32 tensor-core (dense); 0 if none",
                                  ge=0, le=1e5)
    use_tf32: bool = quantity("", "let fp32 work run at the TF32 tensor rate")
    mem_bw_gbs: float = quantity("GB/s", "device memory bandwidth", ge=0.001, le=1e5)
    mem_bytes: int = quantity("B", "device memory capacity", ge=1, le=2**50)
    mem_latency_ns: float = quantity("ns", "latency of one dependent global-memory load",
                                     ge=0, le=1e5)
    launch_s: float = quantity("s", "cost per kernel launched from the framework", ge=0, le=1.0)
    copy_fixed_s: float = quantity("s", "fixed cost of one host↔device copy", ge=0, le=1.0)
    host_link: str = quantity("", "link preset to the host (PCIe generation)")
    kernels_fixed: KernelCounts = quantity("kernels", "kernels per operation, by phase "
                                           "(phases not listed: 1)")
    kernels_per_layer: KernelCounts = quantity("kernels", "extra kernels per network layer, "
                                               "by phase (phases not listed: 0)")
    max_w: float = quantity("W", "board power at full load (TDP)", gt=0, le=1e4)
    idle_w: float = quantity("W", "board power when idle (≤ max_w)", ge=0, le=1e4)
    price_usd: float = quantity("USD", "price of one GPU", ge=0, le=1e7)
    energy_accuracy: str = quantity("", "accuracy the power numbers' sources claim")

    _idle_at_most_max = field_validator("idle_w")(idle_at_most_max)

    @property
    def knee_flop_per_byte(self) -> float:
        """Arithmetic intensity where FP32 compute and memory bandwidth meet."""
        return self.fp32_tflops * 1e12 / (self.mem_bw_gbs * 1e9)


class GpuModel(UtilisationPower):
    """One GPU and the link that connects it to the host. Energy: the utilisation model
    with busy = seconds with a kernel running; HBM/GDDR energy is inside board power, so
    no per-bit term is added."""

    def __init__(self, spec: GpuSpec, link: LinkSpec) -> None:
        self.spec = spec
        self.link = link
        fp32 = spec.tf32_tflops if spec.use_tf32 and spec.tf32_tflops > 0 else spec.fp32_tflops
        peak = {"fp32": fp32, "fp64": spec.fp64_tflops, "int32": spec.int32_tops,
                "int64": spec.int32_tops, "none": fp32}
        #: peak operations per second, indexed by dtype code
        self.peak_ops = np.array([peak[d] * 1e12 for d in DTYPE_NAMES])
        self._fixed = per_phase(spec.kernels_fixed, 1.0)
        self._per_layer = per_phase(spec.kernels_per_layer, 0.0)

    def kernels(self, ops: OpColumns, layers: ArrayLike = 0) -> np.ndarray:
        """Kernel launches per operation: fixed[phase] + per_layer[phase] × layers."""
        return self._fixed[ops.phase] + self._per_layer[ops.phase] * np.asarray(layers, float)

    def kernel_seconds(self, kernels: ArrayLike, flops: ArrayLike, bytes_: ArrayLike,
                       dtype: str = "fp32") -> np.ndarray:
        """kernels × launch + max(flops / peak(dtype), bytes / bandwidth)."""
        if dtype not in DTYPE_NAMES:
            raise RldseError(f"gpu: dtype '{dtype}' is not one of {', '.join(DTYPE_NAMES)}")
        peak = self.peak_ops[DTYPE_NAMES.index(dtype)]
        return (np.asarray(kernels, dtype=np.float64) * self.spec.launch_s
                + np.maximum(np.asarray(flops, dtype=np.float64) / peak,
                             np.asarray(bytes_, dtype=np.float64) / (self.spec.mem_bw_gbs * 1e9)))

    def op_seconds(self, ops: OpColumns, layers: ArrayLike = 0) -> np.ndarray:
        """Seconds per traced operation run on this GPU (its data already on the device).

        Touches are dependent loads: touches / items levels in sequence (a sum-tree
        descent per item), items in parallel.
        """
        roof = np.maximum(ops.flops / self.peak_ops[ops.dtype],
                          ops.bytes / (self.spec.mem_bw_gbs * 1e9))
        levels = ops.touches / np.maximum(ops.items, 1.0)
        return (self.kernels(ops, layers) * self.spec.launch_s + roof
                + levels * self.spec.mem_latency_ns * 1e-9)

    def copy_seconds(self, bytes_: ArrayLike) -> np.ndarray:
        """One host↔device copy: fixed cost + bytes / link bandwidth."""
        return (self.spec.copy_fixed_s
                + np.asarray(bytes_, dtype=np.float64) / (self.link.bandwidth_gbs * 1e9))

    def sumtree_seconds(self, batch: ArrayLike, capacity: ArrayLike) -> np.ndarray:
        """Sample (or update) ``batch`` leaves of a sum tree over ``capacity`` priorities:
        one kernel, ceil(log2 capacity) dependent levels, each moving one sector per item."""
        b = np.asarray(batch, dtype=np.float64)
        depth = np.ceil(np.log2(np.maximum(np.asarray(capacity, dtype=np.float64), 2.0)))
        traffic_s = b * depth * SECTOR_BYTES / (self.spec.mem_bw_gbs * 1e9)
        return self.spec.launch_s + np.maximum(depth * self.spec.mem_latency_ns * 1e-9, traffic_s)

    def replay_seconds(self, job: ReplayJob, op: str, n: int) -> float:
        """The replay role with buffer and sum tree in device memory: a prioritized sample or
        update is a sum-tree pass; a uniform sample two kernels (indices, gather); an insert
        of n transitions one copy in and one scatter kernel."""
        if op == "insert":
            nbytes = n * job.transition_bytes
            return float(self.copy_seconds(nbytes) + self.kernel_seconds(1, 0, nbytes)) if n else 0.0
        if job.prioritized:
            return n * float(self.sumtree_seconds(job.batch, job.capacity))
        return n * float(self.kernel_seconds(2, 0, job.batch * job.transition_bytes)) \
            if op == "sample" else 0.0

    def replay_joules(self, job: ReplayJob, op: str, n: int) -> dict[str, float]:
        """Nothing beyond board power (the utilisation model)."""
        return {}

    def replay_checks(self, job: ReplayJob) -> dict[str, bool]:
        """None of its own: the buffer counts towards the program's GPU memory check."""
        return {}

    def fits(self, bytes_: ArrayLike) -> np.ndarray:
        """Whether this many bytes fit in device memory (False: the run is out of memory)."""
        return np.asarray(bytes_, dtype=np.float64) <= self.spec.mem_bytes



register(PartKind(
    name="gpu", spec=GpuSpec,
    model=lambda spec, ctx: GpuModel(spec, ctx.load("link", spec.host_link, "gpu.host_link")),
    description="GPUs behind a host link", roles=frozenset({"act", "learn", "replay", "q_update"}),
    countable=True, preset_refs={"host_link": "link"},
    checks=(Check("gpu_memory", "what the program keeps on the GPU fits its memory"),)))
