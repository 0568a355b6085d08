"""Clean unit costs from a busy host: the same capture quiet and with two busy loops beside it.

Runs the DQN CartPole-v1 loop (fixed seed, so the same operations every run) under the
built-in Recorder, pinned to one logical CPU, alternately alone and with two busy-loop
processes pinned to that same CPU (so it gets about a third of it). Per phase it prints
the unit cost (mean seconds per op) from CPU time (``cpu_s``, what the simulator costs
compute ops from: rldse.trace.host_cost_s) and from wall time (``dur_s``), quiet and
contended, with their relative difference; medians over the repetitions. Target: every
phase's CPU-time unit cost within 5 % of the quiet one (the wall-time ones are shown to
say how much contention there was to remove). Exits 0 either way (non-zero on a crash).

    python benchmarks/contended_capture.py [--steps 3000] [--reps 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from rldse.workloads.common.recorder import Recorder
from rldse.workloads.offpolicy.dqn import DQNConfig, train

TARGET = 0.05
BUSY_LOOPS = 2


def capture(cfg: DQNConfig) -> dict[str, tuple[float, float]]:
    """Per phase: (mean CPU seconds per op, mean wall seconds per op) of one traced run."""
    rec = Recorder(worker="host")
    train(cfg, rec)
    g = rec.frame().groupby("phase", observed=True)
    return {str(p): (float(f["cpu_s"].mean()), float(f["dur_s"].mean())) for p, f in g}


def busy_loops(cpu: int) -> list[subprocess.Popen]:
    """Busy-loop processes pinned to ``cpu`` (running once this returns)."""
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(BUSY_LOOPS)]
    time.sleep(0.3)  # started and spinning
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
        p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not hasattr(os, "sched_setaffinity"):
        sys.exit("contended_capture: needs os.sched_setaffinity (Linux)")
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    cfg = DQNConfig(env_id="CartPole-v1", steps=args.steps, seed=args.seed)
    capture(cfg)  # warm-up: imports, allocator, caches
    quiet, busy = [], []
    for rep in range(args.reps):
        quiet.append(capture(cfg))
        procs = busy_loops(cpu)
        try:
            busy.append(capture(cfg))
        finally:
            stop(procs)
        print(f"rep {rep} done", flush=True)

    def med(runs, phase, k):
        return statistics.median(r[phase][k] for r in runs)

    print(f"DQN CartPole-v1, {args.steps} steps, seed {args.seed}, {args.reps} reps, pinned to "
          f"CPU {cpu}; contended: {BUSY_LOOPS} busy loops on the same CPU (medians)")
    print(f"{'phase':<14}{'cpu quiet us':>13}{'cpu busy us':>13}{'diff':>8}"
          f"{'wall quiet us':>15}{'wall busy us':>14}{'diff':>8}")
    worst = 0.0
    for phase in sorted(quiet[0]):
        cq, cb = med(quiet, phase, 0) * 1e6, med(busy, phase, 0) * 1e6
        wq, wb = med(quiet, phase, 1) * 1e6, med(busy, phase, 1) * 1e6
        worst = max(worst, abs(cb / cq - 1))
        print(f"{phase:<14}{cq:>13.2f}{cb:>13.2f}{cb / cq - 1:>+8.1%}"
              f"{wq:>15.2f}{wb:>14.2f}{wb / wq - 1:>+8.1%}")
    verdict = "PASS" if worst <= TARGET else "FAIL"
    print(f"worst CPU-time unit cost difference {worst:.1%} (target <= {TARGET:.0%}) {verdict}")


if __name__ == "__main__":
    main()
