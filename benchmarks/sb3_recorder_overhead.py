"""Recorder overhead on Stable-Baselines3 loops: wall time of model.learn with and without
RldseCallback, interleaved repeats (so host load drifts hit both alike); target <= 5 %.

    python benchmarks/sb3_recorder_overhead.py [--steps 4000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
from stable_baselines3 import DQN, PPO

from rldse.integrations.sb3 import RldseCallback
from rldse.trace import load_trace
from rldse.workloads.common.base import host_fingerprint

ALGOS = {"PPO": (PPO, {"n_steps": 1024, "batch_size": 64, "n_epochs": 4}),
         "DQN": (DQN, {"learning_starts": 500, "batch_size": 32})}


def timed(algo: str, steps: int, out: Path | None) -> float:
    cls, kwargs = ALGOS[algo]
    model = cls("MlpPolicy", "CartPole-v1", seed=0, device="cpu", **kwargs)
    callback = RldseCallback(out) if out else None
    t0 = time.perf_counter()
    model.learn(steps, callback=callback)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    host_fingerprint()  # measured once per process (about 1 s): not the loop's overhead
    with tempfile.TemporaryDirectory() as tmp:
        for algo in ALGOS:
            plain, traced = [], []
            for r in range(args.repeats):
                plain.append(timed(algo, args.steps, None))
                traced.append(timed(algo, args.steps, Path(tmp) / f"{algo}{r}.parquet"))
            # the traced time includes calibration and writing the trace
            p, t = statistics.median(plain), statistics.median(traced)
            rounds = ", ".join(f"{100 * (b / a - 1):+.1f}"
                               for a, b in zip(plain, traced, strict=True))
            print(f"{algo} CartPole {args.steps} steps: untraced {p:.3f} s, traced {t:.3f} s "
                  f"(median of {args.repeats}), overhead {100 * (t / p - 1):+.1f} % "
                  f"(rounds: {rounds} %)")
            meta = load_trace(Path(tmp) / f"{algo}0.parquet").meta
            rec_s = meta.workload_info["recorded_wall_s"]
            print(f"  in-loop share: the calibrated cost of its phases is "
                  f"{100 * (rec_s / meta.wall_time_s - 1):.1f} % of the loop; the rest of "
                  f"the difference is fixed (calibration, work counting, writing the trace) "
                  f"or host noise")


if __name__ == "__main__":
    main()
