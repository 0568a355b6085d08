"""What the off-policy loop keeps in memory, and whether it fits: the GPU's share (the
learner's training state and a replay buffer placed there, swapped to host memory with
``gpu_swap`` when it does not fit) and the host DRAM's."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.kernels.mlp import F32
from rldse.sim.machine import Machine, Runner
from rldse.workloads.offpolicy.program.costs import Costs, Shape


@dataclass(frozen=True)
class Memory:
    """The GPU bytes the loop needs, the replay bytes swapped to host memory (0: none)
    and the checks it reports (Outcome.checks)."""

    need_bytes: int
    swapped_bytes: int
    checks: dict[str, bool]


def gpu_memory(m: Machine, shape: Shape, costs: Costs, kernels: Runner | None) -> Memory:
    """The learner's parameters, gradients, Adam state, batch and activations (first
    order) when it runs kernels, plus the replay buffer when it lives on the kernels' part;
    a buffer that does not fit is swapped to host memory where ``gpu_swap`` allows."""
    k, learn_r, replay_r = m.knobs, m.runner("learn"), m.runner("replay")
    need = 0
    if learn_r.kernels:
        need += 4 * shape.learn_params * F32  # params, grads, Adam m and v
        need += 4 * k.batch_size * shape.transition_bytes  # batch and activations
    if replay_r.on_kernel_part:
        need += k.replay_capacity * shape.transition_bytes
    gpu_ok = bool(costs.gpu.fits(need)) if costs.gpu is not None and need else True
    swapped = 0
    if not gpu_ok and k.gpu_swap and replay_r.on_kernel_part:
        swapped = k.replay_capacity * shape.transition_bytes
    return Memory(need, swapped, m.memory_checks(kernels, gpu_ok or bool(swapped)))


def host_memory_bytes(m: Machine, shape: Shape, capacity: int, batch: int,
                      swapped: int) -> int:
    """Bytes the off-policy loop keeps in host DRAM (the ``host_memory`` check): the replay
    buffer, capacity × transition bytes, unless it lives on a GPU without swapping (on a
    TCAM or FPGA only keys or priorities are on the part; the transitions stay in host
    memory); every actor's copy of its policy's parameters; and a CPU learner's parameters,
    gradients and Adam state with its batch and activations (first order, as on a GPU), or
    a GPU learner's host copy of the parameters it sends."""
    k, learn_r = m.knobs, m.runner("learn")
    on_part = m.runner("replay").on_kernel_part
    replay = capacity * shape.transition_bytes if not on_part or swapped else 0
    if learn_r.kernels:
        learner = shape.learn_params * F32
    else:
        learner = 4 * shape.learn_params * F32 + 4 * batch * shape.transition_bytes
    return int(replay + learner + k.actors * shape.act_params * F32)
