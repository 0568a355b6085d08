"""DDPG's simulated twin: the shared off-policy program (program/) with DDPG's shapes, and
its networks' work counted as the real loop counts it (ddpg.py's ``learn_work`` and
``sync_work``)."""

from __future__ import annotations

from rldse.kernels.mlp import forward_work, n_params
from rldse.sim.machine import Machine, Outcome
from rldse.workloads.offpolicy import DDPGInfo
from rldse.workloads.offpolicy.ddpg import learn_work, sync_work
from rldse.workloads.offpolicy.program import program as run_program
from rldse.workloads.offpolicy.program.costs import Shape, refuse_ignored_knobs


def program(m: Machine) -> Outcome:
    """DDPG on a simulated machine: the shared off-policy loop with DDPG's shapes; the knob
    ``hidden`` sets both networks' hidden widths (work by mlp.py's formulas)."""
    info: DDPGInfo = m.system.info
    t_actor, t_critic = info.actor_sizes, info.critic_sizes
    refuse_ignored_knobs(m, hidden=t_actor[1:-1])
    actor = [t_actor[0], *m.knobs.hidden, t_actor[-1]]
    critic = [t_critic[0], *m.knobs.hidden, t_critic[-1]]
    batch0 = info.batch_size
    shape = Shape(
        batch=batch0, learn_every=info.learn_every,
        capacity=info.replay_capacity, transition_bytes=info.transition_bytes,
        obs_bytes=4 * info.obs_dim, act_layers=len(actor) - 1,
        learn_layers=len(actor) - 1 + len(critic) - 1, act_params=n_params(actor),
        learn_params=n_params(actor) + n_params(critic),
        target_sync_steps=None, prioritized=False, learning_starts=info.learning_starts,
        learn_work=lambda batch: learn_work(actor, critic, batch),
        trace_works={"learn": learn_work(t_actor, t_critic, batch0),
                     "act": forward_work(t_actor, 1, tanh=True),
                     "sync": sync_work(t_actor, t_critic)},
        works={"act": forward_work(actor, 1, tanh=True), "sync": sync_work(actor, critic)},
        trace_batch=batch0, trace_capacity=info.replay_capacity)
    return run_program(m, shape)
