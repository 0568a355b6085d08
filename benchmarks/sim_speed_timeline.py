"""Cost of a streamed ``--timeline`` against a plain simulate (prints; not a test).

The actor-learner program on examples/dgx1_like.yaml at 1e6 env steps, with local and
central inference, each run with and without a timeline streamed to a temporary file,
alternating, best of 3. Prints both walls, the ratio (target <= 1.5x) and the events and
bytes written (a booking made for a worker is two events: its device lane and its worker's
track). Central inference books every env step of every actor, so it costs the most.

    python benchmarks/sim_speed_timeline.py [--steps 1000000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rldse.sim import simulate
from rldse.system import load_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    args = ap.parse_args()
    trace = load_trace(ROOT / "traces" / "actor_learner_cartpole_2.parquet")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "timeline.json"
        for inference in ("local", "central"):
            system = resolve(load_spec(ROOT / "examples" / "dgx1_like.yaml",
                                       {"workload.env_steps": args.steps,
                                        "workload.inference": inference}), trace)
            simulate(trace, system)  # warm the per-trace caches
            best = {False: float("inf"), True: float("inf")}
            for _ in range(3):
                for streamed in (False, True):
                    t0 = time.perf_counter()
                    simulate(trace, system, timeline=out if streamed else None)
                    best[streamed] = min(best[streamed], time.perf_counter() - t0)
            events = len(json.loads(out.read_text())["traceEvents"])
            ratio = best[True] / best[False]
            print(f"{inference:7} inference, {args.steps:.0e} steps: plain {best[False]:.3f} s, "
                  f"timeline {best[True]:.3f} s, {ratio:.2f}x "
                  f"({'PASS' if ratio <= 1.5 else 'FAIL'} against 1.5x); {events:,} events, "
                  f"{out.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
