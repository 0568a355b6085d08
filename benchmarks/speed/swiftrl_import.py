"""Time SwiftRL dataset import: parse + validate, and the full captured offline training.

Generates a 1M-transition Taxi-shaped dataset (or takes a file), then prints the read
time, the whole `import_swiftrl` time (one pass, one agent) and the training loop's
transitions per second, from the trace's own q_update timing.

    python benchmarks/speed/swiftrl_import.py [--transitions N] [--file PATH] [--dtype int32]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from time import perf_counter

import numpy as np
import pandas as pd

from rldse.workloads.tabular.swiftrl_format import import_swiftrl, read_swiftrl, write_swiftrl


def taxi_shaped(n: int, seed: int = 0) -> pd.DataFrame:
    """Random transitions with Taxi's spaces (500 states, 6 actions) and rewards."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "state": rng.integers(500, size=n), "action": rng.integers(6, size=n),
        "reward": rng.choice([-1, -10, 20], size=n), "next_state": rng.integers(500, size=n),
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--file", type=Path, help="an existing SwiftRL file instead")
    parser.add_argument("--dtype", choices=["fp32", "int32"], default="fp32")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or write_swiftrl(taxi_shaped(args.transitions),
                                          Path(tmp) / "Taxi_trajectories_bench.txt")
        start = perf_counter()
        data = read_swiftrl(path)
        read_s = perf_counter() - start
        start = perf_counter()
        trace = import_swiftrl(path, dtype=args.dtype)
        import_s = perf_counter() - start
    updates = trace.ops[trace.ops.phase == "q_update"]
    loop_s = float(updates["dur_s"].sum())
    n = int(updates["items"].sum())
    print(f"transitions:            {len(data):,}")
    print(f"read + validate:        {read_s:.3f} s")
    print(f"import_swiftrl (total): {import_s:.3f} s  (read, 1 agent x 1 pass {args.dtype}, "
          "host fingerprint, trace)")
    print(f"training loop:          {loop_s:.3f} s = {n / loop_s:,.0f} transitions/s "
          f"({loop_s / n * 1e6:.2f} us per transition)")


if __name__ == "__main__":
    main()
