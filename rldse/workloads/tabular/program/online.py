"""The online twin: one agent stepping its env on one core, as train.py's online loop."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.errors import RldseError
from rldse.models.spec import Param
from rldse.sim.machine import Cycle, Machine, Outcome
from rldse.workloads.tabular.program.cpu import same_dtype_on_cpu
from rldse.workloads.tabular.sizes import Q_BYTES

#: Online steps merged into one event (no other process observes the single agent; the
#: sums are exact for any chunk, `Cycle.take`). A million, so 1e10 steps are 1e4 events
#: (under a second) rather than 1e6 (about 30 s on a loaded 2-core host), and events stay
#: proportional to steps, as the up-front estimate's pilots assume (rldse.sim.budget).
ONLINE_CHUNK = 1_000_000
PY_LOG_STEP_BYTES = Param(120, "B", "an online step in the transition log's 5 lists: 5 "
                          "pointers (40 B), a float reward (24 B) and up to two int states "
                          "(28 B each); actions and done flags are shared small objects",
                          (64, 120))


@dataclass(frozen=True)
class _Step:
    """Per step: the env step, act and Q update rows in turn (``Cycle``), acts per step
    (SARSA: one more per episode), and resets and the loop's untimed glue (seconds)."""

    env: Cycle
    act: Cycle
    update: Cycle
    acts_per_step: float
    reset_s: float
    glue_s: float


def online_program(m: Machine) -> Outcome:
    """Replay the online loop on one core: per step an env step, an act (SARSA: one more
    per episode), a Q update, and resets folded in at the trace's rate per step; merged in
    chunks of ONLINE_CHUNK steps. ``loop`` is the loop's untimed glue (appending the
    transition log, episode bookkeeping, the recorder's own calls): the trace's wall time
    not inside any recorded operation, per step, scaled like interpreter time."""
    k = m.knobs
    if k.agents not in (None, 1):
        raise RldseError(f"workload.agents: online tabular traces run one agent, got {k.agents}")
    same_dtype_on_cpu(m)
    steps = k.env_steps or m.trace.env_steps
    m.env.process(_agent(m, _step_costs(m), steps))
    m.env.run()
    q_bytes = Q_BYTES * m.system.info.n_states * m.system.info.n_actions
    return Outcome(env_steps=steps, updates=steps,
                   host_memory_bytes=int(steps * PY_LOG_STEP_BYTES.value + q_bytes))


def _step_costs(m: Machine) -> _Step:
    """The trace's per-step costs on the target core."""
    ops = m.trace.ops
    trace_steps = m.trace.env_steps
    step_c, act_c, upd_c = (m.cycle(p) for p in ("env_step", "act", "q_update"))
    resets = m.phase_cost("env_reset") if (ops["phase"] == "env_reset").any() else None
    # the loop's untimed glue computes too: on a contended capture, at the compute rows'
    # CPU share (rldse.trace.host_cost_s)
    untimed = (m.trace.meta.wall_time_s - float(ops["dur_s"].sum())) \
        / (m.trace.compute_wall_per_cpu or 1.0)
    return _Step(env=step_c, act=act_c, update=upd_c,
                 acts_per_step=int((ops["phase"] == "act").sum()) / trace_steps,
                 reset_s=float(resets.sum()) / trace_steps if resets is not None else 0.0,
                 glue_s=max(untimed, 0.0) / trace_steps * m.cpu.model.interp_scale)


def _agent(m: Machine, c: _Step, steps: int):
    """The agent's steps in chunks (the reference engine: one step at a time, each
    operation its own booking)."""
    env, clock, cpu = m.env, m.clock, m.cpu.device
    done = acts = 0
    while done < steps:
        n = min(1 if m.reference else ONLINE_CHUNK, steps - done)
        done += n
        n_act = round(done * c.acts_per_step) - acts
        acts += n_act
        parts = {"env_step": c.env.take(n), "act": c.act.take(n_act),
                 "q_update": c.update.take(n), "env_reset": n * c.reset_s,
                 "loop": n * c.glue_s}
        for phase, s in parts.items():
            count = {"act": n_act, "env_reset": 0, "loop": 0}.get(phase, n)
            clock.spend("agent", phase, cpu.kind, s, count)
        if not m.reference:
            t = cpu.book(env.now, sum(parts.values()), "env_step")
            yield env.timeout(t - env.now)
            continue
        for s in parts.values():
            if s:
                t = cpu.book(env.now, s, "env_step")
                yield env.timeout(t - env.now)
