"""What a finished run reports: its tally onto the workers' clock and the devices, and
the Outcome (breakdown, memory, checks, policy lag)."""

from __future__ import annotations

from rldse.sim.machine import Outcome
from rldse.workloads.actor_learner.program.memory import host_memory
from rldse.workloads.actor_learner.program.state import Handshake, Run

#: breakdown_s entries reported even when zero.
ALWAYS = ("rollout_s", "sync_s", "learn_s")


def outcome(run: Run, hs: Handshake) -> Outcome:
    """The run's Outcome, after its clock entries and device accounts are booked."""
    m, s, tally = run.m, run.shape, run.tally
    m.clock.instances.update(actor=s.N, learner=1)
    _actor_clock(run)
    _learner_clock(run)
    _other_learners(run)
    parts = {k: v for k, v in tally.parts.items() if v > 0 or k in ALWAYS}
    parts["iter_s"] = (m.env.now - tally.parts["startup_s"]) / s.iterations
    mem = run.memory
    return Outcome(env_steps=s.iterations * s.S, updates=s.iterations * s.n_mb,
                   breakdown_s=parts, gpu_memory_peak_bytes=int(mem.peak),
                   swapped_bytes=int(mem.swapped),
                   host_memory_bytes=host_memory(s, run.roles, mem),
                   checks=m.memory_checks(run.roles.kernels, mem.ok),
                   # the learner learns on rollout j after j updates (versions count them)
                   staleness_updates=[j - v for j, v in enumerate(hs.used)])


def _actor_clock(run: Run) -> None:
    """The actors' work on the cores, accounted on the cpu Device (the lanes were the
    program's own; Device.book would pick any of the CPU's lanes), and their clock."""
    m, s, roles, tally = run.m, run.shape, run.roles, run.tally
    clock, cpu, busy, far = m.clock, roles.cpu, tally.busy, tally.remote
    vsteps = s.iterations * s.N * s.T
    cpu.account("env_step", busy["env_step"] - far["env_step"], vsteps - int(far["vsteps"]))
    if busy["env_reset"]:
        cpu.account("env_reset", busy["env_reset"] - far["env_reset"], 0)
    if not s.central and not roles.act.kernels:
        cpu.account("act", busy["act"] - far["act"], tally.act_count - int(far["acts"]))
    if tally.act_dispatch:  # GPU inference: its dispatch kept the issuing cores busy
        cpu.account("dispatch", tally.act_dispatch, 0)
    clock.spend("actor", "env_step", cpu.kind, busy["env_step"], vsteps)
    if busy["env_reset"]:
        clock.spend("actor", "env_reset", cpu.kind, busy["env_reset"], 0)
    clock.spend("actor", "act", roles.act.label, busy["act"], tally.act_count)
    for name, t in tally.wait.items():
        if t > 0:
            clock.spend("actor", name, "any", t, 0)
    for name, t in tally.net.items():
        if t > 0:
            clock.spend("actor", name, "network", t, 0)


def _other_learners(run: Run) -> None:
    """Data-parallel learners 2..L run what the first runs, in step with it (the all-
    reduce waits for every one): their GPUs get the first's learn and all-reduce time."""
    s, roles = run.shape, run.roles
    if s.learners == 1:
        return
    first = roles.learner_dev
    for dev in roles.learn.devices[len(roles.booked):s.learners]:
        for phase in ("learn", "allreduce"):
            use = first.phases.get(phase)
            if use is not None:
                dev.account(phase, use.busy_s, use.count)


def _learner_clock(run: Run) -> None:
    """The learner's phases: learn on its part, waits on none, the rest on the host."""
    s, roles = run.shape, run.roles
    for phase, t in run.tally.learner.items():
        if t > 0:
            dev = "any" if phase.startswith("wait:") else (
                roles.learn.label if phase in ("learn", "allreduce") else roles.cpu.kind)
            count = s.iterations * s.n_mb if phase in ("learn", "allreduce") else \
                0 if phase == "dispatch" else s.iterations
            run.m.clock.spend("learner", phase, dev, t, count)
