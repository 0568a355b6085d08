"""The simulated twin of the actor-learner PPO loop in ppo.py.

The loop is the real one: the learner broadcasts parameters, N actors each collect
``rollout_len`` vector steps of ``envs_per_actor`` environments on the CPU cores, the
learner receives the rollouts, runs ``epochs`` × ⌈N·E·T / minibatch⌉ minibatch steps and
broadcasts again (``learner: async`` lets the actors run ahead). Costs are the trace's
rows on the placed parts, batch-dependent work rescaled with the network's per-layer
work. Inference (local or central), the learner, IPC handoffs, merged events, GPU
memory, clusters, what a run reports and what is not modelled: docs/architecture.md,
"The actor-learner program", whose headings the modules here cite.

The package by concern: the loop's sizes and roles (shape.py), the networks' work
(networks.py), unit costs (costs.py, handoffs.py), memory (memory.py), the processes
(learner.py, actors.py, central_inference.py) and what a run reports (outcome.py,
unit_costs.py).
"""


from __future__ import annotations

from rldse.sim.machine import Machine, Outcome
from rldse.workloads.actor_learner.program.actors import actors
from rldse.workloads.actor_learner.program.learner import learner
from rldse.workloads.actor_learner.program.outcome import outcome
from rldse.workloads.actor_learner.program.shape import refuse_ignored_knobs
from rldse.workloads.actor_learner.program.state import handshake, prepare


def program(m: Machine) -> Outcome:
    """Simulate the actor-learner PPO loop on machine ``m`` (rldse.sim.simulate calls this):
    the model is docs/architecture.md's, "The actor-learner program"."""
    refuse_ignored_knobs(m)
    run = prepare(m)
    hs = handshake(run)
    m.env.process(actors(run, hs))
    m.env.process(learner(run, hs))
    m.env.run()
    return outcome(run, hs)
