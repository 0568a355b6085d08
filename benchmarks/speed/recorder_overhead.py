"""How much the recorder slows DQN training down, and how much of the loop its rows cover.

Runs the same DQN CartPole-v1 loop (fixed seed) traced (Recorder) and untraced
(NullRecorder), alternating, and pairs each traced run with the untraced run just before
it, so that slow drifts in machine load cancel; it reports the median of the paired ratios:

- overhead = traced wall / untraced wall - 1 (target <= 5 %);
- coverage = sum of the traced run's bias-corrected op durations / untraced wall
  (target within 10 % of 1): the ops should account for the loop's real time, neither
  missing work between them nor counting the recorder's own cost.

Prints PASS/FAIL for each target and exits 0 either way (non-zero only on a crash).

    python benchmarks/speed/recorder_overhead.py [--steps 20000] [--reps 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import statistics
import time

from rldse.workloads.common.recorder import NullRecorder, Recorder
from rldse.workloads.offpolicy.dqn import DQNConfig, train

OVERHEAD_TARGET = 0.05
COVERAGE_TARGET = 0.10


def run_untraced(cfg: DQNConfig) -> float:
    """Wall seconds of one untraced training run."""
    t0 = time.perf_counter()
    train(cfg, NullRecorder())
    return time.perf_counter() - t0


def run_traced(cfg: DQNConfig) -> tuple[float, float, int, float]:
    """Wall seconds, summed corrected op seconds, rows and per-record bias (ns) of a traced run."""
    rec = Recorder(worker="host")
    t0 = time.perf_counter()
    train(cfg, rec)
    wall_s = time.perf_counter() - t0
    ops = rec.frame()
    return wall_s, float(ops["dur_s"].sum()), len(ops), rec.overhead_ns


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cfg = DQNConfig(env_id="CartPole-v1", steps=args.steps, seed=args.seed)

    run_untraced(cfg)  # warm-up: imports, allocator, caches
    untraced, traced = [], []
    for rep in range(args.reps):
        untraced.append(run_untraced(cfg))
        traced.append(run_traced(cfg))
        print(f"rep {rep}: untraced {untraced[-1]:.3f} s, traced {traced[-1][0]:.3f} s, "
              f"ops sum {traced[-1][1]:.3f} s", flush=True)

    base_s = statistics.median(untraced)
    traced_s = statistics.median(t[0] for t in traced)
    rows, bias_ns = traced[-1][2], statistics.median(t[3] for t in traced)
    overhead = statistics.median(t[0] / u for t, u in zip(traced, untraced, strict=True)) - 1.0
    coverage = statistics.median(t[1] / u for t, u in zip(traced, untraced, strict=True))

    print(f"DQN CartPole-v1, {args.steps} steps, seed {args.seed}, {args.reps} reps (medians of paired ratios)")
    print(f"untraced wall        {base_s:.3f} s")
    print(f"traced wall          {traced_s:.3f} s")
    print(f"ops recorded         {rows} ({rows / args.steps:.2f} per env step)")
    print(f"per-record bias      {bias_ns:.0f} ns")
    print(f"recorder overhead    {overhead:+.2%}  (target <= {OVERHEAD_TARGET:.0%}) "
          f"{verdict(overhead <= OVERHEAD_TARGET)}")
    print(f"op-time coverage     {coverage:.2%} of untraced wall  "
          f"(target 100% +- {COVERAGE_TARGET:.0%}) "
          f"{verdict(abs(coverage - 1.0) <= COVERAGE_TARGET)}")


if __name__ == "__main__":
    main()
