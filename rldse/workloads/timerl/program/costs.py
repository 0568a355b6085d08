"""What one iteration of TimeRL's program issues (``Work``): each operation's host and
GPU seconds from XLA's counted law (``xla``) on the GPU part model, and the bytes each
buffer holds. The closed form (``schedule``) and the event run (``events``) schedule the
same Work, so they can differ only in how they schedule it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.errors import RldseError
from rldse.models.gpu import GpuModel, GpuTimes
from rldse.models.kinds import Runs
from rldse.models.ops import OpColumns
from rldse.sim.machine import Machine
from rldse.workloads.timerl.program.shape import (
    F32,
    TempoShape,
    fixed_bytes,
    ppo_baseline_need,
)
from rldse.workloads.timerl.program.xla import (
    FUSE_REDUCTIONS,
    JAX_JIT_DISPATCH_S,
    TEMPO_ITERATION_JIT_CALLS,
    TEMPO_STEP_XLA,
    step_calls,
)


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


def adam_times(gpu: GpuModel, shape: TempoShape) -> GpuTimes:
    """One foreach Adam step: parameters, gradients and both moments read, three written."""
    return gpu.kernel_times(2, 0, 7 * F32 * shape.weights)

#: step buffers a swapping program holds at once (one step in flight each way)
SWAP_BUFFERS = 2


@dataclass(frozen=True)
class Work:
    """One iteration as the program issues it (module docstring): seconds per operation,
    bytes per buffer. The acting loop's step is ``step_host_s`` on the host beside the
    env step, forward and (n-step TD) backward on the stream; then ``learn_ops`` backward
    operations (after ``learn_host_s`` on the host), each after its step's observations
    come back over the copy engine when swapping; then the iteration's tail."""

    steps: int
    envs: int  # samples per step
    step_host_s: float  # host seconds per acting step (dispatch)
    env_s: float  # GPU seconds of the env step (writes the step's observations)
    act_s: float  # the forward and stores
    step_learn_s: float  # n-step TD: the backward inside the step (0 otherwise)
    learn_host_s: float  # host seconds once at the learn phase's start
    learn_ops: int  # backward operations after the loop (0: TD)
    learn_op_s: float  # GPU seconds of each
    tail_host_s: float  # the iteration's host work after the loop (calls, Adam's dispatch)
    tail_device_s: float  # Adam on the GPU
    copy_s: float  # one step's observations over the host link (copy engine)
    swap: bool  # stored steps leave for host memory and come back for their backward
    need_bytes: int  # what the program (PPO: the baselines) would keep without swapping
    fixed_bytes: int  # held all along: parameters, Adam state (PPO: the bootstrap step)
    carried_steps: int  # TD: earlier steps awaiting their backward when the loop starts
    step_bytes: int  # one step's observations (what is swapped)
    keep_bytes: int  # one step's activations, kept until its backward
    learn_bytes: int  # held through the learn phase (PPO's minibatch activations, grads)

    @property
    def step_device_s(self) -> float:
        return self.env_s + self.act_s + self.step_learn_s


def _copy_s(gpu: GpuModel, shape: TempoShape) -> float:
    return float(np.sum(gpu.copy_times(shape.step_bytes).device_s))


def reinforce_work(gpu: GpuModel, shape: TempoShape, td_steps: int | None, swap: bool,
                   capacity_bytes: int, jit_dispatch_s: float = JAX_JIT_DISPATCH_S) -> Work:
    """REINFORCE with an n-step TD objective (``td_steps`` = n) or Monte-Carlo (None), as
    Tempo-JAX issues it: each step's counted jitted calls on the host; n-step TD runs the
    backward of the step n steps back inside each step (the first n from the iteration
    before) and keeps n + 1 steps; Monte-Carlo keeps every step, then runs their
    backwards, swapping when the rollout does not fit and ``swap`` allows."""
    t = shape.steps
    if td_steps is not None and not 1 <= td_steps < t:
        raise RldseError(f"td_steps {td_steps}: expected 1 to {t - 1} (fewer than the "
                         f"{t} steps of an iteration)", where="timerl program")
    env, act, learn = step_times(gpu, shape, td_steps)
    adam = adam_times(gpu, shape)
    mc, carried = td_steps is None, td_steps or 0
    stored = t if mc else carried + 1
    per_step = shape.step_bytes + shape.step_activation_bytes
    need = stored * per_step + fixed_bytes(shape)
    return Work(
        steps=t, envs=shape.envs, step_host_s=step_calls(td_steps).jit * jit_dispatch_s,
        env_s=float(env.device_s), act_s=float(act.device_s),
        step_learn_s=0.0 if mc else float(learn.device_s), learn_host_s=0.0,
        learn_ops=t if mc else 0, learn_op_s=float(learn.device_s),
        tail_host_s=TEMPO_ITERATION_JIT_CALLS * jit_dispatch_s,
        tail_device_s=float(np.sum(adam.device_s)), copy_s=_copy_s(gpu, shape),
        swap=mc and swap and need > capacity_bytes, need_bytes=need,
        fixed_bytes=fixed_bytes(shape), carried_steps=carried,
        step_bytes=shape.step_bytes, keep_bytes=shape.step_activation_bytes, learn_bytes=0)


def ppo_work(gpu: GpuModel, shape: TempoShape, swap: bool, capacity_bytes: int) -> Work:
    """Tempo's PPO: acting (env step and forward, PyTorch-eager dispatch as the GPU model
    charges it), then one epoch over the whole rollout as one minibatch: 6·W flops per
    sample, the observations read by the forward and by the encoder's dW. With swapping
    the minibatch streams in step by step, so its work is split into T equal parts."""
    env, act = (_op(gpu, ph, shape, shape.envs, *step_costs(shape)[ph])
                for ph in ("env_step", "act"))
    t, samples, w = shape.steps, shape.steps * shape.envs, shape.weights
    learn = _op(gpu, "learn", shape, samples, 6.0 * samples * w,
                2 * shape.rollout_bytes + 3 * F32 * w + 2 * F32 * samples * shape.width)
    adam = adam_times(gpu, shape)
    learn_bytes = 2 * F32 * samples * shape.width
    fixed = fixed_bytes(shape) + shape.step_bytes  # and the bootstrap step
    swapping = swap and fixed + shape.rollout_bytes + learn_bytes > capacity_bytes
    return Work(
        steps=t, envs=shape.envs, step_host_s=float(env.host_s + act.host_s), env_s=float(env.device_s),
        act_s=float(act.device_s), step_learn_s=0.0, learn_host_s=float(learn.host_s),
        learn_ops=t if swapping else 1,
        learn_op_s=float(learn.device_s) / t if swapping else float(learn.device_s),
        tail_host_s=float(adam.host_s), tail_device_s=float(adam.device_s),
        copy_s=_copy_s(gpu, shape), swap=swapping, need_bytes=ppo_baseline_need(shape),
        fixed_bytes=fixed, carried_steps=0, step_bytes=shape.step_bytes, keep_bytes=0,
        learn_bytes=learn_bytes)
