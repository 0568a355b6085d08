"""The search's sampler against the exhaustive grid on the CPU/GPU-ratio space.

Runs the study (default studies/examples/cpu_gpu_ratio.yaml: actors, cores and GPUs of
an actor-learner PPO system, 256 points, the real actor_learner program) once with the
grid sampler and the estimate off (every point simulated: the exhaustive grid), then
with its own sampler (TPE) under a budget of 15 % of the grid for several sampler
seeds (the simulations, seeded by the study, stay the same). Prints, per seed, the best
feasible steps per joule found, its share of the grid's best, trials, simulations run
and distinct points evaluated (simulated or from the cache) as a share of the grid, and
PASS when within 2 % using at most 15 %. Exits 0 always.

    python benchmarks/fidelity/search_ratio.py [--study FILE] [--seeds 5] [--share 0.15]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from rldse.search import load_study_file, run_study

EXAMPLE = Path(__file__).parents[2] / "studies" / "examples" / "cpu_gpu_ratio.yaml"


def write(folder: Path, body: dict) -> Path:
    folder.mkdir(parents=True)
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", type=Path, default=EXAMPLE)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--share", type=float, default=0.15, help="budget as a share of the grid")
    args = ap.parse_args()
    body = yaml.safe_load(args.study.read_text())
    body["trace"] = str((args.study.parent / body["trace"]).resolve())
    metric = "steps_per_joule"
    grid_size = load_study_file(args.study).search_space.grid_size()
    budget = int(args.share * grid_size)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        grid = run_study(write(Path(tmp) / "grid", {**body, "sampler": "grid", "trials": None,
                                                    "estimate": {"prune": False}}),
                         progress=False)
        grid_s = time.perf_counter() - t0
        best = grid.best[0]["values"][metric]
        print(f"{args.study.name}: grid of {grid_size} points, {grid.simulated} simulated in "
              f"{grid_s:.0f} s; best {metric} {best:.4g} at {grid.best[0]['params']}")
        print(f"sampler {body['sampler']}, budget {budget} trials ({args.share:.0%} of the grid)")
        print(f"{'seed':>4} {'best':>9} {'of grid':>8} {'trials':>6} {'sims':>5} {'points':>6} "
              f"{'of grid':>8} {'time s':>7}  verdict  params")
        for seed in range(args.seeds):
            sampler = body["sampler"] if isinstance(body["sampler"], dict) else \
                {"name": body["sampler"]}
            t0 = time.perf_counter()
            rep = run_study(write(Path(tmp) / f"seed{seed}",
                                  {**body, "trials": budget, "sampler": {**sampler, "seed": seed}}),
                            progress=False)
            took = time.perf_counter() - t0
            table = pd.read_parquet(rep.files["trials.parquet"])
            points = len(table[table["source"].isin(["simulated", "cache"])]
                         [list(body["space"])].drop_duplicates())
            found = rep.best[0]["values"][metric]
            ok = found >= 0.98 * best and points <= budget and rep.simulated <= budget
            print(f"{seed:>4} {found:>9.4g} {found / best:>8.2%} {rep.finished_now:>6} "
                  f"{rep.simulated:>5} {points:>6} {points / grid_size:>8.1%} {took:>7.1f}  "
                  f"{'PASS' if ok else 'FAIL':7}  {rep.best[0]['params']}")


if __name__ == "__main__":
    main()
