"""Predict SB3 DQN at batch 128 from a batch-32 capture on this CPU, then run batch 128 for
real: the learner update time and the whole loop, predicted (rldse simulate on the capture
host's own preset, --set workload.batch_size=128) against measured.

    python benchmarks/fidelity/sb3_batch_prediction.py [--steps 4000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
from stable_baselines3 import DQN

from rldse.integrations.sb3 import RldseCallback
from rldse.sim import simulate
from rldse.sim.check_replay import host_spec_for
from rldse.system import parse_spec
from rldse.trace import load_trace


def capture(batch: int, steps: int, out: Path):
    model = DQN("MlpPolicy", "CartPole-v1", seed=0, device="cpu", batch_size=batch,
                learning_starts=500)
    model.learn(steps, callback=RldseCallback(out))
    return load_trace(out)


def learn_s(trace) -> float:
    ops = trace.ops
    return float(ops.loc[ops["phase"] == "learn", "dur_s"].mean())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        small = capture(32, args.steps, Path(tmp) / "b32.parquet")
        big = capture(128, args.steps, Path(tmp) / "b128.parquet")
    raw = {"name": "capture-host", "cpu": {"preset": "host"}, "workload": {"batch_size": 128}}
    what_if = simulate(small, parse_spec(raw, where="what-if"), seed=0)
    same = simulate(big, host_spec_for(big), seed=0)
    pred = what_if.phases_frame()
    pred_learn = float(pred.loc[pred["phase"] == "learn", "time_s"].sum()) / max(
        int(pred.loc[pred["phase"] == "learn", "count"].sum()), 1)
    meas = learn_s(big)
    print(f"DQN CartPole {args.steps} steps, batch 32 -> 128")
    print(f"  learn update: captured at 32 {1e6 * learn_s(small):.0f} us; predicted at 128 "
          f"{1e6 * pred_learn:.0f} us; measured at 128 {1e6 * meas:.0f} us; "
          f"error {100 * (pred_learn / meas - 1):+.1f} %")
    print(f"  whole loop: predicted {what_if.sim_time_s:.3f} s; measured {big.meta.wall_time_s:.3f} s "
          f"(its own replay {same.sim_time_s:.3f} s); error "
          f"{100 * (what_if.sim_time_s / big.meta.wall_time_s - 1):+.1f} %")


if __name__ == "__main__":
    main()
