"""rldse against a plain SimPy model of the same off-policy (DQN) loop (prints; not a test).

The peer is written the way a typical SimPy user would: one process per actor holding a
``simpy.Resource`` core for each env step, action and replay insert (one ``timeout``
each), and a learner process that, once every actor has finished its chunk of the round,
runs the updates the data allows (sample, gradient step, priority update, target sync
every ``target_sync`` env steps), one ``timeout`` each, on a core of its own: the real
DQN loop of ``rldse.workloads.offpolicy`` with ``learner: sync``. Unit costs are rldse's
own: each phase's mean time per operation in a 20,000-step rldse run on the same system
(the program's costs after rescaling to the target CPU), so the simulated throughputs
should agree within 10 % (rldse draws trace rows, the peer uses means). Prints wall
times, the ratio and both simulated throughputs.

    python benchmarks/speed/peer_simpy_offpolicy.py [--steps 1000000]
"""

from __future__ import annotations

import simpy
from peer_common import parse_steps, race, shipped_trace

from rldse.sim import Machine, simulate
from rldse.system import parse_spec, resolve

SYSTEM = {"name": "cpu-only", "cpu": {"preset": "epyc-7742"}}


def peer(m: Machine, unit: dict[str, float], steps: int, actors: int) -> tuple[float, int]:
    """The plain SimPy model with per-operation seconds ``unit`` (by phase); returns
    (simulated seconds, env steps)."""
    info = m.trace.meta.workload_info
    step_s, act_s, add_s = unit["env_step"], unit["act"], unit["replay_add"]
    reset_s = unit["env_reset"]
    sample_s, learn_s, sync_s = unit["replay_sample"], unit["learn"], unit["sync"]
    learn_every, starts = info["learn_every"], info["learning_starts"]
    target_sync = info["target_sync"]
    chunk = max(1, round(learn_every / actors))
    env = simpy.Environment()
    cores = simpy.Resource(env, capacity=actors)
    learner_core = simpy.Resource(env, capacity=1)
    state = {"steps": 0, "updates": 0, "syncs": 0}

    def actor(n: int):
        for _ in range(n):
            with cores.request() as req:
                yield req
                yield env.timeout(act_s)
                yield env.timeout(step_s + reset_s)
                yield env.timeout(add_s)

    def loop():
        while state["steps"] < steps:
            procs = []
            for _ in range(actors):
                n = min(chunk, steps - state["steps"])
                if n <= 0:
                    break
                procs.append(env.process(actor(n)))
                state["steps"] += n
            yield env.all_of(procs)
            due = max(0, state["steps"] - starts) // learn_every - state["updates"]
            for _ in range(due):
                with learner_core.request() as req:
                    yield req
                    yield env.timeout(sample_s)
                    yield env.timeout(learn_s)
                    state["updates"] += 1
                    owed = state["steps"] // target_sync - state["syncs"]
                    for _ in range(owed):
                        yield env.timeout(sync_s)
                    state["syncs"] += owed

    env.process(loop())
    env.run()
    return env.now, state["steps"]


def main() -> None:
    steps = parse_steps(__doc__)
    trace = shipped_trace("dqn_cartpole_uniform.parquet")
    for actors in (1, 4):
        raw = dict(SYSTEM, workload={"env_steps": steps, "actors": actors, "learner": "sync"})
        system = resolve(parse_spec(raw), trace)
        short = simulate(trace, resolve(parse_spec(
            dict(raw, workload=dict(raw["workload"], env_steps=20_000))), trace))
        unit = {p.phase: p.time_s / (p.count or short.env_steps) for p in short.phases
                if p.worker in ("actor", "learner") and not p.phase.startswith("wait")}
        unit["env_reset"] = unit.get("env_reset", 0.0)  # per env step (count 0)
        machine = Machine(trace, system)
        race(f"DQN, {actors} actor(s)", trace, system, steps,
             lambda m=machine, u=unit, a=actors: peer(m, u, steps, a))


if __name__ == "__main__":
    main()
