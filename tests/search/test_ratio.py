"""Must-show: on the CPU/GPU-ratio space (actors, cores, GPUs of an actor-learner system)
the sampler finds a configuration within 2 % of the exhaustive grid's best steps per
joule, using at most 15 % of the grid's evaluations, for several sampler seeds.

The grid's best comes from simulating every point directly (no search machinery), so
the check does not trust what it checks. The fast test runs the stand-in program on the
example study's space; the slow one runs the real actor_learner program on
studies/examples/cpu_gpu_ratio.yaml (benchmarks/fidelity/search_ratio.py prints the figures).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rldse.search import load_study_file, run_study
from rldse.sim import simulate

EXAMPLE = Path(__file__).parents[2] / "studies" / "examples" / "cpu_gpu_ratio.yaml"
SEEDS = (0, 1, 2)


def grid_best(path: Path) -> tuple[float, int]:
    study = load_study_file(path)
    space = study.search_space
    grid = space.grid()
    best = -math.inf
    for values in itertools.product(*grid.values()):
        spec = space.spec(dict(zip(grid, values, strict=True)), "grid")
        result = simulate(study.loaded_trace, spec, seed=study.seed)
        feasible = result.avg_power_w <= 1500 and result.cost_usd <= 60000 and \
            result.checks["gpu_memory"]
        if feasible:
            best = max(best, result.steps_per_joule)
    return best, space.grid_size()


def sampler_runs(tmp_path: Path, body: dict, budget: int) -> list[tuple[float, int, int]]:
    """(best steps/J, distinct points evaluated, simulations) per sampler seed."""
    out = []
    for seed in SEEDS:
        path = tmp_path / f"seed{seed}" / "study.yaml"
        path.parent.mkdir()
        path.write_text(yaml.safe_dump({**body, "trials": budget, "figures": False,
                                        "sampler": {**body["sampler"], "seed": seed}}))
        report = run_study(path, progress=False)
        table = pd.read_parquet(report.files["trials.parquet"])
        evaluated = table[table["source"].isin(["simulated", "cache"])]
        points = evaluated[list(body["space"])].drop_duplicates()
        out.append((report.best[0]["values"]["steps_per_joule"], len(points), report.simulated))
    return out


def _check(tmp_path: Path, body: dict) -> None:
    oracle = tmp_path / "oracle" / "study.yaml"
    oracle.parent.mkdir()
    oracle.write_text(yaml.safe_dump(body))
    best, size = grid_best(oracle)
    budget = int(0.15 * size)
    for found, points, sims in sampler_runs(tmp_path, body, budget):
        assert found >= 0.98 * best, (found, best)
        assert points <= budget and sims <= budget


def test_sampler_near_grid_best_with_15_percent_of_evaluations_stand_in(tmp_path, trace_file):
    body = yaml.safe_load(EXAMPLE.read_text())
    body["trace"] = str(trace_file)
    body["base"]["placement"] = {"learn": "gpu"}  # the stand-in's actors act on their cores
    body["base"]["workload"] = {"env_steps": 4096}
    _check(tmp_path, body)


@pytest.mark.slow
def test_sampler_near_grid_best_with_15_percent_of_evaluations_actor_learner(tmp_path):
    body = yaml.safe_load(EXAMPLE.read_text())
    body["trace"] = str((EXAMPLE.parent / body["trace"]).resolve())
    _check(tmp_path, body)
