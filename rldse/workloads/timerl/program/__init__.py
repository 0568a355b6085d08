"""TimeRL's single-process program: the environment on the GPU, one process issuing every
kernel, stored steps swapped to host memory when they do not fit, and freed after use.

What it models is Tempo's REINFORCE and PPO as its reproduction scripts run them
(github.com/lsds/Tempo: repro/sec7_4_algo_specific_sched/shared.py sets ``"dev": "cuda"``,
256 envs × 1,000 steps, 3×256×256 fp32 observations, an MLP of 2 × 64 hidden units;
impls/tempo_reinforce.py sets ``enable_swap``; tempo/api/rl/env/trivial_env.py broadcasts
each env's state to its observation inside a jitted step, so every observation is written
in device memory; tempo/api/rl/networks/model_builder.py builds Linear(F→64)+tanh, two
Linear(64→64)+tanh and a Linear(64→1) decoder, plus a value head for PPO). The REINFORCE
runs are Tempo-JAX only (repro/sec7_4_algo_specific_sched/run_algo_specific_sched.py:
"This experiment uses only Tempo-JAX"), fp32 (tempo/core/dtype.py: ``default_float =
float32``). At the full size Tempo incrementalizes the backward to one time step
(tempo/transformations/incrementalization: an op over 16 GB is split, here into 1000
blocks of 1 step), so a step's backward runs inside the acting loop. It is a
schedule of one GPU stream and its copy engine, costed by the GPU part model
(``GpuModel.op_times``: dispatch on the host core, kernels by the preset's counts, the
roofline of the work; ``copy_times`` for the host link); nothing here is a measured time.

The package: ``shape`` (Tempo's shapes and the bytes they hold), ``xla`` (XLA's counted
work and Tempo-JAX's counted calls per step), ``costs`` (one iteration's operations and
buffers, ``Work``, on the GPU model), ``schedule`` (the fast path: the Work in closed
form) and ``events`` (the Work booked operation by operation on a Machine: busy time,
energy, timeline); tests/workloads/timerl/program/test_events.py holds the two paths
together.

The host side of Tempo's REINFORCE is not the preset's PyTorch-eager dispatch: Tempo-JAX's
executor issues a time step as a few jitted calls (its dataflow groups, and the env step's
own jitted function inside its UDF). How many was counted by running Tempo itself
(``TEMPO_STEP_CALLS``, ``benchmarks/tempo_call_count.py``); each is charged JAX's published
per-call dispatch (``JAX_JIT_DISPATCH_S``). A step takes the later of that host time and its
GPU time, since the host issues asynchronously.

What a time step moves and computes is not hand-counted: it is XLA's own cost analysis of
the executables Tempo-JAX compiles for the step (``TEMPO_STEP_XLA``: 'bytes accessed' and
'flops' of every jitted call of the step, counted by ``benchmarks/tempo_xla_cost.py`` at
256 envs × 3×side² for side 8-48 and fitted as linear in envs × features, then
extrapolated 28× beyond the largest measured size to 3×256×256). Tempo's backward of a
time step computes each weight gradient as a broadcast multiply of the step's inputs and
output gradients, reduced over the batch (the encoder's is a B×F×64 per-sample product
summed over B, not a GEMM). XLA:CPU, the only backend measured, writes those per-sample
products to memory and reads them back (528 bytes per env × feature, ``reduction_bytes``
of the law); XLA:GPU fuses an elementwise producer into its reduction, so the model
charges the step without them (``FUSE_REDUCTIONS``) and reports the step as XLA:CPU
compiles it beside. With them removed XLA's count agrees with the hand count the model
used before (env write, forward read, backward read of the observations, 6 weight-sized
passes): 885 MB against 907 MB per TD step at 3×256×256.

Per time step t of an iteration (B envs, T steps, an observation of o bytes):

- the env step writes B·o bytes (``env_step``; XLA's count of Tempo's ``_step`` call,
  B·o and the state); the policy's forward reads them (``act``);
- n-step TD: the loss at t is known at t + n − 1, so step t's backward (``learn`` on B
  samples: XLA's count of the TD step less the acting step) runs then and its observation
  is freed: n + 1 steps stay resident (in a steady iteration its first steps run the
  backwards of the iteration before's last steps);
- Monte-Carlo: the return at t needs every reward to T, so all T·B·o bytes are kept to
  the end. With swapping each step's observations leave for host memory as they are
  produced (Tempo's Fig. 15 timeline: GPU memory stays low through Monte-Carlo's
  simulation phase, repro/sec7_4_algo_specific_sched/plot) and come back for the
  backward; the copy engine runs beside the kernels, two step buffers deep (one step in
  flight each way), so each phase is a two-stage pipeline (``schedule``);
- one Adam step ends the iteration.

PPO (1 epoch, the whole rollout as one minibatch, as the repro sets it): acting as above,
then one forward and backward over the T·B stored samples; with swapping, stored steps go
out while acting and come back once for learning, the epoch's work streaming behind them
in T equal parts. The baselines' memory (cleanRL, the
programs TimeRL reports out of memory) adds the minibatch their ``b_obs[mb_inds]``
gathers: with the whole rollout as the minibatch, a second copy of it.
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
