"""The simulated twin of the actor-learner PPO loop in ppo.py.

The loop is the real one: the learner broadcasts parameters, N actors (``actors``) each
collect ``rollout_len`` vector steps of ``envs_per_actor`` environments on C CPU cores
(``cores``, default all), the learner receives the rollouts, runs ``epochs`` ×
⌈N·E·T / minibatch⌉ minibatch steps (``batch_size`` is the minibatch) and broadcasts
again (``envs_per_actor`` and ``rollout_len`` default to the trace's). Costs are the
trace's rows costed on the placed parts; batch-dependent work
(act, learn) is rescaled with the trace's network's own per-layer work (``networks``:
network_work.py; an MLP trace's by mlp.py's formulas) when envs per actor, minibatch,
central batches or, for MLPs, the observation size (``obs_bytes``) or ``hidden``
differ from the capture.

Inference.
- ``local``: each actor runs its own policy (placement.act: ``cpu`` its core, ``gpu``
  its own unbatched forwards on the GPU plus the copies).
- ``central``: one long-lived inference server per GPU (placement.act ``gpu``; actors
  split round-robin) or one on a CPU core (``cpu``). A server takes every observation
  waiting (greedy dynamic batching, no batching timeout), runs one forward at that
  batch (GPU kernels + host→device copy of the observations and device→host copy of
  action, logp and value), and the served actors step their environments on the
  cores (FIFO lanes) and submit again. An actor makes T+1 requests per rollout (the
  last is the bootstrap value). Actor↔server messages are assumed to go through
  shared memory at no cost beyond the copies; the trace has no such rows.

Learner. ``placement.learn`` ``cpu`` or ``gpu``; with several GPUs the learner runs on
gpu0 only (unless ``learner_gpus``: "Clusters") and inference servers run on every
GPU: in the synchronous loop learning and inference never overlap, so keeping gpu0 out
of inference would only idle it. A GPU learner copies the rollout to the device each
iteration and its parameters back to the host before the broadcast.

Clusters. ``learner_gpus`` L data-parallel learners (GPUs taken in node order) each run
a 1/L share of every minibatch step, then the gradients' all-reduce over them, NCCL's
choice on the fabric and network (``rldse.models.collectives``), booked as ``allreduce``
on every learner GPU. Actors are spread over the nodes in blocks, each node's on its own
cores; the parameters' broadcast reaches other nodes' actors after it crosses the network
(``net:params``), and each other node's rollouts go to node 0 over its NICs
(``net:rollout``) through node 0's receive link: a busy-until lane (rldse.sim.lanes)
that carries one transfer's bytes at a time in arrival order, so transfers that meet
there share its bandwidth (two at once take twice the bytes' time); each then adds its
latency in flight. ``network_s`` is the time the network adds to an iteration.

IPC handoffs. The trace's ``sync`` and ``rollout_add`` rows are the *sender's* wall
time, which on a busy host includes the sender being descheduled after it woke the
receiver (measured: 4.9 ms per 36 kB send in the loop vs 0.1 ms alone). What is on
the critical path is per iteration the broadcast to the last actor's first act (per
send: / actors), and the last actor's send to the learner's first learn (per rollout:
/ actors; it includes unpickling, GAE and batching on the learner). A trace that
recorded the processes' CPU time (ppo.py; ../info.py) gives each as the CPU time of
its work: the sender's row plus the receiver's receive, without the wait for the
partner, whose own work is costed where it is recorded, and without the time a busy
host gave other processes. An older trace gives the time the receiver saw on the
shared clock, contention included. Either is booked on the learner's core, scaled to
the target CPU like any operation (handoffs.py).

``learner: sync`` is the real loop: actors wait for the broadcast, the learner waits
for all rollouts. ``learner: async``: actors run ahead with parameters up to
``sync_interval`` iterations old; the learner learns on iteration k's rollouts while
actors collect later ones and broadcasts every ``sync_interval`` updates; a CPU
learner then keeps one core to itself. Policy lag (``staleness_updates``, per
iteration): learner iterations between the parameters a rollout was collected with
and the learner's when it learns on it; 0 in the synchronous loop.

Merged events (what no other process observes is one event). With local inference an iteration's collection is one
event: actor a's rollout (its env steps, resets and acts) is one duration d_a from its
release r_a (when its parameters arrived), and the N rollouts share the C cores as a
preemptive time-sharing OS would: the collection ends at
max(max_a r_a + d_a, max_k r_k + Σ_{j ≥ k} d_j / throughput) (releases sorted), the
standard lower bounds, tight for equal rollouts, where throughput is C cores
(``CpuSpec.core_throughput``: with SMT's gain, and divided by the measured
shared-core slowdown when more rollouts than cores are runnable). Per-step
interleaving is not resolved. With central inference there is one event per batch (and
one per idle wait of a server); actors are entries in the server's heap, not
processes, so events grow with batches, not with actors × steps.

GPU memory (memory.py): the learner GPU holds parameters, gradients and Adam
state, the rollout (observations + 7 scalars per transition, plus the bootstrap
observation of each env), a gathered minibatch copy (CleanRL's ``b_obs[mb_inds]``
makes one) and the minibatch's activations and their gradients; an inference GPU holds
the parameters and a batch. Needing more than ``mem_bytes`` sets
the ``gpu_memory`` check fails unless ``gpu_swap``: then the rollout and minibatch stay in
host memory (``swapped_bytes``) and every epoch streams them over the link, charged
each iteration. ``memory.gpu_memory(m)`` returns the buffers by name.

``epochs`` (default: the trace's) is the passes over each rollout. ``resident_steps``
W is how many of the rollout's T steps the learner must hold on the GPU at once: the
whole rollout (default) is what Monte-Carlo returns need, since the first step's
return waits for the last reward; an n-step TD objective needs only W = n + 1. With
W < T the rollout buffers hold W steps, a minibatch draws from at most N·E·W
transitions, and the rollout is streamed to the GPU window by window every epoch
(⌈T/W⌉ copies of its bytes per epoch) instead of being copied once and kept. The
rollout is produced in host memory by the actors either way, so W changes what must
fit on the GPU, not how many bytes cross the link in a one-epoch learner.

``breakdown_s`` (totals over the run): ``startup_s`` (starting the actor processes:
with the processes' CPU time, the learner's set-up, its side of starting each actor,
and the actors' own start-ups side by side on the cores; from an older trace, the
capture's wall time before its first operation, per actor), ``rollout_s`` (collection,
from the first actor's release to the last rollout), ``sync_s`` (until the last
recipient has the parameters), ``handoff_s``, ``learn_s`` (copies and swapping
included), ``copy_s`` / ``swap_s`` (rollout to the GPU), ``inference_s`` (server
busy time), and ``iter_s``, the mean iteration.

Not modelled: process switches, the learner's broadcast taking a core from the first
actors, IPC between actors and a central server, GAE on the GPU (the handoff stays
on the CPU); a per-send delivery includes the receiver's wake-up, so broadcasts to
many actors are pessimistic; ``sync_interval`` matters only with ``async``.

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
    the model is the package docstring's."""
    refuse_ignored_knobs(m)
    run = prepare(m)
    hs = handshake(run)
    m.env.process(actors(run, hs))
    m.env.process(learner(run, hs))
    m.env.run()
    return outcome(run, hs)
