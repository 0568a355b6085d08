"""The program run operation by operation on a Machine (the event path): every time step's
host dispatch is booked on a host core, its env step, forward and backward on the GPU's
stream, and each swap on the GPU's copy engine, each booking when its inputs are ready,
so the Machine's busy time, energy ledger and timeline (``Machine(timeline=...)``) come
from the bookings. GPU memory is a ledger of allocations and frees at the booked times;
its peak is what the program holds at its worst instant. ``schedule.closed_form`` is the
same Work in closed form (tests/workloads/timerl/program/test_events.py)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np

from rldse.errors import RldseError
from rldse.sim.device import Device
from rldse.sim.lanes import Lanes
from rldse.sim.machine import Machine, Outcome
from rldse.workloads.timerl.program.costs import SWAP_BUFFERS, Work, stream

WORKER = "program"  # Tempo's one process: what the worker clock and timeline name
SWAP_PHASE = "swap"  # copy-engine bookings (GpuModel.copy_times: no SM, static power)


def _until(env, t_s: float):
    """A timeout to ``t_s`` (never negative: the clock may sit an ulp past a booked time)."""
    return env.timeout(max(0.0, t_s - env.now))


class _Bytes:
    """Allocations and frees at their times; the peak sums them in time order, frees
    first at equal times (a buffer freed at t is reused at t)."""

    def __init__(self) -> None:
        self._events: list[tuple[float, int]] = []

    def alloc(self, t_s: float, n: int) -> None:
        self._events.append((t_s, n))

    def free(self, t_s: float, n: int) -> None:
        self._events.append((t_s, -n))

    def peak(self) -> int:
        if not self._events:
            return 0
        ordered = sorted(self._events)  # (t, -n) before (t, +n)
        return int(np.max(np.cumsum([n for _, n in ordered])))


@dataclass
class _Run:
    """One run's devices and tallies: the GPU (its one stream), a host core device, the
    GPU's copy engine (a lane of its own beside the stream: GpuModel.copy_times), and
    GPU memory."""

    m: Machine
    w: Work
    gpu: Device
    cpu: Device
    copy_engine: Lanes
    memory: _Bytes = field(default_factory=_Bytes)
    act_s: float = 0.0
    learn_s: float = 0.0
    copies_s: float = 0.0

    def on_gpu(self, t_s: float, dur_s: float, phase: str) -> float:
        """Book ``dur_s`` of ``phase`` on the stream from ``t_s``; its end."""
        if dur_s <= 0:
            return t_s
        self.m.clock.spend(WORKER, phase, self.gpu.kind, dur_s)
        return self.m.book(self.gpu, t_s, dur_s, phase, WORKER)

    def on_host(self, t_s: float, dur_s: float) -> float:
        """Book ``dur_s`` of dispatch on a host core from ``t_s``; its end."""
        if dur_s <= 0:
            return t_s
        self.m.clock.spend(WORKER, "dispatch", self.cpu.kind, dur_s)
        return self.m.book(self.cpu, t_s, dur_s, "dispatch", WORKER)

    def copy(self, t_s: float) -> tuple[float, float]:
        """One step's observations over the copy engine from ``t_s``: (start, end). The
        GPU device accounts it; on a timeline it is the lane after the stream's."""
        dur = self.w.copy_s
        start, end, _ = self.copy_engine.reserve(t_s, dur)
        self.gpu.account(SWAP_PHASE, dur, 1)
        self.m.clock.spend(WORKER, SWAP_PHASE, self.gpu.kind, dur)
        if self.gpu.timeline is not None:
            self.gpu.timeline.append((self.gpu.name, self.gpu.lanes, SWAP_PHASE, start, dur,
                                      WORKER, {"items": 1}))
        self.copies_s += dur
        return start, end


def run(m: Machine, w: Work, iterations: int = 1) -> Outcome:
    """Run ``iterations`` iterations of ``w`` back to back on ``m`` (``m.result`` of the
    outcome is the run's Result; ``m.iteration_times_s()`` each iteration's time)."""
    if iterations < 1:
        raise RldseError(f"iterations {iterations}: expected at least 1",
                         where="timerl program")
    gpu_model = stream(m)
    r = _Run(m, w, m.runner("learn").device, m.cpu.device, Lanes(1, clock=m.env))
    r.memory.alloc(0.0, w.fixed_bytes + w.carried_steps * (w.step_bytes + w.keep_bytes))
    m.env.process(_iterations(r, iterations))
    m.env.run()
    peak = r.memory.peak()
    swapped = w.steps * w.step_bytes if w.swap else 0
    return Outcome(
        env_steps=iterations * w.steps * w.envs, updates=iterations,
        breakdown_s={"act_s": r.act_s, "learn_s": r.learn_s, "copies_s": r.copies_s},
        gpu_memory_peak_bytes=peak, swapped_bytes=swapped, host_memory_bytes=swapped,
        checks=m.memory_checks(m.runner("learn"), bool(gpu_model.fits(peak))))


def _iterations(r: _Run, iterations: int) -> Generator:
    t = 0.0
    for _ in range(iterations):
        acted = yield from _acting(r, t)
        learned = yield from _learning(r, acted)
        end = max(r.on_host(learned, r.w.tail_host_s),
                  r.on_gpu(learned, r.w.tail_device_s, "learn"))
        yield _until(r.m.env, end)
        r.act_s += acted - t
        r.learn_s += end - acted
        r.m.mark_iterations(end)
        t = end


def _acting(r: _Run, t0: float) -> Generator:
    """The acting loop from ``t0``; returns when its last step and last swap-out end. A
    step starts when the one before ends and, swapping, when a step buffer is free."""
    w, mem, env = r.w, r.memory, r.m.env
    step_end, out_ends = t0, []
    for k in range(w.steps):
        start = step_end
        if w.swap and k >= SWAP_BUFFERS:
            start = max(start, out_ends[k - SWAP_BUFFERS])
        yield _until(env, start)
        mem.alloc(start, w.step_bytes + w.keep_bytes)
        host = r.on_host(start, w.step_host_s)
        written = r.on_gpu(start, w.env_s, "env_step")
        done = r.on_gpu(start, w.act_s, "act")
        if w.step_learn_s > 0:  # n-step TD: the backward of the step n back frees it
            done = r.on_gpu(start, w.step_learn_s, "learn")
            mem.free(done, w.step_bytes + w.keep_bytes)
        if w.swap:
            out_ends.append(r.copy(written)[1])
            mem.free(out_ends[-1], w.step_bytes)
        step_end = max(host, done)
    return max(step_end, out_ends[-1]) if out_ends else step_end


def _learning(r: _Run, t0: float) -> Generator:
    """The backward operations after the loop from ``t0`` (none for n-step TD); swapping,
    each after its step comes back, a copy waiting for a step buffer. Returns when the
    last one and the phase's host work end."""
    w, mem, env = r.w, r.memory, r.m.env
    if not w.learn_ops:
        return t0
    host = r.on_host(t0, w.learn_host_s)
    mem.alloc(t0, w.learn_bytes)
    per_op = (w.step_bytes + w.keep_bytes) * (w.steps // w.learn_ops)
    ends: list[float] = []
    for k in range(w.learn_ops):
        ready = t0
        if w.swap:
            arrive = max(t0, ends[k - SWAP_BUFFERS]) if k >= SWAP_BUFFERS else t0
            yield _until(env, arrive)
            start, ready = r.copy(arrive)
            mem.alloc(start, w.step_bytes)
        ends.append(r.on_gpu(ready, w.learn_op_s, "learn"))
        mem.free(ends[-1], per_op)
    mem.free(ends[-1], w.learn_bytes)
    return max(host, ends[-1])
