"""`rldse calibrate gpu`: measure a GPU with PyTorch and write it as a gpu preset.

The preset starts from a base preset's datasheet numbers (peaks, bandwidth, memory,
price) and replaces what a microbenchmark can measure. ``FIELDS`` is the one table of
"measurement → spec field": each row names the field, its unit, how it was measured and
where in the measurements its value is. A field the installed GpuSpec lacks, or a
measurement this device cannot make (no NVML, no CUDA), keeps the base preset's number
and the report says so.

Measurements (``measure``), each a function below:
- dispatch: host time per framework operator, a loop of ``torch.add`` on 1-element
  tensors synchronised only at its end.
- kernel: device time per tiny kernel, CUDA events around kernels queued back to back
  behind a GPU sleep (so the host's dispatch cannot starve the GPU).
- copies: host→device and device→host copies of 4 B - 64 MiB, pageable and pinned;
  ``fixed + bytes / bandwidth`` fitted by least squares on relative residuals.
- gemm: fp32 GEMMs (TF32 off), square and MLP-like shapes, achieved rates reported (no
  preset field: GEMMs are priced by rldse.models.gpu_ops's tile model from the spec
  sheet, which ``rldse validate external`` checks; these rates are a check of it).
- loads: a pointer chase through a random cyclic permutation of an L2-resident and a
  DRAM-resident working set: a one-thread Triton kernel where Triton is installed, else
  a CUDA graph of 1-element gathers less the kernel overhead, else (cpu) eager gathers
  less the dispatch time.
- sumtree: proportional sampling and priority update on an array sum tree, eager
  (framework ops per level, counted) and, on CUDA, replayed as one CUDA graph (the
  closest to a fused pass PyTorch gives without a custom kernel).
- power: NVML board power idle and under a sustained GEMM load, where pynvml imports.

``--device cpu`` runs every code path on the CPU (wall times; it is not a GPU), for
tests and for machines without one.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rldse.calibrate import Calibration
from rldse.calibrate.preset_file import check_name_free, preset_document, today
from rldse.errors import RldseError
from rldse.models import presets
from rldse.models.gpu import GpuSpec
from rldse.models.spec import Param, unit_of

Measurements = dict[str, Any]


@dataclass(frozen=True)
class FieldRule:
    """One row of the measurement → field table."""

    field: str
    unit: str
    how: str
    value: Callable[[Measurements], float | None]


def _get(*keys: str) -> Callable[[Measurements], float | None]:
    def read(m: Measurements) -> float | None:
        node: Any = m
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        return None if node is None else float(node)
    return read


#: The one table: which measurement fills which GpuSpec field.
FIELDS: tuple[FieldRule, ...] = (
    FieldRule("dispatch_s", "s", "host time per torch.add on 1-element tensors in a loop "
              "synchronised only at its end (best of repeats)", _get("dispatch", "per_op_s")),
    FieldRule("kernel_overhead_s", "s", "device time per 1-element torch.add, kernels back to "
              "back behind a GPU sleep, CUDA events (cpu device: wall time, not a GPU)",
              _get("kernel", "per_kernel_s")),
    FieldRule("mem_latency_ns", "ns", "pointer chase through a random cyclic permutation of a "
              "DRAM-resident working set, time per dependent step", _get("loads", "dram_ns")),
    FieldRule("l2_latency_ns", "ns", "the same chase over an L2-resident working set",
              _get("loads", "l2_ns")),
    FieldRule("l2_bytes", "B", "L2 size the CUDA driver reports", _get("device", "l2_bytes")),
    FieldRule("copy_fixed_s", "s", "pinned H2D and D2H copies 4 B - 64 MiB (cpu device: "
              "pageable), fit of fixed + bytes / bandwidth on relative residuals",
              _get("copies", "fit", "fixed_s")),
    FieldRule("copy_gbs", "GB/s", "bandwidth of that fit", _get("copies", "fit", "gbs")),
    FieldRule("copy_efficiency", "fraction", "bandwidth of that fit / the base preset's host "
              "link bandwidth (at most 1)", _get("copies", "fit", "link_share")),
    FieldRule("sumtree_ops_per_level", "kernels", "framework ops (non-view aten ops) per level "
              "of an eager sum-tree sample, counted at two depths",
              _get("sumtree", "ops_per_level")),
    FieldRule("idle_w", "W", "NVML board power, idle, mean over a second", _get("power", "idle_w")),
    FieldRule("max_w", "W", "NVML board power under a sustained fp32 GEMM load, mean",
              _get("power", "busy_w")),
)


# ---- the device --------------------------------------------------------------------------

def _torch():
    try:
        import torch
    except ImportError:
        raise RldseError("calibrate gpu needs PyTorch: pip install 'rldse[torch]'") from None
    return torch


class Bench:
    """A device and how to time work on it: CUDA events on a GPU, wall time on the CPU."""

    def __init__(self, device: str, quick: bool) -> None:
        torch = self.torch = _torch()
        try:
            self.dev = torch.device(device)
        except (RuntimeError, ValueError):
            raise RldseError(f"--device {device}: not a torch device (e.g. cuda:0, cpu)") from None
        self.quick = quick
        self.cuda = self.dev.type == "cuda"
        if self.cuda and not torch.cuda.is_available():
            raise RldseError(f"--device {device}: PyTorch {torch.__version__} sees no CUDA GPU "
                             "(use --device cpu to run the code path on the CPU)")
        if self.dev.type not in ("cuda", "cpu"):
            raise RldseError(f"--device {device}: only cuda and cpu devices are supported")
        if self.cuda:
            try:
                self.props = torch.cuda.get_device_properties(self.dev)
            except (RuntimeError, AssertionError) as exc:
                raise RldseError(f"--device {device}: {str(exc).splitlines()[0]}") from None
            self.name = self.props.name
        else:
            from rldse.host import _cpu_model_and_clock

            self.props = None
            self.name = f"{_cpu_model_and_clock()[0]} (cpu device, not a GPU)"
        self.driver = _driver_version(torch) if self.cuda else "none (cpu device)"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.dev)

    def wall_median(self, fn: Callable[[], Any], reps: int, warmup: int = 3) -> float:
        """Median seconds of fn() followed by a synchronize."""
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def device_per_call(self, fn: Callable[[], Any], k: int, reps: int = 3) -> float:
        """Best device seconds per call of k calls back to back. On CUDA the calls queue
        behind a GPU sleep long enough for the host to enqueue them all, so the events
        time the GPU alone; on the CPU, wall time."""
        torch = self.torch
        fn()
        self.sync()
        best = float("inf")
        if not self.cuda:
            for _ in range(reps):
                t0 = time.perf_counter()
                for _ in range(k):
                    fn()
                best = min(best, (time.perf_counter() - t0) / k)
            return best
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        host_s = time.perf_counter() - t0
        self.sync()
        cycles = int(min(4e9, max(1e5, 3.0 * host_s * 2.0e9)))  # ≥ 3× the enqueue time at 2 GHz
        sleep = getattr(torch.cuda, "_sleep", None)
        for _ in range(reps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            if sleep is not None:
                sleep(cycles)
            start.record()
            for _ in range(k):
                fn()
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) * 1e-3 / k)
        return best


def _driver_version(torch) -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:  # noqa: BLE001 - pynvml absent or NVML unusable: say what we know
        return f"unknown (CUDA runtime {torch.version.cuda})"


# ---- measurements ------------------------------------------------------------------------

def measure_dispatch(b: Bench) -> dict[str, Any]:
    torch = b.torch
    x = torch.zeros(1, device=b.dev)
    y = torch.empty_like(x)
    n = 200 if b.quick else 500  # below CUDA's launch-queue depth, so the host never blocks
    best = float("inf")
    for _ in range(3 if b.quick else 10):
        b.sync()
        t0 = time.perf_counter()
        for _ in range(n):
            torch.add(x, 1.0, out=y)
        best = min(best, (time.perf_counter() - t0) / n)
        b.sync()
    return {"per_op_s": best, "ops_per_loop": n}


def measure_kernel(b: Bench) -> dict[str, Any]:
    torch = b.torch
    x = torch.zeros(1, device=b.dev)
    y = torch.empty_like(x)
    k = 100 if b.quick else 500
    per = b.device_per_call(lambda: torch.add(x, 1.0, out=y), k, reps=3 if b.quick else 10)
    note = "" if b.cuda else "cpu device: wall time per op, not a GPU kernel"
    return {"per_kernel_s": per, "kernels": k, "note": note}


COPY_BYTES = (4, 64, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20,
              16 << 20, 64 << 20)


def fit_fixed_bandwidth(nbytes: np.ndarray, secs: np.ndarray) -> tuple[float, float]:
    """(fixed s, GB/s) of t = fixed + bytes / bandwidth, least squares on relative residuals
    (the points span six orders of magnitude; plain residuals would ignore the small ones).
    A negative fixed cost is clamped to 0 and the slope refitted."""
    w = 1.0 / secs
    a = np.column_stack([np.ones_like(nbytes), nbytes]) * w[:, None]
    (fixed, per_byte), *_ = np.linalg.lstsq(a, np.ones_like(secs), rcond=None)
    if fixed < 0:
        fixed = 0.0
        per_byte = float(np.sum(nbytes * w * w) / np.sum((nbytes * w) ** 2))
    return float(fixed), float(1.0 / per_byte / 1e9) if per_byte > 0 else float("inf")


def measure_copies(b: Bench, link_gbs: float) -> dict[str, Any]:
    torch = b.torch
    sizes = [n for n in COPY_BYTES if n <= (1 << 20 if b.quick else 64 << 20)]
    out: dict[str, Any] = {}
    for pinned in ((False, True) if b.cuda else (False,)):
        for direction in ("h2d", "d2h"):
            rows = []
            for n in sizes:
                host = torch.empty(n, dtype=torch.uint8, pin_memory=pinned)
                dev = torch.empty(n, dtype=torch.uint8, device=b.dev)
                fn = (lambda h=host, d=dev: d.copy_(h)) if direction == "h2d" \
                    else (lambda h=host, d=dev: h.copy_(d))
                reps = 5 if b.quick else (100 if n < (4 << 20) else 20)
                rows.append((n, b.wall_median(fn, reps)))
            key = f"{direction}_{'pinned' if pinned else 'pageable'}"
            x = np.array([r[0] for r in rows], float)
            t = np.array([r[1] for r in rows], float)
            fixed, gbs = fit_fixed_bandwidth(x, t)
            out[key] = {"points_bytes_s": rows, "fixed_s": fixed, "gbs": gbs}
    kind = "pinned" if b.cuda else "pageable"
    pts = out[f"h2d_{kind}"]["points_bytes_s"] + out[f"d2h_{kind}"]["points_bytes_s"]
    fixed, gbs = fit_fixed_bandwidth(np.array([p[0] for p in pts], float),
                                     np.array([p[1] for p in pts], float))
    out["fit"] = {"memory": kind, "fixed_s": fixed, "gbs": gbs,
                  "link_share": min(1.0, gbs / link_gbs) if link_gbs > 0 else None}
    if not b.cuda:
        out["note"] = "cpu device: copies between two host tensors, not over a link"
    return out


def measure_gemm(b: Bench) -> dict[str, Any]:
    torch = b.torch
    if b.quick:
        shapes = [(n, n, n) for n in (32, 64, 128)] + [(m, 64, 64) for m in (1, 32, 128)]
    elif b.cuda:
        shapes = [(n, n, n) for n in (64, 128, 256, 512, 1024, 2048, 4096, 8192)] \
            + [(m, 256, 256) for m in (1, 32, 128, 512, 2048, 8192, 32768)]
    else:
        shapes = [(n, n, n) for n in (32, 64, 128, 256, 512)] \
            + [(m, 256, 256) for m in (1, 32, 128, 512, 2048)]
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    try:
        gen = torch.Generator(device="cpu").manual_seed(0)
        for m, k, n in shapes:
            a = torch.randn(m, k, generator=gen).to(b.dev)
            w = torch.randn(k, n, generator=gen).to(b.dev)
            out = torch.empty(m, n, device=b.dev)

            def fn(a=a, w=w, out=out):
                torch.matmul(a, w, out=out)

            one = b.wall_median(fn, 1, warmup=1)
            calls = int(min(200, max(2, (0.01 if b.quick else 0.05) / max(one, 1e-7))))
            t = b.device_per_call(fn, calls, reps=2 if b.quick else 3)
            f = 2.0 * m * k * n
            rows.append({"m": m, "k": k, "n": n, "flops": f, "s": t, "gflops": f / t / 1e9})
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    out_: dict[str, Any] = {"dtype": "fp32, TF32 off", "points": rows}
    return out_


def _cycle(n: int, torch) -> Any:
    """next[i] over one random cycle through all n elements (int64)."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    perm = torch.randperm(n, generator=gen)
    nxt = torch.empty(n, dtype=torch.int64)
    nxt[perm] = torch.roll(perm, -1)
    return nxt


def measure_loads(b: Bench, kernel_s: float, dispatch_s: float) -> dict[str, Any]:
    torch = b.torch
    l2 = int(getattr(b.props, "L2_cache_size", 0) or 0) if b.cuda else 0
    l2_set = min(l2 // 4, 4 << 20) if l2 else 1 << 20
    dram_set = (16 << 20) if b.quick else ((1 << 30) if b.cuda else (256 << 20))
    out: dict[str, Any] = {"l2_working_set_bytes": l2_set, "dram_working_set_bytes": dram_set}
    method = None
    for key, ws in (("l2_ns", l2_set), ("dram_ns", dram_set)):
        nxt = _cycle(ws // 8, torch).to(b.dev)
        ns, method = _chase_ns(b, nxt, kernel_s, dispatch_s)
        out[key] = ns
    out["method"] = method
    return out


def _chase_ns(b: Bench, nxt, kernel_s: float,
              dispatch_s: float) -> tuple[float | None, str]:
    torch = b.torch
    start = torch.zeros(1, dtype=torch.int64, device=b.dev)
    if b.cuda:
        try:
            from rldse.calibrate._triton_chase import chase

            sink = torch.zeros(1, dtype=torch.int64, device=b.dev)
            s1, s2 = (2_000, 20_000) if b.quick else (20_000, 200_000)
            t = {s: b.device_per_call(lambda s=s: chase[(1,)](nxt, start, sink, s, num_warps=1),
                                      1, reps=3) for s in (s1, s2)}
            return (t[s2] - t[s1]) / (s2 - s1) * 1e9, "one-thread Triton kernel, .cg loads, " \
                "difference of two chase lengths"
        except Exception:  # noqa: BLE001 - no Triton or no compiler: fall back to a graph
            pass
        try:
            steps = 64 if b.quick else 256  # even: the chase ends in the buffer it began in
            p, q = start.clone(), start.clone()
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                torch.index_select(nxt, 0, p, out=q)  # warm up on a side stream
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(g):
                for i in range(steps):
                    src, dst = (p, q) if i % 2 == 0 else (q, p)
                    torch.index_select(nxt, 0, src, out=dst)
            per_step = b.device_per_call(g.replay, 1, reps=5) / steps
            return max(0.0, per_step - kernel_s) * 1e9, "CUDA graph of 1-element gathers, " \
                "time per step less kernel_overhead_s (Triton unavailable)"
        except Exception:  # noqa: BLE001 - graphs unavailable: the eager chase below
            pass
    steps = 200 if b.quick else 2000
    state = [start.clone()]

    def chase_eagerly():
        for _ in range(steps):
            state[0] = torch.index_select(nxt, 0, state[0])

    per_step = b.wall_median(chase_eagerly, 3) / steps
    method = "eager 1-element gathers, time per step less dispatch_s (dominated by dispatch)"
    if per_step <= dispatch_s:  # the load hides in dispatch noise: nothing to report
        return None, method + ": below dispatch noise, not measured"
    return (per_step - dispatch_s) * 1e9, method


def sumtree_array(torch, dev, log_cap: int, gen):
    """An array sum tree over 2^log_cap random priorities drawn from ``gen``: leaves at
    [cap, 2cap), each inner node the sum of its two children, the root at 1."""
    cap = 1 << log_cap
    tree = torch.zeros(2 * cap, device=dev)
    tree[cap:] = torch.rand(cap, generator=gen).to(dev)
    for level in range(log_cap - 1, -1, -1):
        lo = 1 << level
        tree[lo:2 * lo] = tree[2 * lo:4 * lo:2] + tree[2 * lo + 1:4 * lo:2]
    return tree


def _sumtree(torch, dev, log_cap: int, batch: int):
    """An array sum tree (``sumtree_array``) and its eager sample and update."""
    cap = 1 << log_cap
    tree = sumtree_array(torch, dev, log_cap, torch.Generator(device="cpu").manual_seed(0))

    def sample():
        u = torch.rand(batch, device=dev) * tree[1]
        idx = torch.ones(batch, dtype=torch.long, device=dev)
        for _ in range(log_cap):
            left = tree[2 * idx]
            go_right = u > left
            u = torch.where(go_right, u - left, u)
            idx = 2 * idx + go_right.long()
        return idx - cap

    def update():
        idx = torch.randint(cap, 2 * cap, (batch,), device=dev)
        tree[idx] = torch.rand(batch, device=dev)
        for _ in range(log_cap):
            idx = idx // 2
            tree[idx] = tree[2 * idx] + tree[2 * idx + 1]

    return sample, update


def count_ops(torch, fn: Callable[[], Any]) -> int:
    """Non-view aten operators fn() dispatches: the kernels eager PyTorch launches for it."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not getattr(func, "is_view", False):
                Count.n += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.n


def capture_graph(torch, fn: Callable[[], Any]):
    """``fn``'s kernels as one CUDA graph (warmed up on a side stream first, as capture
    requires): its replay is one launch, the closest to a fused pass without a kernel."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def measure_sumtree(b: Bench) -> dict[str, Any]:
    torch = b.torch
    log_cap, batch = (10, 32) if b.quick else (17, 256)
    sample, update = _sumtree(torch, b.dev, log_cap, batch)
    short_sample, short_update = _sumtree(torch, b.dev, log_cap - 1, batch)
    per_level = count_ops(torch, sample) - count_ops(torch, short_sample)
    update_per_level = count_ops(torch, update) - count_ops(torch, short_update)
    reps = 5 if b.quick else 100
    out: dict[str, Any] = {
        "capacity": 1 << log_cap, "batch": batch, "levels": log_cap,
        "ops_per_level": per_level, "update_ops_per_level": update_per_level,
        "eager_sample_s": b.wall_median(sample, reps), "eager_update_s": b.wall_median(update, reps),
    }
    if not b.cuda:
        out["fused"] = "not measured: CUDA graphs need a GPU (cpu device)"
        return out
    try:
        graphs = {"sample": capture_graph(torch, sample), "update": capture_graph(torch, update)}
        out["graph_sample_s"] = b.wall_median(graphs["sample"].replay, reps)
        out["graph_update_s"] = b.wall_median(graphs["update"].replay, reps)
        out["fused"] = "measured as one CUDA graph replay (every level's kernels, one launch); " \
            "no single fused kernel"
    except Exception as exc:  # noqa: BLE001 - graphs unsupported here: eager only
        out["fused"] = f"not measured: CUDA graph capture failed ({type(exc).__name__})"
    return out


def measure_power(b: Bench, quick: bool) -> dict[str, Any]:
    if not b.cuda:
        return {"note": "cpu device: no board power to read; base preset's idle_w and max_w kept"}
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(b.dev.index or 0)
    except Exception:  # noqa: BLE001 - pynvml absent or NVML unusable
        return {"note": "pynvml not importable (or NVML unusable): base preset's idle_w and "
                        "max_w kept"}
    torch = b.torch

    def sample(seconds: float, until=None) -> list[float]:
        watts, end = [], time.perf_counter() + seconds
        while time.perf_counter() < end and (until is None or not until()):
            watts.append(pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0)
            time.sleep(0.02)
        return watts

    b.sync()
    time.sleep(0.5)
    idle = sample(0.3 if quick else 1.0)
    x = torch.randn(4096, 4096, device=b.dev)
    y = torch.empty_like(x)
    done = torch.cuda.Event()
    for _ in range(50 if quick else 1000):
        torch.matmul(x, x, out=y)
    done.record()
    time.sleep(0.3)  # let clocks and power ramp
    busy = sample(1.0 if quick else 3.0, until=done.query)
    done.synchronize()
    limit = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
    return {"idle_w": statistics.mean(idle), "busy_w": statistics.mean(busy) if busy else None,
            "power_limit_w": limit, "samples": [len(idle), len(busy)]}


def measure(b: Bench, base: presets.Preset) -> Measurements:
    """Every measurement, in the order later ones need earlier ones."""
    spec = base.spec()
    link_gbs = presets.load_part("link", spec.host_link).bandwidth_gbs
    m: Measurements = {"device": {"name": b.name, "driver": b.driver,
                                  "l2_bytes": getattr(b.props, "L2_cache_size", None) or None}}
    m["dispatch"] = measure_dispatch(b)
    m["kernel"] = measure_kernel(b)
    m["copies"] = measure_copies(b, link_gbs)
    m["gemm"] = measure_gemm(b)
    m["loads"] = measure_loads(b, m["kernel"]["per_kernel_s"], m["dispatch"]["per_op_s"])
    m["sumtree"] = measure_sumtree(b)
    m["power"] = measure_power(b, b.quick)
    return m


# ---- the preset --------------------------------------------------------------------------

#: Device-name fragments (as CUDA reports them) → the datasheet preset they imply; the
#: first match wins, so a PCIe fragment comes before its SXM default.
_BASES = (("H100 PCIe", "h100-pcie"), ("H100", "h100-sxm"), ("H200", "h200-sxm"),
          ("A100-SXM4-80GB", "a100-80g"), ("A100-SXM4-40GB", "a100-40g"), ("V100-SXM2", "v100-sxm2"))


def default_base(device_name: str) -> str | None:
    """The base preset a device's name implies, or None (then --base is required)."""
    return next((preset for fragment, preset in _BASES if fragment in device_name), None)


def calibrate_gpu(name: str, out_dir: str | Path, device: str = "cuda:0",
                  base: str | None = None, quick: bool = False) -> Calibration:
    """Measure ``device`` and build gpu preset ``name`` for ``out_dir`` on ``base``'s
    datasheet numbers."""
    check_name_free(name, out_dir)
    b = Bench(device, quick)
    base = base or default_base(b.name)
    if base is None:
        raise RldseError(f"--base: required for device '{b.name}' (the gpu preset whose "
                         "datasheet numbers the measurements complete, e.g. a100-40g)")
    preset = presets.get_preset("gpu", base)
    torch = b.torch
    m = measure(b, preset)
    date = today()
    source = (f"measured: rldse calibrate gpu, {b.name}, driver {b.driver}, "
              f"torch {torch.__version__}, {date}, method measured")
    params = dict(preset.params)
    applied, skipped = [], []
    for rule in FIELDS:
        value = rule.value(m)
        if rule.field not in GpuSpec.model_fields:
            skipped.append(f"{rule.field}: not a GpuSpec field in this rldse (kept in provenance)")
            continue
        if unit_of(GpuSpec, rule.field) != rule.unit:
            skipped.append(f"{rule.field}: GpuSpec's unit is '{unit_of(GpuSpec, rule.field)}', "
                           f"the measurement's '{rule.unit}'")
            continue
        if value is None or not np.isfinite(value):
            skipped.append(f"{rule.field}: not measured on this device (base value kept)")
            continue
        if GpuSpec.model_fields[rule.field].annotation is int:
            value = round(value)
        params[rule.field] = Param(value, rule.unit, f"{source}: {rule.how}")
        applied.append((rule.field, value, rule.unit, preset.params.get(rule.field)))
    power = {"idle_w", "max_w"} & {a[0] for a in applied}
    if len(power) == 1:  # half a power pair could break idle ≤ max: keep the base's pair
        params.update({f: preset.params[f] for f in ("idle_w", "max_w")})
        applied = [a for a in applied if a[0] not in power]
    from rldse import __version__

    provenance = {
        "tool": "rldse calibrate gpu", "rldse": __version__, "date": date, "method": "measured",
        "device": b.name, "driver": b.driver, "torch": torch.__version__,
        "cuda": torch.version.cuda, "host": platform.node(), "base": base, "quick": quick,
        "fields": {r.field: r.how for r in FIELDS}, "not_applied": skipped, "measurements": m,
    }
    doc = preset_document("gpu", name, f"{b.name}, calibrated {date} on {base}'s datasheet "
                          "numbers", params, provenance)
    report = [f"gpu preset '{name}': {b.name}, driver {b.driver}, torch {torch.__version__} "
              f"(base {base})"]
    if not b.cuda:
        report.append("  NOTE: --device cpu is not a GPU: the numbers below are this CPU's "
                      "wall times, useful only to exercise the code path")
    report.append(f"  {'field':22} {'measured':>12} {'unit':8} {'base':>12}")
    for field, value, unit, old in applied:
        report.append(f"  {field:22} {value:12.4g} {unit:8} "
                      f"{float(old.value) if old else float('nan'):12.4g}")
    report += [f"  kept: {s}" for s in skipped]
    report += _notes(m)
    return Calibration("gpu", name, doc, report)


def _notes(m: Measurements) -> list[str]:
    c, g, s, loads = m["copies"], m["gemm"], m["sumtree"], m["loads"]
    lines = [f"  copies ({c['fit']['memory']}): fixed {c['fit']['fixed_s'] * 1e6:.2f} us, "
             f"{c['fit']['gbs']:.2f} GB/s"]
    for key, v in c.items():
        if isinstance(v, dict) and "points_bytes_s" in v:
            lines.append(f"    {key}: fixed {v['fixed_s'] * 1e6:.2f} us, {v['gbs']:.2f} GB/s")
    lines.append(f"  GEMM ({g['dtype']}): " + ", ".join(
        f"{p['m']}x{p['k']}x{p['n']} {p['gflops']:.3g}" for p in g["points"]) + " GFLOP/s")
    lines.append(f"  dependent loads: L2 set {_ns(loads['l2_ns'])}, DRAM set "
                 f"{_ns(loads['dram_ns'])} ({loads['method']})")
    lines.append(f"  sum tree {s['capacity']} x batch {s['batch']}: eager sample "
                 f"{s['eager_sample_s'] * 1e6:.1f} us, update {s['eager_update_s'] * 1e6:.1f} us, "
                 f"{s['ops_per_level']} ops per level; fused: {s['fused']}")
    if "graph_sample_s" in s:
        lines.append(f"    as a CUDA graph: sample {s['graph_sample_s'] * 1e6:.1f} us, update "
                     f"{s['graph_update_s'] * 1e6:.1f} us")
    p = m["power"]
    lines.append(f"  power: {p['note']}" if "note" in p else
                 f"  power: idle {p['idle_w']:.1f} W, busy {p['busy_w']:.1f} W, "
                 f"limit {p['power_limit_w']:.0f} W")
    if m["kernel"].get("note"):
        lines.append(f"  kernel overhead: {m['kernel']['note']}")
    return lines


def _ns(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.1f} ns"
