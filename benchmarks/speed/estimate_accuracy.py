"""How close every up-front estimate comes to the time of what it estimates: ten long runs
across the commands that can run long (simulate, --bands, search, study run, capture, a
study's learning runs), each estimated by the code path its command uses and then run,
in this process. Prints one row per case, estimate / actual wall time and the ratio (and,
where the estimate has one, its CPU time against the run's), and the worst; the target
is every wall-time ratio within 2x.

- simulate: rldse.sim.budget.estimate (pilots), then the design run under a Meter;
- --bands N: one design's price (rldse.sim.budget.per_run_s) times N, then bands();
- search: rldse.search.cost.search_cost, then the search run to its trials;
- study run: rldse.studies.plan.estimate_studies, then the study run (in a copy);
- capture: the capture's own progress callback projects it once its steps past the
  warm-up have taken a CPU second (rldse.cli.capture.Bounded, rldse.sim.run_cost);
- learning runs: rldse.sim.run_cost.learning_run (a separate probe, as study
  plans price them), then the runs.

Run it twice to see how the estimates hold when the load changes: once as it is, once
with two busy loops beside it (benchmarks/probes/with_busy_loops.sh), and with ``--burst`` to
run two busy loops beside each estimate only, not its run (a neighbour that ran only
while the estimate was made). Each row gives the load average as the case ended.
Capture cases project from their own first steps, so ``--burst`` does not reach them.
``--scale`` multiplies every run's length.

    python benchmarks/speed/estimate_accuracy.py [--scale 1.0] [--only N] [--burst]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rldse.sim.budget import Limits
from rldse.sim.run_cost import tree_cpu_s

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "dgx1_like.yaml"
LONG = Limits(allow_long=True)


@contextlib.contextmanager
def burst():
    """Two busy loops in a session of their own while an estimate is made, stopped before
    its run: a neighbour that ran only then (rldse.host.wall_per_cpu)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                              start_new_session=True) for _ in (1, 2)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


#: what every estimate runs under (--burst: `burst`)
ESTIMATING = contextlib.nullcontext


def _trace(name: str):
    from rldse.trace import load_trace

    return load_trace(ROOT / "traces" / f"{name}.parquet")


def _system(trace, sets: dict, steps: int):
    from rldse.system import load_spec, resolve

    return resolve(load_spec(SPEC, {**sets, "workload.env_steps": steps}), trace)


def simulate_case(name: str, sets: dict, steps: int):
    def case(scale: float) -> tuple[str, float, float]:
        from rldse.sim.budget import Meter, estimate
        from rldse.sim.machine import Machine

        trace = _trace(name)
        system = _system(trace, sets, int(steps * scale))
        with ESTIMATING():
            budget = estimate(trace, system, memory=False)
        t0, c0 = time.perf_counter(), tree_cpu_s()
        machine = Machine(trace, system)
        Meter(machine)
        machine.result(system.workload.program(machine))
        return (f"simulate {name} {sets} {int(steps * scale):,}", budget.wall_s,
                time.perf_counter() - t0, budget.cpu_s, tree_cpu_s() - c0)
    return case


def bands_case(name: str, steps: int, n: int):
    def case(scale: float) -> tuple[str, float, float]:
        from rldse.sim.bands import bands
        from rldse.sim.budget import per_run_s
        from rldse.system import load_spec

        trace = _trace(name)
        spec = load_spec(SPEC, {"workload.env_steps": int(steps * scale)})
        with ESTIMATING():
            est = per_run_s(trace, _system(trace, {}, int(steps * scale))) * n
        t0 = time.perf_counter()
        bands(trace, spec, n, seed=0)
        return f"simulate {name} --bands {n} {int(steps * scale):,}", est, \
            time.perf_counter() - t0, None, None
    return case


def search_case(path: str, trials: int, env_steps: int):
    """The search in ``path`` with its base's env steps set (past the unmetered small
    designs, whose price is an upper end: rldse.search.cost.UNMETERED_RUN_S)."""
    def case(scale: float) -> tuple:
        import yaml

        from rldse.search.cost import search_cost
        from rldse.search.run import run_study
        from rldse.search.study_file import load_study_file

        raw = yaml.safe_load((ROOT / path).read_text())
        raw["trace"] = str((ROOT / path).parent / raw["trace"])
        raw["base"].setdefault("workload", {})["env_steps"] = int(env_steps * scale)
        with tempfile.TemporaryDirectory() as tmp:
            study = Path(tmp) / "search.yaml"
            study.write_text(yaml.safe_dump(raw))
            with ESTIMATING():
                est = search_cost(load_study_file(study), trials, 1, LONG).wall_s
            t0 = time.perf_counter()
            run_study(study, trials=trials, progress=False, priced=True)
            return (f"search {path} --trials {trials}, env_steps {int(env_steps * scale):,}",
                    est, time.perf_counter() - t0, None, None)
    return case


def study_case(name: str):
    def case(scale: float) -> tuple[str, float, float]:
        from rldse.studies import run_study
        from rldse.studies.discovery import find_study
        from rldse.studies.plan import estimate_studies

        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            shutil.copytree(ROOT / "studies" / name, root / "studies" / name,
                            ignore=shutil.ignore_patterns("out"))
            (root / "traces").symlink_to(ROOT / "traces")
            with ESTIMATING():
                ((_, cost),) = estimate_studies([find_study(name, root / "studies")], LONG)
            t0 = time.perf_counter()
            run_study(name, root / "studies", progress=False)
            return f"study run {name}", cost.wall_s, time.perf_counter() - t0, None, None
    return case


def capture_case(workload: str, env_id: str, steps: int, **fields):
    def case(scale: float) -> tuple[str, float, float]:
        from rldse.sim.run_cost import Watch, warm_steps
        from rldse.workloads import capture
        from rldse.workloads.common.base import CaptureConfig

        cfg = CaptureConfig(workload=workload, env_id=env_id, steps=int(steps * scale),
                            **fields)
        seen = []  # what rldse.cli.capture.Bounded checks against its limit
        watch = Watch(cfg.steps, warm_steps(cfg), lambda probe: seen.append(probe.cost(cfg.steps)))
        t0, c0 = time.perf_counter(), tree_cpu_s()
        capture(cfg, watch)
        wall_s, cpu_s = time.perf_counter() - t0, tree_cpu_s() - c0
        nan = float("nan")  # the run ended before its probe did
        return (f"capture {workload} {env_id} {fields} --steps {cfg.steps:,}",
                seen[0].wall_s if seen else nan, wall_s, seen[0].cpu_s if seen else nan, cpu_s)
    return case


def learning_case(replay: str, seeds: int, steps: int):
    def case(scale: float) -> tuple[str, float, float]:
        from rldse.sim.run_cost import learning_run
        from rldse.threads import single_blas_thread
        from rldse.workloads.offpolicy.dqn import DQNConfig, capture_request, train

        cfgs = [DQNConfig(env_id="CartPole-v1", steps=int(steps * scale), seed=s,
                          replay=replay) for s in range(seeds)]
        with ESTIMATING():
            costs = [learning_run(capture_request(c)) for c in cfgs]
        t0, c0 = time.perf_counter(), tree_cpu_s()
        with single_blas_thread():
            for c in cfgs:
                train(c)
        return (f"{seeds} DQN learning runs, {replay} replay, {int(steps * scale):,} steps",
                sum(c.wall_s for c in costs), time.perf_counter() - t0,
                sum(c.cpu_s for c in costs), tree_cpu_s() - c0)
    return case


#: each about 20-60 s on the development host (2 vCPUs, loaded by other sessions)
CASES = [
    simulate_case("actor_learner_cartpole_2", {}, 50_000_000),
    simulate_case("dqn_cartpole_uniform", {}, 30_000_000),
    simulate_case("ddpg_pendulum", {"workload.learner": "sync"}, 20_000_000),
    bands_case("dqn_cartpole_uniform", 2_000_000, 8),
    search_case("studies/examples/cpu_gpu_ratio.yaml", 6, 2_000_000),
    study_case("pearl_mapping"),
    capture_case("dqn", "CartPole-v1", 30_000),
    capture_case("dqn", "CartPole-v1", 20_000, replay="per"),
    capture_case("actor_learner", "CartPole-v1", 150_000),
    learning_case("amper_k", 2, 8_000),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every run's length")
    ap.add_argument("--only", type=int, help="run case N (0-based) alone")
    ap.add_argument("--burst", action="store_true",
                    help="two busy loops beside each estimate only, not its run")
    args = ap.parse_args()
    if args.burst:
        global ESTIMATING
        ESTIMATING = burst
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at the start")
    worst = 1.0
    for i, case in enumerate(CASES):
        if args.only is not None and i != args.only:
            continue
        label, est, actual, est_cpu, cpu = case(args.scale)
        ratio = est / actual
        worst = worst if ratio != ratio else max(worst, ratio, 1 / ratio)  # nan: none
        cpu_text = "" if est_cpu is None else \
            f"; CPU {est_cpu:.3g}/{cpu:.3g} s ({est_cpu / cpu:.2f})"
        print(f"{i}. {label}: estimate {est:.3g} s, actual {actual:.3g} s, ratio "
              f"{ratio:.2f}{cpu_text} (load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"worst ratio {worst:.2f}x (target within 2x); load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at the end")


if __name__ == "__main__":
    main()
