"""The learner process: start the actors, broadcast parameters, and per iteration
receive the rollouts and run the minibatch steps (docs/architecture.md, "Learner")."""

from __future__ import annotations

import numpy as np

from rldse.models.kinds import PartTime
from rldse.workloads.actor_learner.program.state import Handshake, Run


def learner(run: Run, hs: Handshake):
    """Start-up, the first broadcast, then per iteration: wait for the rollouts, receive
    them, learn, and broadcast (every iteration; async: every ``sync_interval``)."""
    m, s, roles, tally = run.m, run.shape, run.roles, run.tally
    env, handoffs, sync_interval = m.env, run.costs.handoffs, m.knobs.sync_interval
    t = m.book(roles.cpu, 0.0, handoffs.startup_s, "startup", "learner") \
        if handoffs.startup_s else 0.0
    tally.parts["startup_s"] = t
    t = publish(run, hs, 0, t)
    yield env.timeout(t - env.now)
    for it in range(s.iterations):
        t0 = env.now
        yield hs.ready[it]
        tally.learner["wait:actors"] += env.now - t0
        t = env.now
        h = handoffs.recv.take(s.N)
        t = m.book(roles.cpu, t, h, "rollout_add", "learner", items=s.N)
        tally.parts["handoff_s"] += h
        tally.learner["rollout_add"] += h
        t = yield from _learn_iteration(run, t)
        last = it + 1 == s.iterations
        if not last and (not s.asynchronous or (it + 1) % sync_interval == 0):
            t = publish(run, hs, it + 1, t)
        yield env.timeout(t - env.now)
        m.mark_iterations(t)


def _learn_iteration(run: Run, t: float):
    """An iteration's copies and ``n_mb`` minibatch steps from t; returns when they are
    done. Inference sharing the learner's GPU (``interleave``) gets one booking per
    minibatch, so its batches queue between steps."""
    env, s, tally, copies = run.m.env, run.shape, run.tally, run.costs.copies
    t1, dispatched = t, tally.learner["dispatch"]
    pre = PartTime.serial(0.0, copies.rollout_s + copies.swap_s)
    reduced = tally.learner["allreduce"]
    if run.roles.interleave:
        yield env.timeout(t - env.now)
        t = _learn(run, t, pre)
        for _ in range(s.n_mb):
            yield env.timeout(t - env.now)
            t = _allreduce(run, _learn(run, t, run.costs.learn.take(1)), 1)
    else:
        t = _allreduce(run, _learn(run, t, pre + run.costs.learn.take(s.n_mb)), s.n_mb)
    reduced = tally.learner["allreduce"] - reduced
    tally.parts["learn_s"] += t - t1 - reduced
    tally.parts["copy_s"] += copies.rollout_s
    tally.parts["swap_s"] += copies.swap_s
    tally.learner["learn"] += t - t1 - reduced - (tally.learner["dispatch"] - dispatched)
    return t


def _allreduce(run: Run, t: float, steps: int) -> float:
    """The gradient all-reduce of ``steps`` minibatch steps over the data-parallel
    learners, from t on the learner's GPU, after their backward passes (one closed form
    per run: NetCosts.allreduce_s); t itself with one learner."""
    if not run.costs.net.allreduce_s:
        return t
    end = max(run.m.book(dev, t, steps * run.costs.net.allreduce_s, "allreduce",
                         "learner", items=steps) for dev in run.roles.booked)
    run.tally.learner["allreduce"] += end - t
    run.tally.parts["allreduce_s"] += end - t
    return end


def _learn(run: Run, t: float, work: PartTime) -> float:
    """Learner work from t: the device part on the learner's device, a GPU's dispatch
    on a CPU core (the learner process's); returns when it is done."""
    m, roles = run.m, run.roles
    end = t + work.wall_s
    if work.device_s > 0:
        end = max(end, *(m.book(dev, t, work.device_s, "learn", "learner")
                         for dev in roles.booked))
    if work.host_s > 0:
        end = max(end, m.book(roles.cpu, t, work.host_s, "dispatch", "learner"))
        run.tally.learner["dispatch"] += work.host_s
    return end


def publish(run: Run, hs: Handshake, version: int, t: float) -> float:
    """Broadcast parameters from time t; sets each actor's release (when its policy has
    them) and returns when the last recipient has them."""
    t0 = t
    t = _to_servers(run, hs, t) if run.shape.central else _to_actors(run, hs, t)
    run.tally.parts["sync_s"] += t - t0
    run.tally.learner["sync"] += t - t0
    hs.version = version
    ev, hs.published = hs.published, run.m.env.event()
    ev.succeed()
    return t


def _to_actors(run: Run, hs: Handshake, t: float) -> float:
    """Local inference: to host memory (from a GPU learner), then one pipe send per
    actor, in actor order."""
    m, roles, N = run.m, run.roles, run.shape.N
    if roles.learn.kernels:
        t = m.book(roles.learner_dev, t, run.costs.copies.param_s, "sync", "learner")
    s = run.costs.handoffs.send.take(N)
    hs.release = t + np.arange(1, N + 1) * (s / N)
    net_s = run.costs.net.params_s
    if net_s:  # actors on other nodes get them once the broadcast crossed the network
        remote = run.shape.node_actors[0].stop
        hs.release[remote:] += net_s
        run.tally.parts["network_s"] += net_s
    m.book(roles.cpu, t, s, "sync", "learner", items=N)
    return t + s


def _to_servers(run: Run, hs: Handshake, t: float) -> float:
    """Central inference: to every inference server; its actors can go once it has them."""
    m, roles = run.m, run.roles
    on_gpu, param_s = roles.learn.kernels, run.costs.copies.param_s
    G, rel = len(roles.servers), np.empty(run.shape.N)
    end = t
    for g, dev in enumerate(roles.servers):
        if dev is None:  # a server process on a CPU core: one pipe send
            tg = m.book(roles.learner_dev, t, param_s, "sync", "learner") if on_gpu else t
            tg = m.book(roles.cpu, tg, run.costs.handoffs.send.take(1), "sync", "learner")
        elif dev is roles.learner_dev:
            tg = t
        else:  # to another GPU through host memory (learner on a GPU) or from it
            tg = m.book(dev, t, param_s * (2 if on_gpu else 1), "sync", "learner")
        rel[g::G] = tg
        end = max(end, tg)
    hs.release = rel
    return end
