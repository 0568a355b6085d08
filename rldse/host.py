"""Host fingerprint: what the capture machine is, and how fast it does the few things RL
training leans on.

Part models scale times measured on this host to a target part through these numbers
(the Trace's host fingerprint), so each is measured, not looked up or guessed. Together
they take about 1-2 s. Each measurement repeats a short kernel and keeps the *best* repetition:
the best run is the least disturbed by other processes, so it is the most repeatable
estimate of what the hardware can do.
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import time
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

from rldse.threads import single_blas_thread


class CaptureLoad(BaseModel):
    """How busy the host was around one capture: other processes that ran beside it took
    wall time from its operations (their CPU time, ``cpu_s``, stays clean)."""

    model_config = ConfigDict(extra="forbid")

    loadavg_1m_start: float = Field(ge=0, description="/proc/loadavg 1-minute load as the "
                                    "capture started")
    loadavg_1m_end: float = Field(ge=0, description="the same as it ended")
    runnable_others_start: int = Field(ge=0, description="/proc/stat procs_running less "
                                       "this process's thread, as the capture started")
    runnable_others_end: int = Field(ge=0, description="the same as it ended")
    compute_wall_per_cpu: float | None = Field(
        default=None, gt=0, description="wall / CPU time of the compute operations "
        "(rldse.trace.compute_mask): 1 on a quiet host; None where no CPU time was read")
    torch_threads: int | None = Field(
        default=None, ge=1, description="torch's intra-op threads (torch.get_num_threads) "
        "as the capture ended: its operations' times depend on it; None: torch not loaded, "
        "or a trace from before it")
    torch_threads_set_by: Literal["rldse", "user", "script"] | None = Field(
        default=None, description="who chose torch_threads: 'rldse' (captures pin one "
        "thread unless told otherwise), 'user' (the count the capture was given), 'script' "
        "(left to, or changed by, the training script)")

    @model_serializer(mode="wrap")
    def _drop_unrecorded(self, handler):
        """Thread fields left at None are left out, so a trace captured before they
        existed keeps its digest."""
        data = handler(self)
        if isinstance(data, dict):
            for key in ("torch_threads", "torch_threads_set_by"):
                if data.get(key, 0) is None:
                    del data[key]
        return data


#: ``rldse trace info`` calls a capture contended above this wall/CPU ratio of its compute
#: operations (a quiet host measures 1.00-1.05: clock reads, page faults, interrupts).
CONTENDED_WALL_PER_CPU = 1.15


def contention(load: CaptureLoad | None, cores: int) -> str | None:
    """Why a capture ran contended, in a few words, or None: its compute operations'
    wall/CPU ratio above CONTENDED_WALL_PER_CPU; where that is unknown, as many other
    runnable processes as cores at its start or end (two instants only, so the ratio,
    which covers the whole capture, decides when known)."""
    if load is None:
        return None
    ratio = load.compute_wall_per_cpu
    if ratio is not None:
        return (f"compute ops took {ratio:.2f}x their CPU time in wall time"
                if ratio > CONTENDED_WALL_PER_CPU else None)
    others = max(load.runnable_others_start, load.runnable_others_end)
    if others >= cores:
        return f"{others} other runnable processes on {cores} cores"
    return None


def load_sample() -> tuple[float, int] | None:
    """(1-minute load average, other runnable processes) now; None where /proc lacks them."""
    try:
        with open("/proc/loadavg", encoding="utf-8") as f:
            load = float(f.read().split()[0])
        with open("/proc/stat", encoding="utf-8") as f:
            running = next(int(line.split()[1]) for line in f
                           if line.startswith("procs_running"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return load, max(running - 1, 0)


def wall_per_cpu(wall_s: float, cpu_s: float) -> tuple[float, str]:
    """Wall seconds per CPU second that a run started now is expected to take, from live
    timings that took ``wall_s`` of wall time and ``cpu_s`` of CPU time (pilots, probes),
    and how it was had. The one place every up-front estimate turns CPU time into wall time.

    The timings' own ratio is the best guess of this process's share of the host, but it
    holds over their second or two: a neighbour that ran only then triples it. So it is
    capped at what the host's one-minute load average allows, which a burst of a second
    barely moves: (load + 1) / cores for a single-threaded process (load 0: a core to
    itself), times the runnable tasks of this process's own session now (itself
    included): this host's kernel shares the CPU between sessions (autogroups), not
    tasks, so a session's busy tasks split its share between them, which the load
    average alone does not show (it put a process's wall/CPU at up to 2.2x less than its
    run saw, rldse.sim.budget). A second CPU-bound process started in this session after
    the estimate is still missed: nothing seen before it starts can tell. A multi-process
    run (its children's CPU time in ``cpu_s``) may see a ratio under 1, kept."""
    seen = wall_s / max(cpu_s, 1e-9)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform: the timings'
        return seen, f"{seen:.2f} wall s per CPU s seen over {wall_s:.2g} s"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1
    mine = session_runnable()
    cap = max(1.0, (load + 1.0) / cores) * mine
    ratio = min(seen, cap)
    how = "seen" if ratio == seen else \
        f"capped by load {load:.2f} on {cores} cores, {mine} runnable in this session"
    return ratio, f"{ratio:.2f} wall s per CPU s ({seen:.2f} seen over {wall_s:.2g} s; {how})"


def proc_stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (the first is the state, field 3
    of proc(5)); None where the process or /proc is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def session_runnable() -> int:
    """Runnable processes (state R) in this process's session now, itself included
    (/proc/PID/stat; 1 where /proc cannot say)."""
    try:
        sid = os.getsid(0)
        pids = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except (AttributeError, OSError):
        return 1
    n = 0
    for pid in pids:
        fields = proc_stat(pid)
        n += fields is not None and fields[0] == "R" and int(fields[3]) == sid
    return max(n, 1)


#: the products of an MLP layer's training step a GEMM curve measures (GEMM_GRID)
GEMM_PRODUCTS = ("fwd", "dw", "dx")


def check_gemm_curve(curve: Any) -> Any:
    """``curve`` (a list of (product, batch, inputs, outputs, GFLOP/s) points) if the
    interpolation of rldse.models.cpu.gemm_curve can read it: known products, shapes of
    at least 1, a positive finite rate, and per product a full grid of at least two
    values on each axis; else ValueError saying what is wrong (a pydantic validator)."""
    if curve is None:
        return None
    grids: dict[str, list[set[int]]] = {}
    points: dict[str, int] = {}
    for n, (product, *dims, gflops) in enumerate(curve):
        if product not in GEMM_PRODUCTS:
            raise ValueError(f"point {n}: product {product!r} is not one of "
                             f"{', '.join(GEMM_PRODUCTS)}")
        if any(d < 1 for d in dims):
            raise ValueError(f"point {n}: batch, inputs and outputs must be at least 1")
        if not 0 < gflops < float("inf"):
            raise ValueError(f"point {n}: GFLOP/s must be positive and finite, not {gflops}")
        for value, seen in zip(dims, grids.setdefault(product, [set(), set(), set()]),
                               strict=True):
            seen.add(value)
        points[product] = points.get(product, 0) + 1
    for product, axes in grids.items():
        sizes = [len(a) for a in axes]
        if min(sizes) < 2 or points[product] != sizes[0] * sizes[1] * sizes[2]:
            raise ValueError(f"product {product!r}: expected a full grid of at least two "
                             f"values per axis (batch x inputs x outputs: {sizes[0]} x "
                             f"{sizes[1]} x {sizes[2]} values, {points[product]} points)")
    return curve


class HostFingerprint(BaseModel):
    """The capture host, as measured at capture time. Units are in the field names."""

    model_config = ConfigDict(extra="forbid")

    cpu_model: str = Field(description="/proc/cpuinfo 'model name', or platform.processor()")
    cores: int = Field(gt=0, description="logical CPUs visible to this process")
    clock_mhz: float = Field(
        ge=0, description="a busy core's clock: cpufreq's cpuinfo_max_freq where the kernel "
        "exposes it, else /proc/cpuinfo 'cpu MHz' (the current clock; on VMs usually the "
        "host's nominal one); 0 if unknown")
    matmul_gflops: float = Field(
        gt=0, description="float32 128x128x128 numpy matmul on one BLAS thread, GFLOP/s "
        "(2*n^3 flops per product)"
    )
    copy_gbs: float = Field(
        gt=0, description="numpy copy of a 64 MiB float64 array, GB/s counting read + write bytes"
    )
    random_access_ns: float = Field(
        gt=0,
        description="numpy gather of random int64 elements from a 64 MiB array, ns per element "
        "(overlapped misses, i.e. throughput not a dependent-load latency)",
    )
    py_call_ns: float = Field(gt=0, description="one empty Python function call, ns")
    numpy_call_ns: float = Field(
        gt=0, description="one numpy ufunc on 8 float32 elements (np.add with out=), ns: the "
        "fixed cost that dominates small-batch numpy work",
    )
    python: str = Field(description="Python implementation and version")
    gemm_curve: list[tuple[str, int, int, int, float]] | None = Field(
        default=None, description="float32 numpy matmul on one BLAS thread for an MLP layer "
        "of batch B, i inputs and o outputs: (product, B, i, o, GFLOP/s counting the call), "
        "product 'fwd' (x·W), 'dw' (xᵀ·dy) or 'dx' (dy·Wᵀ), on the grid GEMM_GRID; None in "
        "traces from before it (then one matmul_gflops serves every shape)")
    elementwise_gbs: float | None = Field(
        default=None, gt=0, description="marginal rate of the MLP's allocating element-wise "
        "numpy kernels (bias add, ReLU, column sum, mask multiply on B×64 float32, B 32 → "
        "256), GB/s per extra byte read + written; the per-call cost is excluded. None in "
        "traces from before it (then copy_gbs)")
    vector_gbs: float | None = Field(
        default=None, gt=0, description="marginal rate of Adam's 13 kernels (contiguous "
        "same-shape float32 arithmetic, mlp.Adam.step) from 4,096 to 65,536 parameters, GB/s "
        "per extra byte read + written; None in traces from before it (then copy_gbs)")
    scatter_add_ns: float | None = Field(
        default=None, gt=0, description="np.add.at of float64 values at 4,096 random int64 "
        "indices into a 256 KiB array, ns per element (the sum tree's update); None in "
        "traces from before it")
    sum_tree_level_ns: tuple[float, float] | None = Field(
        default=None, description="one level of replay.py's SumTree.find descent (its six "
        "numpy calls): (ns per level, ns per level and item), from trees of 2^10 and 2^16 "
        "leaves at batches 16 and 256; None in traces from before it")
    cache_bytes: dict[str, int] | None = Field(
        default=None, description="data cache sizes of cpu0 (L1d, L2, L3) from "
        "/sys/devices/system/cpu/cpu0/cache; None where the kernel does not expose them")
    gather_ns: list[tuple[float, float]] | None = Field(
        default=None, description="numpy gather of random int64 elements, ns per element, "
        "at working sets of half of each cache level and 64 MiB: (working set bytes, ns), "
        "sorted by size; None in traces from before it")
    shared_core_slowdown: float | None = Field(
        default=None, gt=0, description="two processes on one core: the wall time of the "
        "same short CPU-bound Python kernel (passes over a ~1 MB list, so cache sharing "
        "counts) run in two processes pinned to one logical CPU (os.sched_setaffinity), "
        "divided by twice its time alone on that CPU; above 1 by the context switches and "
        "cache refills of time-slicing. None: not measured (no os.sched_setaffinity or no "
        "fork on this platform, or a trace captured before this field existed); the CPU "
        "model then uses its stated default (rldse.models.cpu, presets/cpu.yaml)")
    mem_bytes: int | None = Field(
        default=None, gt=0, description="physical memory, bytes (sysconf SC_PHYS_PAGES × "
        "SC_PAGE_SIZE); None: not measured (no sysconf, or a trace from before it)")
    load: CaptureLoad | None = Field(
        default=None, description="the host's load around the capture; None: not "
        "recorded (a trace from before it, an import)")

    @field_validator("gemm_curve")
    @classmethod
    def _gemm_curve(cls, curve: Any) -> Any:
        return check_gemm_curve(curve)

    @model_serializer(mode="wrap")
    def _drop_unmeasured(self, handler):
        """Optional measurements left at None (not measured) are left out of the dump, so
        a trace captured before they existed keeps its digest when loaded again."""
        data = handler(self)
        if isinstance(data, dict):
            for key, info in type(self).model_fields.items():
                if info.default is None and key in data and data[key] is None:
                    del data[key]
        return data


def _cpu_model_and_clock() -> tuple[str, float]:
    model, mhz = platform.processor() or platform.machine(), 0.0
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model in ("", platform.machine(), platform.processor()):
                    model = value.strip()
                elif key == "cpu MHz" and mhz == 0.0:
                    mhz = float(value)
    except OSError:
        pass
    try:  # the clock a busy core reaches, rather than whatever it idles at now
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", encoding="utf-8") as f:
            mhz = int(f.read().strip()) / 1000.0
    except (OSError, ValueError):
        pass
    return model or "unknown", mhz


def _best_s(fn, repeats: int, budget_s: float = 0.25) -> float:
    """Best of up to `repeats` timed runs, stopping early (after two) once `budget_s` is spent,
    so a loaded machine still finishes the fingerprint in about a second."""
    best, spent = float("inf"), 0.0
    for k in range(repeats):
        t0 = time.perf_counter()
        fn()
        took = time.perf_counter() - t0
        best, spent = min(best, took), spent + took
        if k >= 1 and spent > budget_s:
            break
    return best


def matmul_gflops(n: int = 128, inner: int = 20, repeats: int = 15) -> float:
    """GFLOP/s of a float32 n × n numpy matmul, ``inner`` of them per timed run, best of
    ``repeats`` runs; BLAS threads as the caller set them. The defaults are the
    fingerprint's ``matmul_gflops``; ``rldse calibrate cpu`` times its curve over n here."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)

    def run():
        for _ in range(inner):
            np.matmul(a, b, out=out)

    return 2.0 * n**3 * inner / _best_s(run, repeats) / 1e9


def copy_gbs(n_bytes: int = 64 * 2**20, repeats: int = 5) -> float:
    """GB/s, read + write, of np.copyto of ``n_bytes`` (float64), repeated to at least
    8 MiB per timed run, best of ``repeats`` runs. The default (DRAM-sized, one copy a run)
    is the fingerprint's ``copy_gbs``; ``rldse calibrate cpu`` times its curve over sizes
    here."""
    src = np.ones(n_bytes // 8)
    dst = np.empty_like(src)
    inner = max(1, (8 << 20) // n_bytes)

    def run():
        for _ in range(inner):
            np.copyto(dst, src)

    return 2.0 * src.nbytes * inner / _best_s(run, repeats) / 1e9


def _random_access_ns() -> float:
    table = np.arange(64 * 2**20 // 8, dtype=np.int64)
    idx = np.random.default_rng(1).integers(0, table.size, size=1_000_000)
    return _best_s(lambda: table.take(idx), 5) / idx.size * 1e9


def _py_call_ns() -> float:
    def empty():
        return None

    n = 200_000

    def run():
        for _ in range(n):
            empty()

    def bare():
        for _ in range(n):
            pass

    return max(1.0, (_best_s(run, 5) - _best_s(bare, 5)) / n * 1e9)


def _numpy_call_ns() -> float:
    a = np.ones(8, dtype=np.float32)
    out = np.empty_like(a)
    n = 50_000

    def run():
        for _ in range(n):
            np.add(a, a, out=out)

    return _best_s(run, 5) / n * 1e9


#: The GEMM curve's grid: batch B × inputs i × outputs o of an MLP layer, each product of
#: its training step measured (fwd x·W, dw xᵀ·dy, dx dy·Wᵀ: one BLAS call each).
GEMM_GRID = ((1, 16, 64, 256, 512), (1, 4, 16, 64, 256, 512), (1, 4, 16, 64, 256, 512))
#: Fallback cache sizes where sysfs has none: common server values, stated in the curve.
_DEFAULT_CACHES = {"L1d": 32 * 2**10, "L2": 1 * 2**20, "L3": 32 * 2**20}


def _gemm_curve() -> list[tuple[str, int, int, int, float]]:
    rng = np.random.default_rng(0)
    curve = []
    for b in GEMM_GRID[0]:
        for i in GEMM_GRID[1]:
            for o in GEMM_GRID[2]:
                x = rng.standard_normal((b, i), dtype=np.float32)
                w = rng.standard_normal((i, o), dtype=np.float32)
                g = rng.standard_normal((b, o), dtype=np.float32)
                flops = 2.0 * b * i * o
                inner = max(1, min(100, int(1e6 / flops)))
                for name, a, c in (("fwd", x, w), ("dw", x.T, g), ("dx", g, w.T)):
                    def run(a=a, c=c, inner=inner):
                        for _ in range(inner):
                            a @ c

                    s = _best_s(run, 5, 0.01) / inner
                    curve.append((name, b, i, o, flops / s / 1e9))
    return curve


def _marginal_s(small, big, repeats: int = 15) -> float:
    """Best time of ``big`` − best time of ``small``, the two interleaved so both see the
    same host load."""
    best_small = best_big = float("inf")
    for _ in range(repeats):
        best_small = min(best_small, _best_s(small, 1))
        best_big = min(best_big, _best_s(big, 1))
    return max(best_big - best_small, 1e-9)


def _elementwise_gbs(width: int = 64) -> float:
    """Marginal GB/s of bias add, in-place ReLU, column sum and mask multiply from B = 32 to
    256 (34 bytes per element: 8 + 8 + 4 + 14), the element-wise kernels of an MLP step."""
    def kernels(batch: int):
        rng = np.random.default_rng(0)
        h = rng.standard_normal((batch, width), dtype=np.float32)
        bias = np.ones(width, np.float32)

        def run():
            for _ in range(20):
                y = h + bias
                np.maximum(y, 0.0, out=y)
                y.sum(axis=0)
                y * (h > 0)
        return run
    extra = 20 * 34 * width * (256 - 32)
    return extra / _marginal_s(kernels(32), kernels(256)) / 1e9


def _vector_gbs() -> float:
    """Marginal GB/s of Adam.step's kernels (124 bytes per parameter) from 4,096 to 65,536
    float32 parameters in one array."""
    from rldse.kernels.mlp import ADAM_BYTES_PER_PARAM, Adam

    def step(n: int):
        p = np.ones(n, np.float32)
        opt, g = Adam([p]), [np.full(n, 1e-3, np.float32)]
        return lambda: [opt.step(g) for _ in range(3)]
    extra = 3 * ADAM_BYTES_PER_PARAM * (65_536 - 4_096)
    return extra / _marginal_s(step(4_096), step(65_536)) / 1e9


def _scatter_add_ns() -> float:
    nodes = np.zeros(32_768)
    idx = np.random.default_rng(2).integers(0, nodes.size, size=4_096)
    vals = np.ones(idx.size)
    return _best_s(lambda: np.add.at(nodes, idx, vals), 9, 0.05) / idx.size * 1e9


def _sum_tree_level_ns() -> tuple[float, float]:
    """Marginal cost of a descent level: 6 more levels (2^10 → 2^16 leaves) at 16 and at
    256 items; the per-item part is the slope between the two batches."""
    from rldse.kernels.replay import SumTree

    rng = np.random.default_rng(3)
    trees = {}
    for leaves in (2**10, 2**16):
        tree = SumTree(leaves)
        tree.update(np.arange(leaves), rng.random(leaves) + 0.1)
        trees[leaves] = tree

    def find(leaves: int, batch: int):
        tree = trees[leaves]
        mass = rng.random(batch) * tree.total
        return lambda: [tree.find(mass, leaves) for _ in range(5)]
    levels = trees[2**16].depth - trees[2**10].depth
    per = {b: _marginal_s(find(2**10, b), find(2**16, b), 9) / 5 / levels * 1e9
           for b in (16, 256)}
    per_item = max((per[256] - per[16]) / 240, 0.0)
    return max(per[16] - 16 * per_item, 0.0), per_item


def _cache_bytes() -> dict[str, int] | None:
    root = "/sys/devices/system/cpu/cpu0/cache"
    out: dict[str, int] = {}
    try:
        for entry in sorted(os.listdir(root)):
            if not entry.startswith("index"):
                continue
            d = os.path.join(root, entry)
            with open(os.path.join(d, "type"), encoding="utf-8") as f:
                kind = f.read().strip()
            with open(os.path.join(d, "level"), encoding="utf-8") as f:
                level = f.read().strip()
            with open(os.path.join(d, "size"), encoding="utf-8") as f:
                size = f.read().strip()
            if kind == "Instruction":
                continue
            mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1:], 1)
            name = f"L{level}d" if level == "1" else f"L{level}"
            out[name] = int(size.rstrip("KMG")) * mult
    except (OSError, ValueError):
        return None
    return out or None


def _gather_ns(caches: dict[str, int] | None) -> list[tuple[float, float]]:
    sizes = [v // 2 for v in (caches or _DEFAULT_CACHES).values()] + [64 * 2**20]
    idx_all = np.random.default_rng(1).integers(0, 2**62, size=200_000)
    out = []
    for ws in sorted(set(sizes)):
        table = np.arange(max(ws // 8, 1), dtype=np.int64)
        idx = idx_all % table.size
        out.append((float(ws), _best_s(lambda t=table, i=idx: t.take(i), 5, 0.05)
                    / idx.size * 1e9))
    return out


def _shared_core_kernel(data: list[int], passes: int = 24) -> int:
    """The CPU-bound Python kernel of ``_shared_core_slowdown``: passes over a list of
    ~1 MB (pointers and int objects), so time-slicing also costs cache refills."""
    total = 0
    for _ in range(passes):
        for x in data:
            total += x
    return total


def _shared_core_child(cpu: int, go, conn, data: list[int]) -> None:
    """Pin to ``cpu``, wait for the start signal, run the kernel; send (start, end)."""
    os.sched_setaffinity(0, {cpu})
    _shared_core_kernel(data, 1)  # warm up: pages touched, bytecode specialised
    go.wait()
    t0 = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
    _shared_core_kernel(data)
    conn.send((t0, time.perf_counter()))
    conn.close()


def _shared_core_run(ctx, cpu: int, n: int, data: list[int]) -> float:
    """Wall time from the first start to the last end of ``n`` kernels pinned to ``cpu``."""
    go = ctx.Event()
    pipes = [ctx.Pipe(duplex=False) for _ in range(n)]
    procs = [ctx.Process(target=_shared_core_child, args=(cpu, go, w, data), daemon=True)
             for _, w in pipes]
    for p in procs:
        p.start()
    time.sleep(0.005)  # let the children pin themselves and warm up
    go.set()
    spans = [r.recv() for r, _ in pipes]
    for p in procs:
        p.join()
    return max(e for _, e in spans) - min(s for s, _ in spans)


def _shared_core_slowdown() -> float | None:
    """(time of two processes on one core) / (2 × time of one alone), best of two each
    (HostFingerprint.shared_core_slowdown); None where processes cannot be pinned (no
    os.sched_setaffinity) or forked. About 0.2 s."""
    if not hasattr(os, "sched_setaffinity") \
            or "fork" not in multiprocessing.get_all_start_methods():
        return None
    try:
        cpu = min(os.sched_getaffinity(0))
        ctx = multiprocessing.get_context("fork")
        data = list(range(1000, 1000 + 30_000))  # ints above the small-int cache: ~1 MB
        alone = min(_shared_core_run(ctx, cpu, 1, data) for _ in range(2))
        two = min(_shared_core_run(ctx, cpu, 2, data) for _ in range(2))
    except (OSError, EOFError, ValueError):
        return None
    return two / (2.0 * alone) if alone > 0 else None


def _mem_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def measure() -> HostFingerprint:
    """Measure this host (about 1 s), BLAS on one thread as captures run it."""
    with single_blas_thread():
        return _measure()


def _measure() -> HostFingerprint:
    model, mhz = _cpu_model_and_clock()
    caches = _cache_bytes()
    return HostFingerprint(
        cpu_model=model,
        cores=os.cpu_count() or 1,
        clock_mhz=mhz,
        matmul_gflops=matmul_gflops(),
        copy_gbs=copy_gbs(),
        random_access_ns=_random_access_ns(),
        py_call_ns=_py_call_ns(),
        numpy_call_ns=_numpy_call_ns(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        gemm_curve=_gemm_curve(),
        elementwise_gbs=_elementwise_gbs(),
        vector_gbs=_vector_gbs(),
        scatter_add_ns=_scatter_add_ns(),
        sum_tree_level_ns=_sum_tree_level_ns(),
        cache_bytes=caches,
        gather_ns=_gather_ns(caches),
        shared_core_slowdown=_shared_core_slowdown(),
        mem_bytes=_mem_bytes(),
    )
