"""rldse against a plain SimPy model of the same actor-learner loop (prints; not a test).

The peer is written the way a typical SimPy user would: one process per actor, a
``simpy.Resource`` for the CPU cores and one for the GPU, one ``timeout`` per operation
(act, env step, send), a learner process that waits for every rollout, runs
epochs × ⌈N·E·T / minibatch⌉ minibatch steps on the GPU and broadcasts. Its unit costs are
rldse's own (``rldse.workloads.actor_learner.program.unit_costs.unit_costs``) on the same system, so
where the two models agree (synchronous learner, local inference on the actors' cores)
the simulated throughputs should agree within 10 %. Prints wall times, the speed ratio
and both simulated throughputs for 8 and 512 actors at 1e6 env steps.

    python benchmarks/speed/peer_simpy.py [--steps 1000000]
"""

from __future__ import annotations

import math

import simpy
from peer_common import ROOT, parse_steps, race, shipped_trace

from rldse.sim import Machine
from rldse.system import load_spec, resolve
from rldse.workloads.actor_learner.program.unit_costs import unit_costs

SPEC = ROOT / "examples" / "dgx1_like.yaml"


def peer(u, steps: int) -> tuple[float, int]:
    """The plain SimPy model; returns (simulated seconds, env steps)."""
    env = simpy.Environment()
    cores = simpy.Resource(env, capacity=u.cores)
    gpu = simpy.Resource(env, capacity=1)
    N, E, T = u.actors, u.envs_per_actor, u.rollout_len
    per_iter = N * E * T
    iters = max(1, math.ceil(steps / per_iter))
    learn_steps = u.epochs * math.ceil(per_iter / u.minibatch)
    act_s = u.act_s[1] if len(u.act_s) > 1 else u.act_s[0]
    params = [env.event() for _ in range(iters + 1)]
    rollouts = [simpy.Store(env) for _ in range(iters)]

    def actor(a: int):
        for k in range(iters):
            yield params[k]
            for _ in range(T):
                with cores.request() as req:
                    yield req
                    yield env.timeout(act_s)
                    yield env.timeout(u.env_step_s)
            with cores.request() as req:  # the bootstrap value
                yield req
                yield env.timeout(act_s)
            yield rollouts[k].put(a)

    def learner():
        params[0].succeed()
        for k in range(iters):
            for _ in range(N):
                yield rollouts[k].get()
                yield env.timeout(u.handoff_s)
            for _ in range(learn_steps):
                with gpu.request() as req:
                    yield req
                    yield env.timeout(u.learn_step_s)
            yield env.timeout(u.sync_s)
            params[k + 1].succeed()

    for a in range(N):
        env.process(actor(a))
    env.process(learner())
    env.run()
    return env.now, iters * per_iter


def main() -> None:
    steps = parse_steps(__doc__)
    trace = shipped_trace("actor_learner_cartpole_2.parquet")
    for actors in (8, 512):
        over = {"workload.env_steps": steps, "workload.actors": actors,
                "workload.learner": "sync", "workload.inference": "local",
                "placement.act": "cpu"}
        system = resolve(load_spec(SPEC, over), trace)
        u = unit_costs(Machine(trace, system))
        race(f"{actors:4d} actors", trace, system, steps, lambda u=u: peer(u, steps))


if __name__ == "__main__":
    main()
