"""The program's schedule in closed form (the fast path): one iteration's ``Work`` with
every stage time constant, so the acting loop, the swap pipelines and the iteration's
tail reduce to a few maxima. ``events.run`` books the same Work operation by operation
on a Machine; tests/workloads/timerl/program/test_events.py holds the two to 1e-9.

Swapping is a two-stage pipeline with two step buffers (a step in flight each way):

- acting: step t's observations leave over the copy engine once its env step has
  written them (e GPU seconds into a step of a seconds), copies back to back (c each),
  and step t waits for step t − 2's buffer to be out. The loop ends at
  max(T·a, e + c + (T − 1)·max(a, c)): copy-bound, the copies from the first env step on;
  step-bound, the last copy after the last env step.
- learning: step k comes back (c), then its backward runs (b); step k + 2's copy waits
  for step k's backward to free its buffer. The phase takes min(b, c) + T·max(b, c).
"""

from __future__ import annotations

from dataclasses import dataclass

from rldse.models.gpu import GpuModel
from rldse.workloads.timerl.program.costs import SWAP_BUFFERS, Work, ppo_work, reinforce_work
from rldse.workloads.timerl.program.shape import TempoShape
from rldse.workloads.timerl.program.xla import JAX_JIT_DISPATCH_S


@dataclass(frozen=True)
class Iteration:
    """One iteration of the program: seconds by phase, and where its bytes live."""

    act_s: float  # env steps and forward passes (with swap-out beside them)
    learn_s: float  # backward passes and the Adam step (with swap-in beside them)
    copies_s: float  # copy-engine seconds (0 without swapping)
    gpu_need_bytes: int  # what the program keeps on the GPU without swapping
    resident_bytes: int  # what it keeps there as run
    swapped_bytes: int  # sent to host memory (and back) per iteration
    host_bytes: int  # host DRAM the swapped steps occupy at the peak

    @property
    def iter_s(self) -> float:
        return self.act_s + self.learn_s


def closed_form(w: Work) -> Iteration:
    """One iteration of ``w`` (module docstring): the acting loop, the learn phase with its
    host work beside it, then the tail (the later of its host calls and Adam)."""
    t = w.steps
    step_s = max(w.step_host_s, w.step_device_s)
    tail_s = max(w.tail_host_s, w.tail_device_s)
    if not w.swap:
        learn_s = max(w.learn_host_s, w.learn_ops * w.learn_op_s) + tail_s
        stored = w.carried_steps + 1 if w.carried_steps else t
        resident = w.fixed_bytes + stored * (w.step_bytes + w.keep_bytes) + w.learn_bytes
        return Iteration(t * step_s, learn_s, 0.0, w.need_bytes, resident, 0, 0)
    c, b = w.copy_s, w.learn_op_s
    act_s = max(t * step_s, w.env_s + c + (t - 1) * max(step_s, c))
    learn_s = max(w.learn_host_s, min(b, c) + w.learn_ops * max(b, c)) + tail_s
    resident = (w.fixed_bytes + t * w.keep_bytes + min(t, SWAP_BUFFERS) * w.step_bytes
                + w.learn_bytes)
    rollout = t * w.step_bytes
    return Iteration(act_s, learn_s, 2 * t * c, w.need_bytes, resident, rollout, rollout)


def reinforce(gpu: GpuModel, shape: TempoShape, td_steps: int | None, swap: bool,
              capacity_bytes: int, jit_dispatch_s: float = JAX_JIT_DISPATCH_S) -> Iteration:
    """REINFORCE with an n-step TD objective (``td_steps`` = n) or Monte-Carlo (None), as
    Tempo-JAX issues it (``costs.reinforce_work``), in closed form."""
    return closed_form(reinforce_work(gpu, shape, td_steps, swap, capacity_bytes,
                                      jit_dispatch_s))


def ppo(gpu: GpuModel, shape: TempoShape, swap: bool, capacity_bytes: int) -> Iteration:
    """Tempo's PPO: acting, then one epoch over the whole rollout as one minibatch
    (``costs.ppo_work``), in closed form."""
    return closed_form(ppo_work(gpu, shape, swap, capacity_bytes))
