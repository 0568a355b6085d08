"""Speed of the tabular twin: SwiftRL-style offline Q-learning on 2,000 UPMEM DPUs.

Simulates 1M, 10M and 100M transitions (one pass; the cost should stay flat, since a
round of all agents is one event whatever the dataset size), then 10 to 10,000 rounds
(the cost should grow linearly with rounds), and prints for each: wall time, simulated
transitions per wall second, SimPy events, events per wall second, and that rate as a
fraction of a bare SimPy timeout loop measured in the same run.

    python benchmarks/speed/sim_speed_tabular.py

The trace is a small capture (FrozenLake, 10k transitions, 4 agents); only its shape
(states, actions, work per transition) matters on DPUs.
"""

from __future__ import annotations

from pathlib import Path
from time import perf_counter

import simpy

from rldse.sim.machine import Machine
from rldse.system import parse_spec
from rldse.trace import Trace
from rldse.workloads.common.base import CaptureConfig
from rldse.workloads.tabular import program as tabular
from rldse.workloads.tabular import train

DATASET = Path("/work/shared/data/swiftrl/FrozenLake_trajectories_10k.txt")


def bare_simpy_events_per_s(n: int = 200_000) -> float:
    """One process yielding n timeouts: SimPy's own ceiling on this host."""
    env = simpy.Environment()

    def loop():
        for _ in range(n):
            yield env.timeout(1.0)

    env.process(loop())
    t0 = perf_counter()
    env.run()
    return n / (perf_counter() - t0)


def timed_run(trace: Trace, transitions: int, passes: int) -> tuple[float, int, float]:
    """(wall seconds, events scheduled, simulated seconds) of one simulate-equivalent run:
    build the Machine, run the program, build the Result."""
    spec = parse_spec({"cpu": {"preset": "xeon-silver-4215", "sockets": 2},
                       "pim": {"preset": "upmem-p21"}, "placement": {"q_update": "pim"},
                       "workload": {"transitions": transitions, "agents": 2000,
                                    "passes": passes, "dtype": "int32"}})
    t0 = perf_counter()
    m = Machine(trace, spec, seed=0)
    schedule, count = m.env.schedule, [0]

    def counting(*args, **kwargs):
        count[0] += 1
        return schedule(*args, **kwargs)

    m.env.schedule = counting
    result = m.result(tabular.program(m))
    return perf_counter() - t0, count[0], result.sim_time_s


def main() -> None:
    trace = train.capture(CaptureConfig(workload="tabular", env_id="auto",
                                          dataset=str(DATASET), agents=4))
    timed_run(trace, 10_000, 1)  # warm caches and imports
    bare = bare_simpy_events_per_s()
    print(f"bare SimPy timeout loop: {bare:,.0f} events/s")
    print(f"{'transitions':>12s} {'rounds':>7s} {'wall_s':>8s} {'sim_s':>9s} "
          f"{'transitions/wall_s':>19s} {'events':>7s} {'events/s':>10s} {'vs bare':>8s}")
    for transitions, passes in ((1_000_000, 1), (10_000_000, 1), (100_000_000, 1),
                                (1_000_000, 10), (1_000_000, 1_000), (1_000_000, 10_000)):
        wall, events, sim_s = timed_run(trace, transitions, passes)
        rate = events / wall
        print(f"{transitions:12,d} {passes:7,d} {wall:8.4f} {sim_s:9.4g} "
              f"{transitions * passes / wall:19,.0f} {events:7,d} {rate:10,.0f} "
              f"{rate / bare:8.1%}")
        per_round = wall / passes
    print(f"per round at 10,000 rounds: {per_round * 1e6:,.0f} µs of wall time")


if __name__ == "__main__":
    main()
