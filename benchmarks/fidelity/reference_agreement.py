"""The fast engine against the per-operation reference engine (rldse/sim/agreement.py) on
contended configurations of the three program families: more actors than cores, replay
and learner on one GPU, central inference beside the learner, more tabular workers than
cores. Per-op costs are the trace's own rows (cycled from a seeded start), not their means.
Prints, per configuration, every compared metric: the fast value, the reference value and
their difference.

    PYTHONPATH=. python benchmarks/fidelity/reference_agreement.py [--scale K]

``--scale`` multiplies every configuration's env_steps (default 1: the sizes
tests/sim/test_reference.py runs; its slow variant runs --scale 4).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rldse.sim.agreement import CONFIGS, TOLERANCE, run

TRACES = Path(__file__).resolve().parents[2] / "traces"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=1)
    args = ap.parse_args()
    print(f"fast engine against the reference engine; tolerance {TOLERANCE:.0%}; "
          f"env_steps x {args.scale}")
    print(f"{'configuration':64s} {'metric':22s} {'fast':>12s} {'reference':>12s} "
          f"{'fast/ref-1':>11s}")
    worst = 0.0
    for name in CONFIGS:
        t0 = time.perf_counter()
        a = run(name, TRACES, args.scale)
        for key, err in a.errors.items():
            flag = "" if abs(err) <= TOLERANCE else "  OVER"
            print(f"{name:64s} {key:22s} {a.fast[key]:12.6g} {a.reference[key]:12.6g} "
                  f"{err:+11.4%}{flag}")
            worst = max(worst, abs(err))
        print(f"{'':64s} ({time.perf_counter() - t0:.1f} s wall, both engines)")
    print(f"worst |fast/ref-1| over {len(CONFIGS)} configurations: {worst:.4%}")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
