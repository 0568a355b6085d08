"""How close `rldse simulate`'s up-front estimate (rldse.sim.budget) comes to the run it
estimates: events and wall time (and with --memory the tracemalloc peak), estimated
against measured, for ten long designs of the shipped traces across the families (each
run takes 15-30 s here; --scale shrinks or grows every run). Prints one row per
design, the ratios and the worst; the target is every wall-time ratio within 2x.

    python benchmarks/budget_estimate.py [--scale 1.0] [--memory] [--only N]
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
CPU = ROOT / "examples" / "cpu_only.yaml"
#: (trace, system, sets, env steps): each about 15-30 s of simulation on the 2-vCPU host.
CASES = [
    ("actor_learner_cartpole_2", SPEC, {}, 100_000_000),
    ("actor_learner_cartpole_2", SPEC, {"workload.actors": 16}, 300_000_000),
    ("actor_learner_cartpole_2", SPEC, {"workload.actors": 64,
                                        "workload.inference": "central"}, 30_000_000),
    ("pong_ppo", SPEC, {}, 100_000_000),
    ("dqn_cartpole_uniform", SPEC, {}, 60_000_000),
    ("dqn_cartpole_uniform", SPEC, {"workload.learner": "sync"}, 200_000_000),
    ("dqn_cartpole_uniform", SPEC, {"workload.actors": 32}, 50_000_000),
    ("dqn_cartpole_per", SPEC, {}, 40_000_000),
    ("ddpg_pendulum", SPEC, {}, 40_000_000),
    ("tabular_frozenlake", CPU, {}, 10_000_000_000),
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
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every run's env steps")
    ap.add_argument("--memory", action="store_true", help="also measure the tracemalloc peak")
    ap.add_argument("--only", type=int, help="run case N (0-based) alone")
    args = ap.parse_args()
    print("trace, sets, env steps: estimated/measured events, wall (ratio); the estimate's "
          "own seconds")
    worst = 1.0
    for i, (name, spec, sets, steps) in enumerate(CASES):
        if args.only is not None and i != args.only:
            continue
        trace = load_trace(ROOT / "traces" / f"{name}.parquet")
        n = max(int(steps * args.scale), 1)
        system = resolve(load_spec(spec, {**sets, "workload.env_steps": n}), trace)
        t0 = time.perf_counter()
        budget = estimate(trace, system)
        cost_s = time.perf_counter() - t0
        wall_s, events, _ = measure(trace, system, memory=False)
        ratio = budget.wall_s / wall_s
        worst = max(worst, ratio, 1 / ratio)
        line = (f"{name} {sets} {n:,}: events {budget.events:,.0f}/{events:,} "
                f"({budget.events / events:.2f}x), wall {budget.wall_s:.3g}/{wall_s:.3g} s "
                f"({ratio:.2f}x) ({cost_s:.2f} s)")
        if args.memory:
            _, _, peak = measure(trace, system, memory=True)
            line += f", memory {budget.memory_bytes / 1e6:.1f}/{peak / 1e6:.1f} MB"
        print(line, flush=True)
    print(f"worst wall-time ratio {worst:.2f}x (target within 2x)")


if __name__ == "__main__":
    main()
