"""Search throughput: trials per minute on a 64-actor system with 1 and 2 worker processes.

The study is the CPU/GPU-ratio example with 64 actors fixed and a wider space (cores,
GPUs, envs per actor, rollout length: 16,384 points), the random sampler and the
estimate off, so nearly every trial is one full simulation of the actor_learner program
and the two runs do the same work. Each run starts from an empty out/ (no cache).
Prints trials, simulations, wall seconds (study open to last trial; outputs excluded)
and trials per minute, and the speed-up of 2 workers. Exits 0 always.

    python benchmarks/speed/search_throughput.py [--trials 60]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import yaml

from rldse.search import run_study

EXAMPLE = Path(__file__).parents[2] / "studies" / "examples" / "cpu_gpu_ratio.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=60)
    args = ap.parse_args()
    body = yaml.safe_load(EXAMPLE.read_text())
    body["trace"] = str((EXAMPLE.parent / body["trace"]).resolve())
    body["base"]["workload"]["actors"] = 64
    body.update(space={"workload.cores": {"int": [1, 64]}, "gpu.count": {"int": [1, 8]},
                       "workload.envs_per_actor": {"int": [1, 4]},
                       "workload.rollout_len": {"int": [32, 256], "step": 32}},
                sampler="random", trials=args.trials, estimate={"prune": False})
    print(f"{os.cpu_count()} CPUs; {args.trials} trials of a 64-actor actor_learner system")
    rates = {}
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "study.yaml"
            path.write_text(yaml.safe_dump(body, sort_keys=False))
            rep = run_study(path, workers=workers, progress=False)
        rates[workers] = rep.trials_per_min
        print(f"{workers} worker(s): {rep.finished_now} trials, {rep.simulated} simulated, "
              f"{rep.cache_hits} cache hits, {rep.elapsed_s:.1f} s, "
              f"{rep.trials_per_min:.1f} trials/min")
    print(f"speed-up with 2 workers: {rates[2] / rates[1]:.2f}x")


if __name__ == "__main__":
    main()
