"""Speed of a data-parallel PPO run over a cluster: 64 DGX H100 nodes (512 H100, NDR
InfiniBand), one learner per GPU (workload.learner_gpus=512), actors spread over every
node, 10,000 minibatch updates of the shipped CartPole actor-learner capture.

    python benchmarks/speed/cluster_rate.py

Prints the simulated updates, the wall time of resolve + simulate, and updates simulated
per wall second; the all-reduce is one closed form per run (rldse.models.collectives), so
the rate is that of the one-box program's bookings.
"""

from __future__ import annotations

import time
from pathlib import Path

from rldse.sim import simulate
from rldse.system import parse_spec
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
NODES, GPUS, UPDATES = 64, 8, 10_000


def main() -> None:
    trace = load_trace(ROOT / "traces" / "actor_learner_cartpole_2.parquet")
    actors = NODES * 8
    # per iteration: actors x 4 envs x 128 steps, in minibatches of 64 (the trace's), 1 epoch
    per_iteration_updates = actors * trace.meta.workload_info["envs_per_actor"] * \
        trace.meta.workload_info["rollout_len"] // 64
    iterations = -(-UPDATES // per_iteration_updates)
    env_steps = iterations * per_iteration_updates * 64
    spec = parse_spec({
        "name": "dgx-h100-x64", "nodes": NODES,
        "cpu": {"preset": "xeon-e5-2698-v4", "sockets": 2},  # a stand-in host CPU,
        "gpu": {"preset": "h100-sxm", "count": GPUS}, "fabric": {"preset": "dgx-h100"},
        "network": {"preset": "ib-ndr"}, "placement": {"act": "cpu", "learn": "gpu"},
        "workload": {"learner_gpus": NODES * GPUS, "actors": actors, "learner": "sync",
                     "epochs": 1, "batch_size": 64, "env_steps": env_steps}})
    t0 = time.perf_counter()
    result = simulate(trace, spec)
    wall_s = time.perf_counter() - t0
    print(f"{NODES} nodes x {GPUS} GPUs, {result.updates:,} updates, {result.env_steps:,} "
          f"env steps: simulated {result.sim_time_s:.4g} s in {wall_s:.3g} s wall "
          f"({result.updates / wall_s:,.0f} updates/s); all-reduce "
          f"{result.breakdown_s.get('allreduce_s', 0.0):.4g} s, network "
          f"{result.breakdown_s.get('network_s', 0.0):.4g} s of the run")


if __name__ == "__main__":
    main()
