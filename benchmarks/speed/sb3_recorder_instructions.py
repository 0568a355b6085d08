"""Recorder overhead on SB3 DQN (CartPole) counted by callgrind rather than timed: the
instructions, cache misses and mispredicted branches the RldseCallback adds to the loop
and to the trace's writing, over an untraced run of the same seed. The counts do not move
with host load, so they tell apart changes that the CPU-time benchmark
(``sb3_recorder_overhead.py``) cannot resolve from its noise; the time a miss or a
mispredict costs is the host's, so the verdict stays with that benchmark.

Runs itself under ``valgrind --tool=callgrind`` (instrumentation off while importing and
warming up, then on for one untraced and one traced ``learn``, each dumped apart: the
traced run's loop and its end, building and writing the trace, separately). Takes about
8 minutes at 2,048 steps. Needs valgrind on the PATH.

    python benchmarks/speed/sb3_recorder_instructions.py [--steps 2048] [--cache-sim]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from callgrind_common import control, run_child

EVENTS = {"Ir": "instructions", "I1mr": "L1i misses", "D1mr": "L1d read misses",
          "Bcm": "mispredicted branches", "Bim": "mispredicted indirect jumps"}


def child(steps: int, out: Path) -> None:
    """Inside valgrind: warm up, then learn untraced and traced with dumps between."""
    import torch
    from stable_baselines3 import DQN

    from rldse.integrations.sb3 import RldseCallback
    from rldse.workloads.common.base import host_fingerprint

    torch.set_num_threads(1)
    host_fingerprint()  # once-per-process costs, outside the counts

    class Dumping(RldseCallback):
        def _on_training_end(self) -> None:
            if self.dump:
                control("--dump=traced_loop")
            super()._on_training_end()

    def learn(traced: bool, dump: bool) -> None:
        model = DQN("MlpPolicy", "CartPole-v1", seed=0, device="cpu", learning_starts=500,
                    batch_size=32)
        callback = Dumping(out / "run.parquet") if traced else None
        if callback is not None:
            callback.dump = dump
        model.learn(steps, callback=callback)

    learn(False, False)
    learn(True, False)
    control("--instr=on")
    control("--zero")
    learn(False, True)
    control("--dump=untraced")
    learn(True, True)
    control("--dump=traced_end")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2048)
    ap.add_argument("--cache-sim", action="store_true",
                    help="also simulate caches and branch prediction (slower)")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.steps, args.child)
        return
    dumps = run_child(__file__, ["--steps", str(args.steps)], cache_sim=args.cache_sim)
    plain, loop, end = dumps["untraced"], dumps["traced_loop"], dumps["traced_end"]
    print(f"SB3 DQN CartPole-v1, {args.steps} steps, callgrind counts (untraced run; what "
          "the recorder adds in the loop, and building and writing the trace):")
    for event, name in EVENTS.items():
        if event in plain:
            added = loop[event] - plain[event]
            print(f"  {name:28s} {plain[event]:>15,}  loop {added:+13,} "
                  f"({100 * added / plain[event]:+.2f} %, {added / args.steps:,.0f} per "
                  f"step)  end {end[event]:+12,} ({100 * end[event] / plain[event]:+.2f} %)")


if __name__ == "__main__":
    main()
