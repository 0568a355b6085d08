"""Mean costs of program(m)'s units of work, for analytic rate models (the cpu_gpu_ratio
study, benchmarks/speed/peer_simpy.py): the same costs the simulation books."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.sim.machine import Machine
from rldse.workloads.actor_learner.program.state import prepare


@dataclass(frozen=True)
class UnitCosts:
    """Mean seconds of program(m)'s units of work on its parts (for analytic rate models:
    the same costs the simulation books)."""

    actors: int
    envs_per_actor: int
    rollout_len: int
    cores: int  # CPU cores the actors get
    env_step_s: float  # one vector step of an actor's envs on a core, resets included
    act_s: list[float]  # central: one inference batch of b actors (index b); local: [0, one act]
    act_device_s: list[float]  # the same, the GPU's share (0 on a CPU)
    learn_step_s: float  # one minibatch step on the learner's device (wall)
    learn_step_device_s: float  # the same, the device's share (a GPU's kernels; the wall
    # on a CPU), the rest being the learner core's dispatch
    minibatch: int
    epochs: int
    handoff_s: float  # the learner receiving one rollout (on its CPU core)
    sync_s: float  # one parameter send
    inference_on_learner_gpu: bool  # inference batches queue with the learner's steps


def unit_costs(m: Machine) -> UnitCosts:
    """Mean costs of program(m)'s work units on machine m (see UnitCosts)."""
    run = prepare(m)
    s, roles, c = run.shape, run.roles, run.costs
    if c.server is not None:
        act = c.server.wall_s
        act_device = c.server.device_s if roles.act.kernels else [0.0] * len(act)
    else:
        act = [0.0, float(np.mean([a.mean_s for a in c.act]))]
        act_device = [0.0, float(np.mean([a.device.mean_s for a in c.act]))]
    on_gpu0 = roles.learn.kernels and roles.act.kernels  # gpu0 serves inference too
    return UnitCosts(
        actors=s.N, envs_per_actor=s.E, rollout_len=s.T, cores=roles.cores,
        env_step_s=float(np.mean(c.env_per_vstep)) + c.reset_per_vstep,
        act_s=[float(a) for a in act], act_device_s=[float(a) for a in act_device],
        learn_step_s=c.learn.mean_s, learn_step_device_s=c.learn.device.mean_s,
        minibatch=s.mb, epochs=s.epochs, handoff_s=c.handoffs.recv.mean_s,
        sync_s=c.handoffs.send.mean_s, inference_on_learner_gpu=on_gpu0)
