"""How close `rldse simulate`'s up-front estimate (rldse.sim.budget) comes to the run it
estimates: events, wall time and tracemalloc peak, estimated against measured, for a few
designs of the shipped traces. Prints one row per design and the ratios.

    python benchmarks/budget_estimate.py [--steps 200000]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

from rldse.sim.budget import Meter, estimate
from rldse.sim.machine import Machine
from rldse.system import load_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "dgx1_like.yaml"
CASES = [
    ("dqn_cartpole_uniform", {}),
    ("dqn_cartpole_uniform", {"workload.actors": 32, "workload.learner": "sync"}),
    ("dqn_cartpole_uniform", {"workload.actors": 32}),
    ("actor_learner_cartpole_2", {"workload.actors": 64}),
]


def measure(trace, system, memory: bool) -> tuple[float, int, int]:
    if memory:
        tracemalloc.start()
    machine = Machine(trace, system)
    meter = Meter(machine)
    t0 = time.perf_counter()
    machine.result(system.workload.program(machine))
    wall_s = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] if memory else 0
    if memory:
        tracemalloc.stop()
    return wall_s, meter.events, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200_000)
    args = ap.parse_args()
    print("trace, sets: estimated/measured events, wall, memory (estimate's own seconds)")
    for name, sets in CASES:
        trace = load_trace(ROOT / "traces" / f"{name}.parquet")
        system = resolve(load_spec(SPEC, {**sets, "workload.env_steps": args.steps}), trace)
        t0 = time.perf_counter()
        budget = estimate(trace, system)
        cost_s = time.perf_counter() - t0
        wall_s, events, _ = measure(trace, system, memory=False)
        _, _, peak = measure(trace, system, memory=True)
        print(f"{name} {sets}: events {budget.events:,.0f}/{events:,} "
              f"({budget.events / events:.2f}x), wall {budget.wall_s:.3g}/{wall_s:.3g} s "
              f"({budget.wall_s / wall_s:.2f}x), memory {budget.memory_bytes / 1e6:.1f}/"
              f"{peak / 1e6:.1f} MB ({budget.memory_bytes / peak:.2f}x) ({cost_s:.2f} s)")


if __name__ == "__main__":
    main()
