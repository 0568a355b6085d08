"""Speed of the simulated actor-learner loop (rldse.workloads.actor_learner.program).

A 64-actor, 1-GPU system (EPYC 7742, A100 40 GB, learner on the GPU) replays a short
CartPole PPO capture for 100k, 1M and 10M env steps, with local inference (each actor's
policy on its core) and with central batched inference (one server on the GPU). For
each it prints wall time, simulated env steps per wall second, SimPy events (scheduled
events, counted from the environment's event-id counter) per wall second, and that rate
over a bare SimPy timeout loop measured in the same run. Targets: >= 1M sim env steps/s
local, >= 250k central, event ratio >= 0.4.

The program merges events (operations that no other process can observe become one
event, so event counts grow with interactions, not with steps): with local inference one
event per actor wave, with central inference one or two per server batch. Each event then
carries many actor steps, so events/s is low by design while env steps/s is high; the last
two columns show the rate of actor vector steps (the interactions an unmerged simulator
would make one event each) against the bare loop. A linear fit of wall time over the
three sizes separates the fixed cost of a simulate (machine, trace costing) from the
per-step cost.

    python benchmarks/speed/sim_speed_actor_learner.py [TRACE.parquet]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import simpy

from rldse.sim.machine import Machine
from rldse.system import parse_spec
from rldse.trace import Trace, load_trace
from rldse.workloads import capture
from rldse.workloads.actor_learner import program as al
from rldse.workloads.common.base import CaptureConfig

STEPS = (100_000, 1_000_000, 10_000_000)
EXTRA = {"local": (100_000_000,)}  # local waves are so cheap that 10M hides the slope
TARGET_STEPS = {"local": 1e6, "central": 2.5e5}
TARGET_RATIO = 0.4


def bare_simpy_events_per_s(n: int = 1_000_000) -> float:
    env = simpy.Environment()

    def loop():
        for _ in range(n):
            yield env.timeout(1.0)

    env.process(loop())
    t0 = time.perf_counter()
    env.run()
    return n / (time.perf_counter() - t0)


def system(inference: str, steps: int):
    return parse_spec({
        "name": f"64-actors-{inference}",
        "cpu": {"preset": "epyc-7742"},
        "gpu": {"preset": "a100-40g", "count": 1},
        "placement": {"act": "gpu" if inference == "central" else "cpu", "learn": "gpu"},
        "workload": {"actors": 64, "envs_per_actor": 4, "inference": inference,
                     "env_steps": steps},
    })


def one_run(trace: Trace, inference: str, steps: int) -> tuple[float, int, int]:
    """(wall seconds, env steps simulated, SimPy events scheduled) of one simulate."""
    t0 = time.perf_counter()
    m = Machine(trace, system(inference, steps), seed=0)
    outcome = al.program(m)
    m.result(outcome)
    wall = time.perf_counter() - t0
    return wall, outcome.env_steps, next(m.env._eid)


def main() -> None:
    if len(sys.argv) > 1:
        trace = load_trace(sys.argv[1])
    else:
        print("capturing a 1-actor CartPole trace (10,240 steps) ...")
        trace = capture(CaptureConfig(workload="actor_learner", env_id="CartPole-v1",
                                      steps=10_240, actors=1))
        trace.save(Path(tempfile.mkdtemp()) / "al.parquet")
    bare = bare_simpy_events_per_s()
    print(f"bare SimPy timeout loop: {bare:,.0f} events/s")
    print(f"{'inference':9} {'env steps':>11} {'wall s':>8} {'sim steps/s':>13} "
          f"{'events':>9} {'events/s':>10} {'ratio':>6} {'act.steps/s':>12} {'ratio':>6}  verdict")
    for inference in ("local", "central"):
        one_run(trace, inference, 100_000)  # warm caches (imports, numpy) once
        walls, dones = [], []
        for steps in STEPS + EXTRA.get(inference, ()):
            runs = [one_run(trace, inference, steps) for _ in range(3 if steps <= 10**6 else 1)]
            wall, done, events = min(runs)  # best of 3 below 1M steps: the host is shared
            walls.append(wall)
            dones.append(done)
            rate, ev_rate = done / wall, events / wall
            interactions = done / 4 / wall  # actor vector steps (4 envs each) per second
            ok = rate >= TARGET_STEPS[inference]
            print(f"{inference:9} {done:>11,} {wall:>8.3f} {rate:>13,.0f} {events:>9,} "
                  f"{ev_rate:>10,.0f} {ev_rate / bare:>6.3f} {interactions:>12,.0f} "
                  f"{interactions / bare:>6.2f}  "
                  f"steps {'PASS' if ok else 'FAIL'} (>= {TARGET_STEPS[inference]:,.0f}), "
                  f"event ratio {'PASS' if ev_rate / bare >= TARGET_RATIO else 'FAIL'}")
        slope = (walls[-1] - walls[0]) / (dones[-1] - dones[0])
        fixed = walls[0] - slope * dones[0]
        mid = fixed + slope * dones[1]
        print(f"{inference:9} linear fit: wall = {fixed * 1e3:.0f} ms + {slope * 1e9:.0f} ns "
              f"per env step (the 1M-step run: fit {mid:.3f} s, measured {walls[1]:.3f} s)")
    print("ratio = events/s over the bare loop's; act.steps/s ratio = actor vector steps "
          "(the interactions an unmerged simulator makes one event each) per second over "
          "the bare loop's events/s")


if __name__ == "__main__":
    main()
