"""The actors: per iteration they wait for parameters recent enough, then collect a
rollout each, with their own policy (one merged event: docs/architecture.md, "Merged
events") or through central inference servers (central_inference.py)."""

from __future__ import annotations

import numpy as np

from rldse.sim.sharing import shared_ends
from rldse.workloads.actor_learner.program.central_inference import Central, central_wave
from rldse.workloads.actor_learner.program.state import Handshake, Run


def actors(run: Run, hs: Handshake):
    """Every iteration's collection, once the parameters it may use are out (at most
    ``lag`` versions old); signals ``hs.ready`` when its rollouts are done."""
    m, s, tally = run.m, run.shape, run.tally
    env = m.env
    central = Central.of(run) if s.central else None
    prev_end = 0.0
    for j in range(s.iterations):
        while hs.version < j - s.lag:
            yield hs.published
        hs.used.append(hs.version)
        r = np.maximum(hs.release, prev_end)
        waited = np.maximum(r - prev_end, 0.0) if j else np.zeros_like(r)
        if run.costs.net.params_s:  # remote actors' share of it: parameters in flight
            far = waited[s.node_actors[0].stop:]
            in_flight = float(np.minimum(far, run.costs.net.params_s).sum())
            tally.net["net:params"] += in_flight
            waited = waited.sum() - in_flight
        tally.wait["wait:learner"] += float(np.sum(waited))
        start = float(r.min())
        if start > env.now:
            yield env.timeout(start - env.now)
        if central is not None:
            end = yield env.process(central_wave(run, central, r))
        else:
            end = local_wave(run, r)
            yield env.timeout(end - env.now)
        tally.parts["rollout_s"] += end - start
        prev_end = end
        hs.ready[j].succeed()


def local_wave(run: Run, r: np.ndarray) -> float:
    """One iteration's collection with local inference, actor a released at r[a]: one
    event per node (package docstring); rollouts from other nodes than the learner's
    then cross the network, sharing node 0's receive link in the order they are ready
    (package docstring, "Clusters"). Returns when the last rollout is in."""
    groups = run.shape.node_actors
    if len(groups) == 1:
        return _node_wave(run, r, 0, groups[0])
    ends = [_node_wave(run, r[g.start:g.stop], k, g) if len(g) else -np.inf
            for k, g in enumerate(groups)]
    net, tally = run.costs.net, run.tally
    remote = sorted((k for k in range(1, len(groups)) if len(groups[k])),
                    key=lambda k: ends[k])
    arrived = ends[0]
    for k in remote:
        _, off_link, _ = run.ingress.reserve(ends[k], net.rollout_wire_s[k])
        arrived = max(arrived, off_link + net.rollout_s[k] - net.rollout_wire_s[k])
    tally.parts["network_s"] += arrived - max(ends)
    tally.net["net:rollout"] += sum(len(groups[k]) * net.rollout_s[k] for k in remote)
    return float(arrived)


def _node_wave(run: Run, r: np.ndarray, node: int, ids: range) -> float:
    """The collection of node ``node``'s actors (``ids``, released at r) on its cores:
    one event; returns when its last rollout is done."""
    m, s, roles, costs, tally = run.m, run.shape, run.roles, run.costs, run.tally
    T, N, C = s.T, len(ids), roles.cores
    cpu = roles.cpu if node == 0 else m.of_kind(roles.cpu.kind)[node]
    env_s = np.array([costs.env[a].take(T) for a in ids])
    acts = [costs.act[a].take(T + 1) for a in ids]
    act_s = np.array([a.wall_s for a in acts])
    reset = T * costs.reset_per_vstep
    # on the actor's core: env steps, and the whole act (CPU) or its dispatch (GPU)
    cpu_part = env_s + reset + np.array([a.host_s for a in acts])
    if N > C:  # rollouts beyond the cores share them, event by event (rldse.sim.
        # sharing): n runnable get CpuSpec.core_throughput(n, C) core-equivalents (an
        # extra SMT thread adds smt_gain of a core; beyond the hardware threads the OS
        # time-slices at the measured shared-core slowdown). The closed form's lower
        # bound it replaces was 1.0-1.4 % short on unequal rollouts.
        spec = m.cpu.model.spec
        end = float(np.max(shared_ends(r, cpu_part,
                                       lambda n: spec.core_throughput(n, C))))
    else:
        end = float(np.max(r + cpu_part))
    if roles.act.kernels:  # each actor's kernels, queued on its node's first part
        devices = roles.act.devices
        g = float(sum(a.device_s for a in acts))
        end = max(end, float(np.max(r + env_s + reset + act_s)),
                  m.book(devices[node * len(devices) // s.nodes], float(r.min()), g,
                         "act", "actors", items=N * (T + 1)))
    busy = {"env_step": float(env_s.sum()), "env_reset": reset * N,
            "act": float(act_s.sum())}
    for name, t in busy.items():
        tally.busy[name] += t
    if node:  # on that node's cores (node 0's are accounted in bulk: outcome.py)
        counts = {"env_step": N * T, "env_reset": 0, "act": N * (T + 1)}
        for name, t in busy.items():
            if t and (name != "act" or not roles.act.kernels):
                cpu.account(name, t, counts[name])
            tally.remote[name] += t
        tally.remote["vsteps"] += N * T
        tally.remote["acts"] += N * (T + 1)
    tally.act_dispatch += float(sum(a.host_s for a in acts)) if roles.act.kernels else 0.0
    tally.act_count += N * (T + 1)
    own = float(np.sum(env_s + reset + act_s))
    tally.wait["wait:cores"] += max(0.0, float(np.sum(end - r)) - own)
    if m.timeline is not None:  # the cores' merged load, for the Chrome trace
        per = float(cpu_part.sum()) / min(N, C)
        for lane in range(min(N, C)):
            m.timeline.append((cpu.name, lane, "rollout", float(r.min()), per,
                               "actors", None))
    return end
