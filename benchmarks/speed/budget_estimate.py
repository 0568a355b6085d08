"""How close `rldse simulate`'s up-front estimate (rldse.sim.budget) comes to the run it
estimates: events, the program's CPU time and the wall time (and with --memory the
tracemalloc peak), estimated against measured, for ten long designs of the shipped traces
across the families (each run takes 15-60 s here; --scale shrinks or grows every run).
Prints one row per design, the ratios and the worst; the target is every ratio within 2x.
The CPU ratio is the cost model's; the wall ratio also carries any change in the host's
load between the estimate and the run (the estimate assumes the load it saw holds).

The load column: the wall seconds per CPU second the estimate assumed (the pilots' own,
rldse.sim.budget.wall_per_cpu) and the run's own.

Then `env_steps=1e10` on one trace of each family (rldse.workloads.WORKLOADS), ten times
each through `rldse simulate` in this process: the exit code, the seconds to the answer
(target: an answer in under 5 s, ten times out of ten: refused, or for tabular, run)
and the estimate it gave.

    python benchmarks/speed/budget_estimate.py [--scale 1.0] [--memory] [--only N]
        [--refusals-only] [--repeats 10]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import time
import tracemalloc
from pathlib import Path

from rldse.sim.budget import Meter, estimate
from rldse.sim.machine import Machine
from rldse.system import load_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
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
    ("ddpg_pendulum", SPEC, {"workload.learner": "sync"}, 40_000_000),
]
#: one trace per family for the 1e10 runs (tabular: its online loop merges a million steps
#: per event, so 1e10 steps take about a second and are run, not refused; the most
#: env_steps a spec may ask for is 1e10, so that is the longest tabular run there is)
FAMILIES = [("actor_learner_cartpole_2", SPEC), ("dqn_cartpole_uniform", SPEC),
            ("ddpg_pendulum", SPEC), ("tabular_frozenlake", CPU)]
REFUSE_STEPS = "1e10"


def measure(trace, system, memory: bool) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds, events and (with ``memory``) the tracemalloc peak."""
    if memory:
        tracemalloc.start()
    machine = Machine(trace, system)
    meter = Meter(machine)
    t0, c0 = time.perf_counter(), time.process_time()
    machine.result(system.workload.program(machine))
    wall_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1] if memory else 0
    if memory:
        tracemalloc.stop()
    return wall_s, cpu_s, meter.events, peak


def estimates(args) -> None:
    print("trace, sets, env steps: estimated/measured events, CPU s (ratio), wall s (ratio); "
          "the estimate's own wall seconds")
    worst = {"cpu": 1.0, "wall": 1.0}
    for i, (name, spec, sets, steps) in enumerate(CASES):
        if args.only is not None and i != args.only:
            continue
        trace = load_trace(ROOT / "traces" / f"{name}.parquet")
        n = max(int(steps * args.scale), 1)
        system = resolve(load_spec(spec, {**sets, "workload.env_steps": n}), trace)
        t0 = time.perf_counter()
        budget = estimate(trace, system, memory=args.memory)
        cost_s = time.perf_counter() - t0
        wall_s, cpu_s, events, _ = measure(trace, system, memory=False)
        ratios = {"cpu": budget.cpu_s / cpu_s, "wall": budget.wall_s / wall_s}
        for k, r in ratios.items():
            worst[k] = max(worst[k], r, 1 / r)
        line = (f"{name} {sets} {n:,}: events {budget.events:,.0f}/{events:,} "
                f"({budget.events / events:.2f}x), CPU {budget.cpu_s:.3g}/{cpu_s:.3g} s "
                f"({ratios['cpu']:.2f}x), wall {budget.wall_s:.3g}/{wall_s:.3g} s "
                f"({ratios['wall']:.2f}x) ({cost_s:.2f} s); load {budget.load}; "
                f"the run's {wall_s / cpu_s:.2f}")
        if args.memory:
            _, _, _, peak = measure(trace, system, memory=True)
            line += f", memory {budget.memory_bytes / 1e6:.1f}/{peak / 1e6:.1f} MB"
        print(line, flush=True)
    print(f"worst ratio: CPU {worst['cpu']:.2f}x, wall {worst['wall']:.2f}x (target within 2x); "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at the end")


def refusals(repeats: int) -> None:
    """`rldse simulate TRACE --system SPEC --set workload.env_steps=N`, ``repeats`` times
    per family: exit code, seconds to the answer, and the first line it printed."""
    from rldse.cli import main

    print(f"env_steps={REFUSE_STEPS}, {repeats} tries each: exit codes, seconds, answer")
    slowest = 0.0
    for name, spec in FAMILIES:
        argv = ["simulate", str(ROOT / "traces" / f"{name}.parquet"), "--system", str(spec),
                "--set", f"workload.env_steps={REFUSE_STEPS}"]
        codes, times, said = [], [], ""
        for _ in range(repeats):
            err, out = io.StringIO(), io.StringIO()
            t0 = time.perf_counter()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                codes.append(main(argv))
            times.append(time.perf_counter() - t0)
            said = (err.getvalue() or out.getvalue()).strip().splitlines()[0]
        slowest = max(slowest, max(times))
        print(f"{name}: refused {codes.count(2)}/{len(codes)}, ran {codes.count(0)}/"
              f"{len(codes)}, exit {sorted(set(codes))}, {min(times):.2f}-{max(times):.2f} s; "
              f"{said[:160]}", flush=True)
    print(f"slowest answer {slowest:.2f} s (target under 5 s); "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every run's env steps")
    ap.add_argument("--memory", action="store_true", help="also measure the tracemalloc peak")
    ap.add_argument("--only", type=int, help="run case N (0-based) alone")
    ap.add_argument("--refusals-only", action="store_true", help="only the 1e10 refusals")
    ap.add_argument("--repeats", type=int, default=10, help="tries per family (refusals)")
    args = ap.parse_args()
    if not args.refusals_only:
        estimates(args)
    refusals(args.repeats)


if __name__ == "__main__":
    main()
