"""The fast engine against the reference engine (issue 25) on contended configurations of
the three program families: more actors than cores, replay and learner on one GPU, central
inference beside the learner, more tabular workers than cores. Per-op costs are the
trace's own rows (cycled from a seeded start), not their means. Prints, per configuration,
every compared metric: the fast value, the reference value and their difference.

    PYTHONPATH=. python benchmarks/reference_agreement.py [--scale K]

``--scale`` multiplies every configuration's env_steps (default 1: the sizes
tests/sim/test_reference.py runs; its slow variant runs --scale 4).
"""

from __future__ import annotations

import argparse
import sys
import time

from rldse.sim.agreement import TOLERANCE, agreement
from rldse.system import parse_spec
from rldse.trace import load_trace

DGX = {"cpu": {"preset": "xeon-e5-2698-v4", "sockets": 2}, "gpu": {"preset": "v100-sxm2"}}
SMALL = {"cpu": {"preset": "epyc-7742", "cores": 4}}  # a CPU of 4 cores, actors beyond
ONE_GPU = {"cpu": {"preset": "xeon-e5-2698-v4", "cores": 4}, "gpu": {"preset": "v100-sxm2"}}

#: name -> (trace, system, env_steps at scale 1)
CONFIGS: dict[str, tuple[str, dict, int]] = {
    # off-policy: DQN (PER and uniform) and DDPG
    "dqn-per replay+learn on one V100, async": (
        "dqn_cartpole_per", {**DGX, "placement": {"act": "cpu", "learn": "gpu", "replay": "gpu"},
                             "workload": {"learner": "async"}}, 6000),
    "dqn-per 8 actors on 2 cores, async": (
        "dqn_cartpole_per", {**SMALL, "placement": {"act": "cpu", "learn": "cpu",
                                                    "replay": "cpu"},
                             "workload": {"learner": "async", "actors": 8, "cores": 2}}, 6000),
    "dqn-per 8 actors on 2 cores, sync": (
        "dqn_cartpole_per", {**SMALL, "placement": {"act": "cpu", "learn": "cpu",
                                                    "replay": "cpu"},
                             "workload": {"learner": "sync", "actors": 8, "cores": 2}}, 6000),
    "dqn-uniform act+learn+replay on one V100, 6 actors, async": (
        "dqn_cartpole_uniform", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu",
                                                          "replay": "gpu"},
                                 "workload": {"learner": "async", "actors": 6}}, 6000),
    "dqn-uniform act on V100 beside learner, sync, 6 actors on 2 cores": (
        "dqn_cartpole_uniform", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu",
                                                          "replay": "cpu"},
                                 "workload": {"learner": "sync", "actors": 6, "cores": 2}},
        6000),
    "ddpg replay+learn on one V100, 4 actors, async": (
        "ddpg_pendulum", {**ONE_GPU, "placement": {"act": "cpu", "learn": "gpu",
                                                   "replay": "gpu"},
                          "workload": {"learner": "async", "actors": 4}}, 4000),
    "ddpg 6 actors on 2 cores, sync": (
        "ddpg_pendulum", {**SMALL, "placement": {"act": "cpu", "learn": "cpu", "replay": "cpu"},
                          "workload": {"learner": "sync", "actors": 6, "cores": 2}}, 4000),
    # actor-learner PPO
    "ppo 8 actors on 2 cores, local inference, sync": (
        "actor_learner_cartpole_2", {**SMALL, "placement": {"act": "cpu", "learn": "cpu"},
                                     "workload": {"actors": 8, "cores": 2}}, 16384),
    "ppo 8 actors on 3 cores, local inference, async": (
        "actor_learner_cartpole_2", {**SMALL, "placement": {"act": "cpu", "learn": "cpu"},
                                     "workload": {"actors": 8, "cores": 3,
                                                  "learner": "async"}}, 16384),
    "ppo central inference beside the learner on one V100, sync": (
        "actor_learner_cartpole_2", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu"},
                                     "workload": {"actors": 8, "inference": "central"}},
        16384),
    "ppo central inference beside the learner on one V100, async": (
        "actor_learner_cartpole_2", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu"},
                                     "workload": {"actors": 8, "inference": "central",
                                                  "learner": "async"}}, 16384),
    "ppo central inference on a CPU core, 8 actors on 2 cores": (
        "actor_learner_cartpole_2", {**SMALL, "placement": {"act": "cpu", "learn": "cpu"},
                                     "workload": {"actors": 8, "cores": 2,
                                                  "inference": "central"}}, 16384),
    "pong ppo 6 actors on 2 cores, learner on a V100": (
        "pong_ppo", {**ONE_GPU, "placement": {"act": "cpu", "learn": "gpu"},
                     "workload": {"actors": 6, "cores": 2}}, 3072),
    # tabular
    "tabular offline 7 agents, 3 workers on 2 cores": (
        "tabular_taxi_offline_7", {**SMALL, "placement": {"q_update": "cpu"},
                                   "workload": {"cores": 2}}, 0),
    "tabular online taxi (one agent)": (
        "tabular_taxi", {**SMALL, "placement": {}}, 4000),
}


def system(raw: dict, env_steps: int, scale: int):
    wl = dict(raw.get("workload", {}))
    if env_steps:
        wl["env_steps"] = env_steps * scale
    return parse_spec({"name": "agreement", **raw, "workload": wl})


def run(name: str, scale: int = 1, seed: int = 0):
    trace, raw, steps = CONFIGS[name]
    return agreement(load_trace(f"traces/{trace}.parquet"), system(raw, steps, scale), seed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=1)
    args = ap.parse_args()
    print(f"fast engine against the reference engine; tolerance {TOLERANCE:.0%}; "
          f"env_steps x {args.scale}")
    print(f"{'configuration':64s} {'metric':22s} {'fast':>12s} {'reference':>12s} "
          f"{'fast/ref-1':>11s}")
    worst = 0.0
    for name in CONFIGS:
        t0 = time.perf_counter()
        a = run(name, args.scale)
        for key, err in a.errors.items():
            flag = "" if abs(err) <= TOLERANCE else "  OVER"
            print(f"{name:64s} {key:22s} {a.fast[key]:12.6g} {a.reference[key]:12.6g} "
                  f"{err:+11.4%}{flag}")
            worst = max(worst, abs(err))
        print(f"{'':64s} ({time.perf_counter() - t0:.1f} s wall, both engines)")
    print(f"worst |fast/ref-1| over {len(CONFIGS)} configurations: {worst:.4%}")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
