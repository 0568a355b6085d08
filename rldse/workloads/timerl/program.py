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

from rldse.errors import RldseError
from rldse.models.gpu import GpuModel, GpuTimes
from rldse.models.kinds import Runs
from rldse.models.ops import OpColumns
from rldse.sim.machine import Machine

F32 = 4


@dataclass(frozen=True)
class Linear:
    """const + per_element × (envs × features of one step's observations)."""

    const: float
    per_element: float

    def at(self, shape: TempoShape) -> float:
        return self.const + self.per_element * shape.envs * shape.features


@dataclass(frozen=True)
class XlaCost:
    """XLA's cost analysis of one time step's jitted calls: ``bytes`` is 'bytes accessed'
    as XLA:CPU compiles them, ``reduction_bytes`` the part that is per-sample products
    written only to be reduced (``benchmarks/tempo_xla_cost.py: reduction_bytes``)."""

    flops: Linear
    bytes: Linear
    reduction_bytes: Linear

    def bytes_at(self, shape: TempoShape, fuse_reductions: bool) -> float:
        b = self.bytes.at(shape)
        return b - self.reduction_bytes.at(shape) if fuse_reductions else b


#: Counted, not estimated: XLA's cost analysis (``jitted.lower(*args).compile()
#: .cost_analysis()``, jax/jaxlib 0.6.2, XLA:CPU) of every jitted call Tempo-JAX makes per
#: time step of its REINFORCE, github.com/lsds/Tempo at commit
#: a16e081f4c9da7f14dcdf296590486df337f5643 (tempo-jax, enable_swap, 2 × 64 hidden, trivial
#: env), 256 envs × 100 steps × 3×side×side for side 8, 16, 32, 48, 3 iterations, the
#: storage and incrementalization thresholds scaled by the full run's sizes (so the
#: backward is incrementalized per step, as at 256 × 1000 × 3×256×256). Per time step of a
#: steady iteration, least-squares fits over the four sides; largest residual relative to
#: the value, bytes as compiled: act 0.5 %, TD step 0.07 %, MC act 3.2 %, MC learn 0.5 %,
#: reduction intermediates 0.12 %; bytes less those intermediates (what the model charges):
#: TD step 2.3 %, MC learn 12 % (both at side 8, where they are a few MB); flops ≤ 0.2 %.
#: Reproduce with
#: ``python benchmarks/tempo_xla_cost.py --tempo <Tempo checkout> --sweep --objectives
#: 1,8,mc --points 256x8,256x16,256x32,256x48 --steps 100 --iterations 3`` in a Python
#: with jax==0.6.2 (benchmarks/tempo_call_count.py lists the rest).
#: - "act": the env step, the forward and the step's stores (TD 8-step's acting-only loop);
#: - "td": a whole TD time step (env, forward, the backward of the step whose loss is
#:   known, stores), the same for n = 1 and n = 8 to 1e-5 (the iteration's other work,
#:   spread over its 100 steps, included: ≤ 0.1 % of the bytes);
#: - "mc_act": Monte-Carlo's acting step (its forward and store writes take a 2-step
#:   block buffer whole as an operand at 100 steps; 1000 steps use blocks of 5);
#: - "mc_learn": Monte-Carlo's backward, per time step.
TEMPO_STEP_XLA = {
    "act": XlaCost(flops=Linear(4.60591e6, 128.010), bytes=Linear(1.22358e6, 9.03835),
                   reduction_bytes=Linear(0.0, 0.0)),
    "td": XlaCost(flops=Linear(1.37907e7, 256.084), bytes=Linear(2.07010e7, 545.296),
                  reduction_bytes=Linear(1.79115e7, 527.761)),
    "mc_act": XlaCost(flops=Linear(4.74764e6, 128.982), bytes=Linear(1.78829e6, 28.9277),
                      reduction_bytes=Linear(0.0, 0.0)),
    "mc_learn": XlaCost(flops=Linear(9.18988e6, 128.049), bytes=Linear(1.94335e7, 526.525),
                        reduction_bytes=Linear(1.75824e7, 519.995)),
}
#: XLA:GPU fuses an elementwise producer (the per-sample gradient products) into the
#: reduction that consumes it, so on the A6000 those products are not written to memory;
#: False charges the step as XLA:CPU compiled it.
FUSE_REDUCTIONS = True

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
#: by ``benchmarks/tempo_call_count.py --scale-inc``, which wraps every schedule
#: instruction's thunk, every ``jax.jit`` callable and every runtime tensor's read/write, and
#: counts inside each time loop's body. 256 envs × 100 steps × 3×16×16, 3 iterations, with
#: swap_bytes_min, min_block_store_tensor_point_size and incrementalize_mem_threshold scaled
#: by the full run's sizes, so the storage and incrementalization decisions are the full
#: run's: the backward is incrementalized to one time step (Tempo's "Inc round 0 ... 1000
#: blocks of size 1" at 1000 steps) and runs inside the acting loop. Per step of a steady
#: iteration: TD 1-step 15 jitted calls, TD 8-step 18; Monte-Carlo's acting loop 6 (its
#: backward runs in loops of its own, about 6 calls per step, under the swap-in). An earlier
#: count without the incrementalization threshold scaled (8 calls per TD step) saw the
#: small run's schedule, a batched backward after the loop, not the full run's. n = 64
#: was not run: it takes n = 8's count. No eager (non-jitted) JAX op runs in a step.
TEMPO_STEP_CALLS = {"td": StepCalls(jit=15, store_reads=51, store_writes=36, deallocs=30),
                    "td_n": StepCalls(jit=18, store_reads=55, store_writes=39, deallocs=33),
                    "mc": StepCalls(jit=6, store_reads=15, store_writes=10, deallocs=1)}
#: Jitted calls per iteration outside the time loops (Adam, returns, the loss), counted by
#: the same runs: 172 (TD 1-step) over 3 iterations, the first iteration's set-up included.
TEMPO_ITERATION_JIT_CALLS = 57


def step_calls(td_steps: int | None) -> StepCalls:
    """Tempo's counted host operations per acting step: Monte-Carlo, TD 1-step, TD n > 1."""
    return TEMPO_STEP_CALLS["mc" if td_steps is None else "td" if td_steps == 1 else "td_n"]


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


def stream(machine: Machine) -> GpuModel:
    """The kernel part the Machine places for ``learn`` (and ``act``): its model costs the
    program's one stream, the copy engine beside it and the host core's dispatch. Tempo's
    program issues both roles as kernels on one part, so a placement that runs either
    another way, or on two parts, is refused."""
    act, learn = machine.runner("act"), machine.runner("learn")
    if learn.runs is not Runs.KERNELS or act.kind != learn.kind:
        raise RldseError(f"placement: act on {act.kind} ({act.runs.name.lower()}), learn on "
                         f"{learn.kind} ({learn.runs.name.lower()}); TimeRL's program issues "
                         "both as kernels on one part (expected one part that runs kernels)",
                         where="timerl program")
    return learn.model


def _op(gpu: GpuModel, phase: str, shape: TempoShape, items: int, flops: float,
        bytes_: float) -> GpuTimes:
    t = gpu.op_times(OpColumns.of(phase, items=items, flops=flops, bytes=bytes_),
                     layers=shape.layers)
    return GpuTimes(t.host_s.reshape(()), t.device_s.reshape(()), t.active_s.reshape(()))


def step_costs(shape: TempoShape, td_steps: int | None = 1,
               fuse_reductions: bool = FUSE_REDUCTIONS) -> dict[str, tuple[float, float]]:
    """(flops, bytes) of one time step's env step, forward and backward, from XLA's counted
    law (``TEMPO_STEP_XLA``): the env step is its observations written (B·o, XLA's count of
    Tempo's ``_step``), the forward the rest of the acting step, the backward the TD step
    less the acting step (n-step TD), or Monte-Carlo's backward per step."""
    mc = td_steps is None
    acting = TEMPO_STEP_XLA["mc_act" if mc else "act"]
    env_b = float(shape.step_bytes)
    act = (acting.flops.at(shape), acting.bytes_at(shape, fuse_reductions) - env_b)
    if mc:
        lc = TEMPO_STEP_XLA["mc_learn"]
        learn = (lc.flops.at(shape), lc.bytes_at(shape, fuse_reductions))
    else:
        td = TEMPO_STEP_XLA["td"]
        learn = (td.flops.at(shape) - act[0],
                 td.bytes_at(shape, fuse_reductions) - acting.bytes_at(shape, fuse_reductions))
    return {"env_step": (0.0, env_b), "act": act, "learn": learn}


def step_times(gpu: GpuModel, shape: TempoShape, td_steps: int | None = 1,
               fuse_reductions: bool = FUSE_REDUCTIONS
               ) -> tuple[GpuTimes, GpuTimes, GpuTimes]:
    """One time step's env step, forward pass, and backward pass (B samples), costed from
    XLA's counted flops and bytes (``step_costs``) on the GPU model."""
    c = step_costs(shape, td_steps, fuse_reductions)
    env, act, learn = (_op(gpu, ph, shape, shape.envs, *c[ph])
                       for ph in ("env_step", "act", "learn"))
    return env, act, learn


def tempo_step(gpu: GpuModel, shape: TempoShape, td_steps: int | None,
               jit_dispatch_s: float = JAX_JIT_DISPATCH_S) -> GpuTimes:
    """One time step of the acting loop as Tempo-JAX runs it: on the host, the counted
    jitted calls × JAX's dispatch per call; on the GPU, the env step and the forward, and
    for n-step TD the backward of the step whose loss became known."""
    env, act, learn = step_times(gpu, shape, td_steps)
    calls = step_calls(td_steps)
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
    per_learn = float(step_times(gpu, shape, td_steps)[2].device_s)
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

