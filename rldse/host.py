"""Host fingerprint: what the capture machine is, and how fast it does the few things RL
training leans on.

Part models scale times measured on this host to a target part through these numbers
(the Trace's host fingerprint), so each is measured, not looked up or guessed. Together
they take well under 2 s. Each measurement repeats a short kernel and keeps the *best* repetition:
the best run is the least disturbed by other processes, so it is the most repeatable
estimate of what the hardware can do.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rldse.threads import single_blas_thread


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


def _matmul_gflops() -> float:
    n, inner = 128, 20
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)

    def run():
        for _ in range(inner):
            np.matmul(a, b, out=out)

    return 2.0 * n**3 * inner / _best_s(run, 15) / 1e9


def _copy_gbs() -> float:
    src = np.ones(64 * 2**20 // 8)
    dst = np.empty_like(src)
    return 2.0 * src.nbytes / _best_s(lambda: np.copyto(dst, src), 5) / 1e9


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


def measure() -> HostFingerprint:
    """Measure this host (about 1 s), BLAS on one thread as captures run it."""
    with single_blas_thread():
        return _measure()


def _measure() -> HostFingerprint:
    model, mhz = _cpu_model_and_clock()
    return HostFingerprint(
        cpu_model=model,
        cores=os.cpu_count() or 1,
        clock_mhz=mhz,
        matmul_gflops=_matmul_gflops(),
        copy_gbs=_copy_gbs(),
        random_access_ns=_random_access_ns(),
        py_call_ns=_py_call_ns(),
        numpy_call_ns=_numpy_call_ns(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
    )
