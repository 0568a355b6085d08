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
float32``). A parameter's gradient is the explicit sum of per-step contributions over
the ``0:T`` slice (tempo/api/backprop.py, ``_sum_over_extra_dims``): each step's
contribution to the 196608×64 encoder gradient is a tensor of its own, written by the
backward and read again by the sum. It is a
schedule of one GPU stream and its copy engine, costed by the GPU part model
(``GpuModel.op_times``: dispatch on the host core, kernels by the preset's counts, the
roofline of the work; ``copy_times`` for the host link); nothing here is a measured time.

The host side of Tempo's REINFORCE is not the preset's PyTorch-eager dispatch: Tempo-JAX's
executor issues a time step as a few jitted calls (its dataflow groups, and the env step's
own jitted function inside its UDF). How many was counted by running Tempo itself
(``TEMPO_STEP_CALLS``, ``benchmarks/tempo_call_count.py``); each is charged JAX's published
per-call dispatch (``JAX_JIT_DISPATCH_S``). A step takes the later of that host time and its
GPU time, since the host issues asynchronously.

Per time step t of an iteration (B envs, T steps, an observation of o bytes):

- the env step writes B·o bytes (``env_step``); the policy's forward reads them (``act``);
- n-step TD: the loss at t is known at t + n − 1, so step t's backward (``learn`` on B
  samples: its observations and the weights read, its gradient contribution written and
  read back by the sum, the accumulator read and written) runs then and its observation
  is freed: n + 1 steps stay resident;
- Monte-Carlo: the return at t needs every reward to T, so all T·B·o bytes are kept to
  the end. With swapping each step's observations leave for host memory as they are
  produced (Tempo's Fig. 15 timeline: GPU memory stays low through Monte-Carlo's
  simulation phase, repro/sec7_4_algo_specific_sched/plot) and come back for the
  backward; the copy engine runs beside the kernels, so each phase takes the later of its
  kernels and its copies;
- one Adam step ends the iteration.

PPO (1 epoch, the whole rollout as one minibatch, as the repro sets it): acting as above,
then one forward and backward over the T·B stored samples; with swapping, stored steps go
out while acting and come back once for learning. The baselines' memory (cleanRL, the
programs TimeRL reports out of memory) adds the minibatch their ``b_obs[mb_inds]``
gathers: with the whole rollout as the minibatch, a second copy of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.models.gpu import GpuModel, GpuTimes
from rldse.models.ops import OpColumns

F32 = 4
#: Passes over a weight-sized tensor in one step's backward: the weights read, the step's
#: gradient contribution written and read back, the accumulator read and written
#: (tempo/api/backprop.py: a parameter's gradient is a sum over the 0:T slice of
#: per-step contributions, each a tensor of its own).
LEARN_WEIGHT_PASSES = 5

#: Host seconds per call of a jitted JAX function: jax-ml/jax PR #4128's dispatch
#: benchmarks, jit_simple_dispatch 60.7 µs (nominal: Tempo's calls pass several arrays) and
#: jit_trivial_dispatch 28.9 µs (the low end of the range).
JAX_JIT_DISPATCH_S = 60.7e-6
JAX_JIT_DISPATCH_RANGE_S = (28.9e-6, 60.7e-6)


@dataclass(frozen=True)
class StepCalls:
    """Host-side operations Tempo-JAX's executor makes per time step, by kind."""

    jit: int  # jitted-function calls: dataflow groups, and the env step's jit in its UDF
    store_reads: int  # tensor-store reads (inputs fetched by the launchers)
    store_writes: int  # tensor-store writes (outputs stored)
    deallocs: int  # DeallocInstructions


#: Counted, not estimated: github.com/lsds/Tempo at commit a16e081f4c9da7f14dcdf296590486df337f5643
#: (2025-10-21), its repro/sec7_4_algo_specific_sched REINFORCE (tempo-jax, enable_swap, 2 × 64
#: hidden, trivial env) run on this repository's CPU host with jax 0.6.2 (Tempo's docker pin)
#: by ``benchmarks/tempo_call_count.py``, which wraps every schedule instruction's thunk, every
#: ``jax.jit`` callable and every runtime tensor's read/write, and counts inside each time
#: loop's body. Shapes 4 envs × 20 steps × 3×8×8 and 8 envs × 20 steps × 3×16×16, 3
#: iterations, with swap_bytes_min and min_block_store_tensor_point_size scaled by the
#: full run's per-step bytes so the storage decisions are the full run's: the jitted calls
#: per step are the same at both sizes and for TD n = 1 and n = 8 (8; MC 6 at the larger size,
#: 7 at the smaller, one of the store's own jitted copies); store writes differ with size, the
#: numbers below are the larger size's. No eager (non-jitted) JAX op runs in a step.
TEMPO_STEP_CALLS = {"td": StepCalls(jit=8, store_reads=17, store_writes=12, deallocs=1),
                    "mc": StepCalls(jit=6, store_reads=15, store_writes=10, deallocs=1)}
#: Jitted calls per iteration outside the time loops (the batched backward, Adam, returns),
#: counted by the same runs: 128 (TD 1-step) and 124 (Monte-Carlo) over 3 iterations.
TEMPO_ITERATION_JIT_CALLS = 42


@dataclass(frozen=True)
class TempoShape:
    """One iteration's shapes: B envs × T steps, observations of 3 × side × side fp32, an
    MLP with ``hidden`` units after the encoder (Tempo's ModelBuilder.from_env)."""

    envs: int
    steps: int
    side: int
    hidden: tuple[int, ...] = (64, 64)
    actions: int = 1
    value_head: bool = False  # PPO's actor-critic

    @property
    def features(self) -> int:
        return 3 * self.side * self.side

    @property
    def obs_bytes(self) -> int:
        return F32 * self.features

    @property
    def step_bytes(self) -> int:
        """One time step's observations, all envs."""
        return self.envs * self.obs_bytes

    @property
    def rollout_bytes(self) -> int:
        return self.steps * self.step_bytes

    @property
    def layers(self) -> int:
        return 2 + len(self.hidden) + int(self.value_head)

    @property
    def weights(self) -> int:
        """Parameters: the encoder F→h0, the hidden layers, the heads (biases included)."""
        h = (self.hidden[0], *self.hidden)
        n = self.features * h[0] + h[0]
        n += sum(a * b + b for a, b in zip(h[:-1], h[1:], strict=True))
        n += h[-1] * self.actions + self.actions
        return n + (h[-1] + 1 if self.value_head else 0)

    @property
    def width(self) -> int:
        """Activations per sample (hidden units and heads)."""
        return self.hidden[0] + sum(self.hidden) + self.actions + int(self.value_head)


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


def _op(gpu: GpuModel, phase: str, shape: TempoShape, items: int, flops: float,
        bytes_: float) -> GpuTimes:
    t = gpu.op_times(OpColumns.of(phase, items=items, flops=flops, bytes=bytes_),
                     layers=shape.layers)
    return GpuTimes(t.host_s.reshape(()), t.device_s.reshape(()), t.active_s.reshape(()))


def step_times(gpu: GpuModel, shape: TempoShape) -> tuple[GpuTimes, GpuTimes, GpuTimes]:
    """One time step's env step, forward pass, and backward pass (B samples)."""
    b, w = shape.envs, shape.weights
    env = _op(gpu, "env_step", shape, b, 0.0, shape.step_bytes)
    act = _op(gpu, "act", shape, b, 2.0 * b * w,
              shape.step_bytes + F32 * w + F32 * b * shape.width)
    # backward: dW of every layer and dX of all but the encoder (2·B·W flops each, about);
    # reads the step's observations again and the weights, writes the step's gradient
    # contribution and reads it back into the accumulator, which it reads and writes
    learn = _op(gpu, "learn", shape, b, 4.0 * b * w,
                shape.step_bytes + LEARN_WEIGHT_PASSES * F32 * w
                + 2 * F32 * b * shape.width)
    return env, act, learn


def tempo_step(gpu: GpuModel, shape: TempoShape, td_steps: int | None,
               jit_dispatch_s: float = JAX_JIT_DISPATCH_S) -> GpuTimes:
    """One time step of the acting loop as Tempo-JAX runs it: on the host, the counted
    jitted calls × JAX's dispatch per call; on the GPU, the env step and the forward, and
    for n-step TD the backward of the step whose loss became known."""
    env, act, learn = step_times(gpu, shape)
    calls = TEMPO_STEP_CALLS["mc" if td_steps is None else "td"]
    gpu_part = env + act if td_steps is None else env + act + learn
    return GpuTimes(np.asarray(calls.jit * jit_dispatch_s), gpu_part.device_s,
                    gpu_part.active_s)


def _iteration_tail_s(gpu: GpuModel, shape: TempoShape, jit_dispatch_s: float) -> float:
    """The iteration's calls outside the time loops (host) against one foreach Adam step on
    the GPU: parameters, gradients and both moments read, three written."""
    adam = gpu.kernel_times(2, 0, 7 * F32 * shape.weights)
    return max(TEMPO_ITERATION_JIT_CALLS * jit_dispatch_s, float(np.sum(adam.device_s)))


def _adam(gpu: GpuModel, shape: TempoShape) -> float:
    """One foreach Adam step: parameters, gradients and both moments read, three written."""
    return float(gpu.kernel_times(2, 0, 7 * F32 * shape.weights).wall_s.sum())


def _fixed_bytes(shape: TempoShape) -> int:
    """Parameters, gradients and Adam's two moments."""
    return 4 * F32 * shape.weights


def reinforce(gpu: GpuModel, shape: TempoShape, td_steps: int | None, swap: bool,
              capacity_bytes: int, jit_dispatch_s: float = JAX_JIT_DISPATCH_S) -> Iteration:
    """REINFORCE with an n-step TD objective (``td_steps`` = n) or Monte-Carlo (None), as
    Tempo-JAX issues it (``tempo_step``)."""
    t = shape.steps
    per_step = float(tempo_step(gpu, shape, td_steps, jit_dispatch_s).wall_s)
    per_learn = float(step_times(gpu, shape)[2].device_s)
    tail = _iteration_tail_s(gpu, shape, jit_dispatch_s)
    resident_steps = t if td_steps is None else min(t, td_steps + 1)
    need = resident_steps * (shape.step_bytes + F32 * shape.envs * shape.width) \
        + _fixed_bytes(shape)
    if td_steps is not None or need <= capacity_bytes or not swap:
        # TD: each step's backward runs n − 1 steps later, beside the acting (one stream)
        return Iteration(t * per_step, (t * per_learn if td_steps is None else 0.0) + tail,
                         0.0, need, need, 0, 0)
    copy = float(np.sum(gpu.copy_times(shape.step_bytes).wall_s))
    out_s = in_s = t * copy
    resident = need - shape.rollout_bytes + 2 * shape.step_bytes  # a step in flight each way
    return Iteration(max(t * per_step, out_s), max(t * per_learn, in_s) + tail,
                     out_s + in_s, need, resident, shape.rollout_bytes, shape.rollout_bytes)


def ppo_baseline_need(shape: TempoShape) -> int:
    """GPU bytes the baselines hold with the whole rollout as one minibatch: the rollout
    and its bootstrap step, the gathered minibatch (a second copy), parameters with Adam
    state, and the minibatch's activations and their gradients."""
    samples = shape.steps * shape.envs
    return (shape.rollout_bytes + shape.step_bytes + samples * shape.obs_bytes
            + _fixed_bytes(shape) + 2 * F32 * samples * shape.width)


def ppo(gpu: GpuModel, shape: TempoShape, swap: bool, capacity_bytes: int) -> Iteration:
    """Tempo's PPO: acting, then one epoch over the whole rollout as one minibatch."""
    env, act, _ = step_times(gpu, shape)
    t, samples, w = shape.steps, shape.steps * shape.envs, shape.weights
    acting = t * float((env + act).wall_s)
    # forward and backward over every stored sample: 6·W flops each, the observations read
    # by the forward and by the encoder's dW
    learn = float(_op(gpu, "learn", shape, samples, 6.0 * samples * w,
                      2 * shape.rollout_bytes + 3 * F32 * w
                      + 2 * F32 * samples * shape.width).wall_s) + _adam(gpu, shape)
    need = ppo_baseline_need(shape)
    tempo_need = need - samples * shape.obs_bytes  # Tempo learns on the stored steps
    if tempo_need <= capacity_bytes or not swap:
        return Iteration(acting, learn, 0.0, need, tempo_need, 0, 0)
    copy_s = t * float(np.sum(gpu.copy_times(shape.step_bytes).wall_s))
    resident = tempo_need - shape.rollout_bytes + 2 * shape.step_bytes
    return Iteration(max(acting, copy_s), max(learn, copy_s), 2 * copy_s, need, resident,
                     shape.rollout_bytes, shape.rollout_bytes)

