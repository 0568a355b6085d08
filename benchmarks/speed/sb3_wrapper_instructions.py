"""Where RldseCallback's in-loop instructions go on SB3 DQN (CartPole): callgrind counts of
the loop alone (from the end of the callback's start to the start of its end), per step,
over an untraced run of the same seed, for

- ``plain``: a callback that does nothing (twice: the spread between identical runs);
- ``passthrough``: a plain callback that installs the five wrappers RldseCallback puts on
  a DQN model (``_sample_action``, ``_store_transition``, ``train``,
  ``replay_buffer.sample``, ``action_space.sample``) as bare pass-throughs;
- ``rldse-no-cuts``: RldseCallback with the same pass-throughs instead of its wrappers and
  no episode check (its start, Recording and calibration included; no trace written);
- ``rldse-no-episodes``: RldseCallback with its wrappers and cuts but no episode check (no
  trace written);
- ``rldse``: RldseCallback as users run it.

What ``rldse-no-episodes`` adds over ``rldse-no-cuts`` is the cuts; what ``rldse`` adds
over ``rldse-no-episodes``, the episode check (``_on_step``); what ``rldse-no-cuts`` adds
over ``passthrough``, the callback's own context. Every class is
defined once, at module level (a class made per run changes the types the interpreter's
specializations guard on). Takes about 12 minutes at 2,048 steps; needs valgrind.

    python benchmarks/speed/sb3_wrapper_instructions.py [--steps 2048]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from callgrind_common import control, run_child

VARIANTS = ("plain", "passthrough", "rldse-no-cuts", "rldse-no-episodes", "rldse", "plain")


def child(steps: int, out: Path) -> None:
    """Inside valgrind: a warm-up run of every variant, then one counted run of each."""
    import torch
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import BaseCallback

    from rldse.integrations.sb3 import RldseCallback
    from rldse.workloads.common.base import host_fingerprint

    torch.set_num_threads(1)
    host_fingerprint()

    def passthrough(orig):
        def wrapped(*a, **k):
            return orig(*a, **k)
        return wrapped

    def targets(model):
        return [(model, "_sample_action"), (model, "_store_transition"), (model, "train"),
                (model.replay_buffer, "sample"), (model.action_space, "sample")]

    class Counted:
        """Counts the loop: instrumentation on after the start, dumped before the end."""

        label: str | None = None

        def _on_training_start(self) -> None:
            super()._on_training_start()
            if self.label:
                control("--instr=on")
                control("--zero")

        def _on_training_end(self) -> None:
            if self.label:
                control(f"--dump={self.label}")
                control("--instr=off")
            super()._on_training_end()

    class Nothing(BaseCallback):
        def _on_step(self) -> bool:
            return True

    class Plain(Counted, Nothing):
        pass

    class PassThrough(Counted, Nothing):
        def _on_training_start(self) -> None:
            for obj, name in targets(self.model):
                setattr(obj, name, passthrough(getattr(obj, name)))
            super()._on_training_start()

        def _on_training_end(self) -> None:
            super()._on_training_end()
            for obj, name in targets(self.model):
                delattr(obj, name)

    class NoEpisodes(RldseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_training_end(self) -> None:  # restore, write nothing
            for obj, name in reversed(self._restore):
                delattr(obj, name)

    class NoCuts(NoEpisodes):
        def _wrap(self, obj, name, make) -> None:
            setattr(obj, name, passthrough(getattr(obj, name)))
            self._restore.append((obj, name))

    class RldseNoCuts(Counted, NoCuts):
        pass

    class RldseNoEpisodes(Counted, NoEpisodes):
        pass

    class Rldse(Counted, RldseCallback):
        pass

    def learn(variant: str, label: str | None) -> None:
        model = DQN("MlpPolicy", "CartPole-v1", seed=0, device="cpu", learning_starts=500,
                    batch_size=32)
        if variant == "plain":
            callback = Plain()
        elif variant == "passthrough":
            callback = PassThrough()
        else:
            callback = {"rldse-no-cuts": RldseNoCuts, "rldse-no-episodes": RldseNoEpisodes,
                        "rldse": Rldse}[variant](out / "run.parquet")
        callback.label = label
        model.learn(steps, callback=callback)

    for variant in dict.fromkeys(VARIANTS):
        learn(variant, None)
    for i, variant in enumerate(VARIANTS):
        learn(variant, f"{i}-{variant}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2048)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.steps, args.child)
        return
    counts = {desc: events["Ir"] for desc, events in
              run_child(__file__, ["--steps", str(args.steps)]).items()}
    base = counts[f"0-{VARIANTS[0]}"]
    print(f"SB3 DQN CartPole-v1, {args.steps} steps, callgrind instructions in the loop "
          f"(over the first plain run, per step):")
    for i, variant in enumerate(VARIANTS):
        n = counts[f"{i}-{variant}"]
        print(f"  {variant:14s} {n:>15,}  {(n - base) / args.steps:+9,.0f} per step")


if __name__ == "__main__":
    main()
