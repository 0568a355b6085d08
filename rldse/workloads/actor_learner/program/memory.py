"""What the run holds: the GPU buffers (docs/architecture.md, "GPU memory") and host DRAM at
its peak (the ``host_memory`` check)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rldse.kernels.mlp import F32
from rldse.sim.machine import Machine
from rldse.workloads.actor_learner.program.shape import (
    ANSWER_BYTES,
    MINIBATCH_SCALARS,
    PER_TRANSITION_SCALARS,
    Roles,
    Shape,
    roles_of,
    shape_of,
)

#: The learner's buffers that gpu_swap leaves in host memory, streamed every epoch.
STREAMED = ("rollout observations", "bootstrap observations", "rollout scalars",
            "minibatch copy")


@dataclass(frozen=True)
class GpuMemory:
    """What the most loaded GPU holds, buffer by buffer, before any swapping."""

    buffers: dict[str, int]
    capacity: int
    swapped: int = 0

    @property
    def need(self) -> int:
        return sum(self.buffers.values())

    @property
    def peak(self) -> int:
        """Bytes resident on the GPU (what is swapped lives in host memory)."""
        return self.need - self.swapped

    @property
    def ok(self) -> bool:
        return self.capacity == 0 or self.peak <= self.capacity


def gpu_memory(m: Machine) -> GpuMemory:
    """The GPU buffers program(m) would hold, by name (for studies and reports)."""
    shape = shape_of(m)
    return gpu_buffers(shape, roles_of(m, shape), bool(m.knobs.gpu_swap))


def gpu_buffers(s: Shape, roles: Roles, gpu_swap: bool) -> GpuMemory:
    """Buffers per GPU (docs/architecture.md); the learner's GPU is gpu0."""
    if roles.gpu is None:
        return GpuMemory({}, 0)
    cap = int(roles.gpu.spec.mem_bytes)
    act_bytes = s.nets.activation_bytes  # per sample, every network
    gpu0: dict[str, int] = {}
    if roles.learn.kernels:
        gpu0 = {
            "parameters, gradients, Adam m and v": 4 * F32 * s.params,
            "rollout observations": s.S_res * s.obs_bytes,
            "bootstrap observations": s.N * s.E * s.obs_bytes,
            "rollout scalars": s.S_res * PER_TRANSITION_SCALARS * F32,
            "minibatch copy": s.mb * (s.obs_bytes + MINIBATCH_SCALARS * F32),
            "minibatch activations and their gradients": 2 * s.mb * act_bytes,
        }
    if roles.act.kernels:  # inference: parameters and the largest batch
        per_gpu = math.ceil(s.N / len(roles.act.devices)) if s.central else 1
        batch = per_gpu * s.E
        inference = {
            "inference parameters": F32 * s.params,
            "inference batch": batch * (s.obs_bytes + ANSWER_BYTES + act_bytes),
        }
        for key, value in inference.items():
            gpu0[key] = gpu0.get(key, 0) + value
    if not gpu0:
        return GpuMemory({}, cap)
    mem = GpuMemory({k: int(v) for k, v in gpu0.items()}, cap)
    if not mem.ok and gpu_swap and roles.learn.kernels:
        mem = GpuMemory(mem.buffers, cap, sum(mem.buffers[k] for k in STREAMED))
    return mem


def host_memory(s: Shape, roles: Roles, gpu: GpuMemory) -> int:
    """Bytes program(m) keeps in host DRAM at its peak (the ``host_memory`` check): every
    actor process's rollout buffer (E envs × T steps of observation and 5 scalars, and the
    bootstrap observations), kept for the run; and the learner's side. A CPU learner holds
    parameters, gradients and Adam state, the whole rollout with 7 scalars per transition,
    the bootstrap observations, a minibatch copy and its activations; a GPU learner holds
    the received rollouts until they are copied, or, with ``gpu_swap``, the buffers it
    streams from host memory (the larger of the two), and a host copy of the parameters
    for the broadcast."""
    actors = s.N * (s.payload + s.E * s.obs_bytes)
    if not roles.learn.kernels:
        learner = (4 * F32 * s.params + s.S * (s.obs_bytes + PER_TRANSITION_SCALARS * F32)
                   + s.N * s.E * s.obs_bytes + s.mb * (s.obs_bytes + MINIBATCH_SCALARS * F32)
                   + 2 * s.mb * s.nets.activation_bytes)
    else:
        learner = max(actors, gpu.swapped) + F32 * s.params
    return int(actors + learner)
