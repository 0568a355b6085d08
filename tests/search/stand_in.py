"""A stand-in actor-learner program for the search tests (not a model of anything real).

The search must be tested before the workload programs exist, so this module plays one:
`register()` adds it to the workload registry (rldse.workloads.WORKLOADS), which is what
`simulate()` reads for a trace whose workload is 'stand_in'. It books simple analytic
costs from the trace on the machine's CPU and GPUs: `actors` actors share `cores`
cores, each stepping its rollout; then the learner runs the minibatches data-parallel
on the GPUs, paying an all-reduce per extra GPU. Forked search workers inherit the
registration; a subprocess calls `register()` itself.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from rldse.host import HostFingerprint
from rldse.models.kinds import Runs
from rldse.sim.machine import Machine, Outcome
from rldse.trace import Trace, TraceMeta
from rldse.workloads import WORKLOADS, Info, Knobs, Workload

NAME = "stand_in"
ROLLOUT = 32  # vector steps per actor per iteration
MINIBATCH = 64
EPOCHS = 2
ALLREDUCE_S = 2e-4  # per extra GPU per learner step


class StandInKnobs(Knobs):
    actors: int | None = Field(default=None, ge=1, le=65_536)
    envs_per_actor: int | None = Field(default=None, ge=1, le=65_536)


class Config(BaseModel):
    """The stand-in has no capture options (the capture parser reads a Config)."""


WORKLOAD = Workload(
    name=NAME, family=NAME, description="search-test stand-in", knobs=StandInKnobs, info=Info,
    placements={"act": (Runs.CORES, Runs.KERNELS),
                "learn": (Runs.CORES, Runs.KERNELS),
                "replay": ("*",)},  # a replay role it ignores: placement choices load
    trace_knobs=lambda info, trace, parts, placement: {"actors": 1, "envs_per_actor": 1},
    capture_module=__name__, program_module=__name__, worker_knob="actors")


def register() -> None:
    WORKLOADS[NAME] = WORKLOAD


def make_trace(host: HostFingerprint, steps: int = 2048, seed: int = 0) -> Trace:
    """Env steps and acts by one actor, and one learn row per MINIBATCH/EPOCHS steps."""
    rng = np.random.default_rng(seed)
    learns = steps * EPOCHS // MINIBATCH
    n = 2 * steps + learns
    ops = pd.DataFrame({
        "worker": ["actor/0"] * (2 * steps) + ["learner"] * learns,
        "phase": ["env_step", "act"] * steps + ["learn"] * learns,
        "iter": np.r_[np.repeat(np.arange(steps), 2), np.arange(learns)],
        "start_s": np.arange(n) * 1e-4,
        "dur_s": np.r_[np.tile([20e-6, 30e-6], steps) * rng.uniform(0.8, 1.2, 2 * steps),
                       rng.uniform(0.8e-3, 1.2e-3, learns)],
        "items": np.r_[np.ones(2 * steps, dtype=int), np.full(learns, MINIBATCH)],
        "flops": np.r_[np.tile([0, 2 * 4 * 64 + 2 * 64 * 2], steps), np.full(learns, 3 * 10**6)],
        "bytes": np.r_[np.tile([64, 4096], steps), np.full(learns, 200_000)],
        "touches": np.zeros(n, dtype=int),
        "dtype": ["fp32"] * n,
    })
    meta = TraceMeta(workload=NAME, algorithm="ppo", env_id="CartPole-v1", seed=seed,
                     workload_info={"policy_sizes": [4, 64, 64, 2]}, wall_time_s=float(n) * 1e-4,
                     recorder_overhead_ns=0.0, host=host)
    return Trace(ops=ops, meta=meta)


def program(machine: Machine) -> Outcome:
    knobs, placement = machine.knobs, machine.spec.placement
    cpu = machine.device("cpu")
    cores = min(knobs.cores or cpu.lanes, cpu.lanes)
    actors, envs = knobs.actors, knobs.envs_per_actor
    steps_per_iter = actors * envs * ROLLOUT
    total = knobs.env_steps or int(machine.trace.ops["phase"].eq("env_step").sum())
    iterations = math.ceil(total / steps_per_iter)
    step_s = float(machine.phase_cost("env_step", "cpu").mean())
    act_s = float(machine.phase_cost("act", placement.act).mean())
    learn_s = float(machine.phase_cost("learn", placement.learn).mean())
    minibatches = steps_per_iter * EPOCHS // MINIBATCH
    gpus = machine.gpus

    def loop():
        env = machine.env
        for _ in range(iterations):
            rollout_s = envs * ROLLOUT * (step_s + act_s)
            for a in range(actors):
                cpu.book(env.now + (a // cores) * rollout_s, rollout_s, "env_step")
            yield env.timeout(math.ceil(actors / cores) * rollout_s)
            if placement.learn == "gpu":
                dur = learn_s * minibatches / len(gpus) + ALLREDUCE_S * (len(gpus) - 1)
                for g in gpus:
                    g.book(env.now, dur, "learn")
            else:
                dur = learn_s * minibatches
                cpu.book(env.now, dur, "learn")
            yield env.timeout(dur)

    machine.env.process(loop())
    machine.env.run()
    return Outcome(env_steps=iterations * steps_per_iter, updates=iterations * minibatches)
