"""Clean unit costs from a busy host: the same capture quiet and with two busy loops beside it.

Runs the DQN CartPole-v1 loop (fixed seed, so the same operations every run) under the
built-in Recorder, pinned to one logical CPU, alternately alone and with two busy-loop
processes pinned to that same CPU (so it gets about a third of it). The order is ABBA
(quiet, busy, busy, quiet, ...): a cloud VM's own speed drifts by tens of percent over
seconds (its neighbours), and ABBA cancels a drift that is linear over a block. The
noise floor printed beside it is the same comparison between the quiet runs of the first
and second half: a difference below it cannot be told from the host's drift. Per phase it prints
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
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=8, help="quiet and busy runs each (even)")
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
        for contended in ((False, True) if rep % 2 == 0 else (True, False)):
            if not contended:
                quiet.append(capture(cfg))
                continue
            procs = busy_loops(cpu)
            try:
                busy.append(capture(cfg))
            finally:
                stop(procs)
        print(f"rep {rep} done", flush=True)

    def med(runs, phase, k):
        return statistics.median(r[phase][k] for r in runs)

    half = len(quiet) // 2
    print(f"DQN CartPole-v1, {args.steps} steps, seed {args.seed}, {args.reps} reps each, "
          f"pinned to CPU {cpu}; contended: {BUSY_LOOPS} busy loops on the same CPU (medians "
          "over runs; 'noise': quiet runs of the first half against the second)")
    print(f"{'phase':<14}{'cpu quiet us':>13}{'cpu busy us':>13}{'diff':>8}"
          f"{'noise':>8}{'wall quiet us':>15}{'wall busy us':>14}{'diff':>8}")
    worst = noise_worst = 0.0
    for phase in sorted(quiet[0]):
        cq, cb = med(quiet, phase, 0), med(busy, phase, 0)
        wq, wb = med(quiet, phase, 1), med(busy, phase, 1)
        noise = med(quiet[half:], phase, 0) / med(quiet[:half], phase, 0) - 1
        worst, noise_worst = max(worst, abs(cb / cq - 1)), max(noise_worst, abs(noise))
        print(f"{phase:<14}{cq * 1e6:>13.2f}{cb * 1e6:>13.2f}{cb / cq - 1:>+8.1%}"
              f"{noise:>+8.1%}"
              f"{wq * 1e6:>15.2f}{wb * 1e6:>14.2f}{wb / wq - 1:>+8.1%}")
    verdict = "PASS" if worst <= TARGET else "FAIL"
    print(f"worst CPU-time unit cost difference {worst:.1%} (target <= {TARGET:.0%}) {verdict}; "
          f"worst quiet-against-quiet difference {noise_worst:.1%}")


if __name__ == "__main__":
    main()
