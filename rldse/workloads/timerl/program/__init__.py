"""TimeRL's single-process program: the environment on the GPU, one process issuing every
kernel, stored steps swapped to host memory when they do not fit, and freed after use.

It models Tempo's REINFORCE and PPO as its reproduction scripts run them, as a schedule
of one GPU stream and its copy engine costed by the GPU part model; nothing here is a
measured time. The host side is Tempo-JAX's counted jitted calls per step, the device
side XLA's own cost analysis of the step. Sources, the per-step schedule (n-step TD,
Monte-Carlo, PPO) and swapping: docs/architecture.md, "The TimeRL program".

The package: ``shape`` (Tempo's shapes and the bytes they hold), ``xla`` (XLA's counted
work and Tempo-JAX's counted calls per step), ``costs`` (one iteration's operations and
buffers, ``Work``, on the GPU model), ``schedule`` (the fast path: the Work in closed
form) and ``events`` (the Work booked operation by operation on a Machine: busy time,
energy, timeline); tests/workloads/timerl/program/test_events.py holds the two paths
together.
"""

from rldse.workloads.timerl.program.costs import (
    Work,
    adam_times,
    ppo_work,
    reinforce_work,
    step_costs,
    step_times,
    stream,
    tempo_step,
)
from rldse.workloads.timerl.program.events import run
from rldse.workloads.timerl.program.schedule import Iteration, closed_form, ppo, reinforce
from rldse.workloads.timerl.program.shape import (
    F32,
    TempoShape,
    fixed_bytes,
    ppo_baseline_need,
)
from rldse.workloads.timerl.program.xla import (
    FUSE_REDUCTIONS,
    JAX_JIT_DISPATCH_RANGE_S,
    JAX_JIT_DISPATCH_S,
    TEMPO_ITERATION_JIT_CALLS,
    TEMPO_STEP_CALLS,
    TEMPO_STEP_XLA,
    Linear,
    StepCalls,
    XlaCost,
    step_calls,
)

__all__ = [
    "F32", "FUSE_REDUCTIONS", "JAX_JIT_DISPATCH_RANGE_S", "JAX_JIT_DISPATCH_S",
    "TEMPO_ITERATION_JIT_CALLS", "TEMPO_STEP_CALLS", "TEMPO_STEP_XLA", "Iteration", "Linear",
    "StepCalls", "TempoShape", "Work", "XlaCost", "adam_times", "closed_form",
    "fixed_bytes", "ppo", "ppo_baseline_need", "ppo_work", "reinforce", "reinforce_work",
    "run", "step_calls", "step_costs", "step_times", "stream", "tempo_step",
]
