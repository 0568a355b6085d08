"""What the plain-SimPy peer benchmarks (``peer_simpy*.py``) share: their --steps flag, the
shipped traces, and the race itself: a warmed rldse simulate against the peer model, both
timed in this process, printed as wall times, the speed ratio and the two simulated
throughputs."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from rldse.sim import simulate
from rldse.system import ResolvedSystem
from rldse.trace import Trace, load_trace

ROOT = Path(__file__).parents[2]


def parse_steps(doc: str) -> int:
    """The benchmark's ``--steps`` (env steps per run; default 1e6)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    return ap.parse_args().steps


def shipped_trace(name: str) -> Trace:
    return load_trace(ROOT / "traces" / name)


def race(label: str, trace: Trace, system: ResolvedSystem, steps: int,
         run_peer: Callable[[], tuple[float, int]]) -> None:
    """Time one rldse simulate of ``system`` (after a warm-up run that fills the per-trace
    caches, as a search does) and one ``run_peer()`` (simulated seconds, env steps), and
    print both with the ratio."""
    simulate(trace, system)
    t0 = time.perf_counter()
    res = simulate(trace, system)
    t_rldse = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim_s, peer_steps = run_peer()
    t_peer = time.perf_counter() - t0
    ours, theirs = res.env_steps_per_s, peer_steps / sim_s
    print(f"{label}, {steps:.0e} steps: rldse {t_rldse:.3f} s wall, "
          f"SimPy peer {t_peer:.3f} s wall, rldse {t_peer / t_rldse:.1f}x faster; "
          f"simulated steps/s rldse {ours:,.0f}, peer {theirs:,.0f} "
          f"({(ours / theirs - 1) * 100:+.1f} %)")
