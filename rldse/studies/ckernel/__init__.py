"""SwiftRL's CPU baseline as SwiftRL ran it: a compiled, single-threaded, double-precision
loop of offline tabular updates (multiq.c in the SwiftRL authors' repository, Gogineni et
al., ISPASS 2024, arXiv 2405.03967), here rldse's own ``tabular_update.c``.

The study never times anything: it reads ``measurements.json`` (``stored``), nanoseconds
per update measured once by ``benchmarks/external/swiftrl_cpu_baseline.py`` (``measure``: built with
the system C compiler, the fastest of several repeats, the one least disturbed by other
load) and stored with its provenance (host, clock, compiler, flags, date), so two study runs
give the same numbers. The study scales them to another CPU through its part model
(``CpuModel.interp_scale``: clock × instructions per cycle).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rldse.errors import RldseError
from rldse.files import atomic_path

SOURCE = Path(__file__).with_name("tabular_update.c")
SHIPPED = Path(__file__).with_name("measurements.json")
FLAGS = ("-O2", "-std=c99")  # ISO C: no floating-point contraction, IEEE double as Python's


@dataclass(frozen=True)
class Measurement:
    """Nanoseconds per update of the compiled loop, per repeat, and where they come from."""

    ns_per_update: tuple[float, ...]
    source: str  # "compiled here (...)" or "shipped (...)"
    host_clock_mhz: float  # the clock of the host that measured them

    @property
    def best_ns(self) -> float:
        return min(self.ns_per_update)


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def build(cache_dir: Path) -> Path | None:
    """The kernel's binary in ``cache_dir`` (named by the source's hash, built once), or None
    when there is no C compiler."""
    cc = compiler()
    if cc is None:
        return None
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(FLAGS).encode()).hexdigest()[:12]
    binary = cache_dir / f"tabular_update-{digest}"
    if binary.is_file():
        return binary
    cache_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(binary) as tmp:
        done = subprocess.run([cc, *FLAGS, "-o", str(tmp), str(SOURCE)], capture_output=True,
                              text=True, check=False)
        if done.returncode:
            raise RldseError(f"{SOURCE}: {cc} failed: {done.stderr.strip().splitlines()[-1]}")
    return binary


def run_kernel(binary: Path, s: np.ndarray, a: np.ndarray, r: np.ndarray, sp: np.ndarray,
               n_states: int, n_actions: int, *, alpha: float, gamma: float, passes: int,
               repeats: int, next_a: np.ndarray | None = None,
               table: bool = False) -> tuple[list[float], np.ndarray | None]:
    """Run the compiled loop on one agent's transitions: (ns per update of each repeat,
    the final table when ``table``). ``next_a``: SARSA's a' per transition (-1: greedy);
    None: Q-learning."""
    n = len(s)
    nx = np.full(n, -1, np.int32) if next_a is None else np.asarray(next_a, np.int32)
    with tempfile.TemporaryDirectory(prefix="rldse-ckernel-") as tmp:
        data, qout = Path(tmp) / "data.bin", Path(tmp) / "q.bin"
        with data.open("wb") as f:
            f.write(np.array([n_states, n_actions], "<i4").tobytes())
            f.write(np.array([n], "<i8").tobytes())
            for col in (s, a, sp, nx):
                f.write(np.asarray(col, "<i4").tobytes())
            f.write(np.asarray(r, "<f8").tobytes())
        args = [str(binary), str(data), repr(float(alpha)), repr(float(gamma)), str(passes),
                str(repeats)] + ([str(qout)] if table else [])
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RldseError(f"{binary.name}: {done.stderr.strip()}")
        times = [float(v) for v in done.stdout.split()]
        q = np.fromfile(qout, "<f8").reshape(n_states, n_actions) if table else None
    return times, q


def measure(cache_dir: Path, key: str, data, n_states: int, n_actions: int, *,
            alpha: float, gamma: float, host_clock_mhz: float, next_a: np.ndarray | None,
            repeats: int = 5, min_updates: int = 1_000_000) -> Measurement:
    """Time the compiled loop on ``data`` (columns state, action, reward, next_state), as
    many passes per repeat as make ``min_updates`` (a timing well above the clock's
    resolution). Only the baseline benchmark calls this; studies read ``stored``."""
    binary = build(cache_dir)
    if binary is None:
        raise RldseError(f"{key}: no C compiler (cc or gcc) on this host to measure with")
    times, _ = run_kernel(binary, data.state.to_numpy(), data.action.to_numpy(),
                          data.reward.to_numpy(np.float64), data.next_state.to_numpy(),
                          n_states, n_actions, alpha=alpha, gamma=gamma,
                          passes=-(-min_updates // len(data)),
                          repeats=repeats, next_a=next_a)
    return Measurement(tuple(times), f"compiled here ({compiler()} {' '.join(FLAGS)}), "
                                     f"fastest of {repeats} repeats", host_clock_mhz)


def compiler_version() -> str:
    """The C compiler's first ``--version`` line (provenance of a stored measurement)."""
    cc = compiler()
    if cc is None:
        return "none"
    done = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    return (done.stdout.strip().splitlines() or [cc])[0]


def stored(key: str) -> Measurement:
    """The stored measurement ``key`` (measurements.json, with its provenance)."""
    table = json.loads(SHIPPED.read_text())
    if key not in table["ns_per_update"]:
        raise RldseError(f"{SHIPPED}: no stored measurement for '{key}' (has: "
                         f"{', '.join(table['ns_per_update'])}; measure it with "
                         "benchmarks/external/swiftrl_cpu_baseline.py)")
    where = ", ".join(f"{k} {table[k]}" for k in ("host", "compiler", "flags", "date")
                      if k in table)
    return Measurement(tuple(table["ns_per_update"][key]), f"stored ({where}; {table['how']})",
                       float(table["host_clock_mhz"]))
