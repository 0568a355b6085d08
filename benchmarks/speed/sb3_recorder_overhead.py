"""Recorder overhead on Stable-Baselines3 loops (target: the whole <= 5 %): model.learn
with RldseCallback and without (a callback as cheap as SB3's default, which only times the
loop), same seed (the runs take identical decisions), interleaved ABBA so that drifts in
host load hit both alike.

Per round, the untraced and the traced run's CPU time (this process's, time.process_time:
torch runs one thread, and the recorder adds none) and wall time; of the traced run, the
time inside the callback's start (calibration, wrapping) and end (building and writing the
trace) is the fixed overhead, and what is left over the untraced run is the in-loop
overhead (the hooks and rows, per step). The verdict is on CPU time: on a shared host the
wall time also counts the turns other processes take on the cores (rounds of one run here
moved by -30 % to +120 % at load 1-2.5), which no recorder causes. Prints every round, the
medians of the paired differences (CPU and wall), the recorder time the trace itself
removes (the tight-loop calibrated cost of its cuts and the work counting; in situ a step
costs several times more, as the loop evicts the recorder from the caches), the trace's
wall time over the untraced loop's (what the trace keeps of the recorder: its error as a
record of the unrecorded loop, within wall-time noise), the host load, and PASS/FAIL of the
whole's CPU-time median against 5 % by its band: PASS only if the 95 % bootstrap interval
of the median is at or under the target. Once-per-process costs (the host fingerprint,
importing pandas and pyarrow to write the trace), which every capture in a process shares,
are measured first and printed apart; counting the network's work (cached per process by
the network's structure, about 12 ms for SB3's CartPole nets) is paid by the warm-up
capture.

    python benchmarks/speed/sb3_recorder_overhead.py [--algos PPO DQN] [--steps 4096] [--rounds 25]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from stable_baselines3 import DQN, PPO
from stable_baselines3.common.callbacks import BaseCallback

from rldse.integrations.sb3 import RldseCallback

TARGET = 0.05
ALGOS = {"PPO": (PPO, {"n_steps": 1024, "batch_size": 64, "n_epochs": 4}),
         "DQN": (DQN, {"learning_starts": 500, "batch_size": 32})}


class Span(BaseCallback):
    """The untraced run's callback: no per-step work beyond SB3's default (``callback=None``
    runs a ConvertCallback whose ``_on_step`` returns True, as this one does); it times the
    loop, from training start to end, to compare with the trace's wall time."""

    def _on_training_start(self) -> None:
        self.t0 = time.perf_counter()

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        self.loop_s = time.perf_counter() - self.t0


class TimedCallback(RldseCallback):
    """RldseCallback that times its own start and end (the fixed overhead)."""

    fixed_s = 0.0  # CPU seconds

    def _on_training_start(self) -> None:
        t0 = time.process_time()
        super()._on_training_start()
        self.fixed_s += time.process_time() - t0

    def _on_training_end(self) -> None:
        t0 = time.process_time()
        super()._on_training_end()
        self.fixed_s += time.process_time() - t0


def run(algo: str, steps: int, out: Path | None) -> tuple[float, float, float, float, float]:
    """(CPU s, wall s, fixed CPU s, recorder s the trace removed, loop wall s: the untraced
    run's loop, or the traced run's as its trace states it) of one model.learn."""
    from rldse.trace import load_trace

    cls, kwargs = ALGOS[algo]
    model = cls("MlpPolicy", "CartPole-v1", seed=0, device="cpu", **kwargs)
    callback = TimedCallback(out) if out else Span()
    c0, t0 = time.process_time(), time.perf_counter()
    model.learn(steps, callback=callback)
    cpu_s, wall_s = time.process_time() - c0, time.perf_counter() - t0
    if out is None:
        return cpu_s, wall_s, 0.0, 0.0, callback.loop_s
    meta = load_trace(out).meta
    return (cpu_s, wall_s, callback.fixed_s,
            meta.workload_info["recorded_wall_s"] - meta.wall_time_s, meta.wall_time_s)


def once_per_process() -> str:
    """Time what the first recording in a process pays once."""
    from rldse.workloads.common.base import host_fingerprint

    parts = []
    t0 = time.perf_counter()
    host_fingerprint()
    parts.append(f"host fingerprint {time.perf_counter() - t0:.2f} s")
    for name in ("pandas", "pyarrow.parquet"):
        if name in sys.modules:
            parts.append(f"{name} already imported")
            continue
        t0 = time.perf_counter()
        __import__(name)
        parts.append(f"import {name} {time.perf_counter() - t0:.2f} s")
    return ", ".join(parts)


def median_ci(values: list[float], draws: int = 10_000) -> tuple[float, float]:
    """95 % bootstrap interval of the median (seeded: the same rounds give the same CI)."""
    import numpy as np

    x = np.asarray(values)
    idx = np.random.default_rng(0).integers(0, len(x), size=(draws, len(x)))
    lo, hi = np.percentile(np.median(x[idx], axis=1), [2.5, 97.5])
    return float(lo), float(hi)


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def pct(x: float) -> str:
    return f"{100 * x:+.1f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algos", nargs="+", choices=list(ALGOS), default=list(ALGOS))
    ap.add_argument("--steps", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=25)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch threads 1, load (1/5/15 min) {load()} on {os.cpu_count()} CPUs")
    print(f"once per process, before the rounds (shared by every capture): {once_per_process()}")
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        for algo in args.algos:
            warm = min(args.steps, 1024)
            run(algo, warm, None)  # warm-up: first-use costs of torch, SB3 and the recorder
            run(algo, warm, Path(tmp) / "warm.parquet")
            whole, in_loop, fixed, removed, wall, kept = [], [], [], [], [], []
            for r in range(args.rounds):
                out = Path(tmp) / f"{algo}{r}.parquet"
                if r % 2 == 0:  # ABBA
                    plain_s, plain_wall_s, _, _, plain_loop_s = run(algo, args.steps, None)
                    traced_s, traced_wall_s, fixed_s, removed_s, trace_s = run(algo, args.steps,
                                                                               out)
                else:
                    traced_s, traced_wall_s, fixed_s, removed_s, trace_s = run(algo, args.steps,
                                                                               out)
                    plain_s, plain_wall_s, _, _, plain_loop_s = run(algo, args.steps, None)
                whole.append(traced_s / plain_s - 1)
                fixed.append(fixed_s / plain_s)
                in_loop.append((traced_s - fixed_s) / plain_s - 1)
                removed.append(removed_s / plain_s)
                wall.append(traced_wall_s / plain_wall_s - 1)
                kept.append(trace_s / plain_loop_s - 1)
                print(f"  {algo} round {r}: CPU untraced {plain_s:.3f} s, traced {traced_s:.3f} "
                      f"s: whole {pct(whole[-1])} = in-loop {pct(in_loop[-1])} + fixed "
                      f"{pct(fixed[-1])} ({fixed_s * 1e3:.0f} ms); wall {pct(wall[-1])}; "
                      f"load {load()}", flush=True)
            w = statistics.median(whole)
            lo, hi = median_ci(whole)
            ok = hi <= TARGET  # the band, not the point, decides
            verdicts.append(ok)
            per_step_us = statistics.median(in_loop) * plain_s / args.steps * 1e6  # CPU
            print(f"{algo} CartPole-v1, {args.steps} steps, {args.rounds} rounds (medians of "
                  f"paired differences): CPU time whole {pct(w)} (95 % CI of the median "
                  f"{pct(lo)} to {pct(hi)}) "
                  f"[{'PASS' if ok else 'FAIL'}: the interval <= {TARGET:.0%}]; in-loop "
                  f"{pct(statistics.median(in_loop))} (~{per_step_us:.1f} us per step); fixed "
                  f"{pct(statistics.median(fixed))}; recorder time the trace removes "
                  f"{pct(statistics.median(removed))} (tight-loop calibration); the trace's "
                  f"wall time over the untraced loop's {pct(statistics.median(kept))} "
                  f"(recorder time the calibration misses, and wall-time noise); "
                  f"wall time whole {pct(statistics.median(wall))} (host-load noise)",
                  flush=True)
    print(f"load at the end {load()}; overall {'PASS' if all(verdicts) else 'FAIL'}")


if __name__ == "__main__":
    main()
