"""Cross-configuration fidelity of the actor-learner twin: predict a 2-actor PPO run from
a 1-actor capture.

Each round captures actor_learner on CartPole with 1 actor, predicts 2 actors on 2 cores
with the capture-host replay `rldse check-replay` uses (cpu preset `host`, the trace's own
knobs, here actors=2 and cores=2), then runs 2 actors for real and compares env steps/s
and learner seconds per iteration. Rounds alternate the two captures so host load hits
both alike. It also replays each capture on its own host (`validate`: the program's
structure, with per-op costs as measured), and prints the drift of per-op times between
the two captures of a round: on a shared host the extrapolation error follows it. Prints
case, predicted, measured (wall, and on the CPU basis of crossconfig.py, which
carries the PASS/FAIL against 15 %) and the errors, per round and the medians over rounds;
exits 0 always. The 2-core prediction assumes two cores free for the two
actors; a shared host may not give them (the first line measures it), so the benchmark
also prints the 1-core prediction: the real run should fall between the two.

Measured env steps/s is steps / wall time of the capture (process start-up and the
final transfer of recorded rows included); 'loop' uses first-op start to last-op end.

Start-up and the hand-offs are costed from the processes' CPU time (the actor_learner
package's processes.py); the '(wall rule)' row predicts from the same capture with that
CPU time removed, as a trace from before it is read (their wall time, contention
included). A short capture first pays this process's first imports, which the real runs
after it would not (each round's 1-actor capture would otherwise carry them alone).

    python benchmarks/fidelity/fidelity_actor_learner.py [--steps 20480] [--rounds 3]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time

from crossconfig import dedicated_wall_s, measured_cost_s

from rldse.sim import simulate
from rldse.sim.check_replay import check_replay, host_spec_for
from rldse.system import parse_spec
from rldse.trace import Trace
from rldse.workloads import capture, workload_of
from rldse.workloads.common.base import CaptureConfig

BOUND = 0.15


def run(actors: int, steps: int, seed: int) -> Trace:
    return capture(CaptureConfig(workload="actor_learner", env_id="CartPole-v1", steps=steps,
                                 actors=actors, seed=seed))


def predict(trace: Trace, actors: int, cores: int):
    raw = host_spec_for(trace).model_dump(mode="json")
    raw["workload"].update(actors=actors, cores=cores)
    return simulate(trace, parse_spec(raw, where="fidelity"))


def wall_rule(trace: Trace) -> Trace:
    """``trace`` as one from before the processes' CPU time was recorded (its ops keep
    theirs)."""
    return workload_of(trace).without_cpu_time(trace, rows=False)


def measured(trace: Trace) -> dict[str, tuple[float, float]]:
    """Per quantity: (on the CPU basis of crossconfig.py, from wall time)."""
    ops = trace.ops
    steps = float(ops.loc[ops["phase"] == "env_step", "items"].sum())
    loop = float((ops["start_s"] + ops["dur_s"]).max() - ops["start_s"].min())
    iters = int(trace.meta.workload_info["iterations"])
    learn_wall = float(ops.loc[ops["phase"] == "learn", "dur_s"].sum()) / iters
    wall = trace.meta.wall_time_s
    return {"steps_per_s": (steps / dedicated_wall_s(trace), steps / wall),
            "loop_steps_per_s": (steps / dedicated_wall_s(trace, loop), steps / loop),
            "learn_s_per_iter": (measured_cost_s(trace, ("learn",)) / iters, learn_wall)}


def _spin(n: int = 2_000_000) -> float:
    t0 = time.perf_counter()
    s = 0
    for i in range(n):
        s += i
    return time.perf_counter() - t0


def concurrency() -> tuple[float, float]:
    """Seconds of one busy loop alone, and of each of two run at once (best of 3)."""
    solo = min(_spin() for _ in range(3))
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    with ctx.Pool(2) as pool:
        pair = min(max(pool.map(_spin, [2_000_000] * 2)) for _ in range(3))
    return solo, pair


def drift(one: Trace, two: Trace, phases: tuple[str, ...]) -> float:
    """How much slower the same operations ran in the second capture (host load)."""
    def per_op(t: Trace) -> float:
        rows = t.ops[t.ops["phase"].isin(phases)]
        return float(rows["dur_s"].sum() / rows["items"].sum())
    return per_op(two) / per_op(one)


def line(case: str, meas: tuple[float, float], pred: float, unit: str) -> float:
    """One row: predicted, measured wall and its error, measured on the CPU basis and its
    error (the verdict)."""
    err, err_wall = pred / meas[0] - 1, pred / meas[1] - 1
    verdict = "PASS" if abs(err) <= BOUND else "FAIL"
    print(f"{case:46} {pred:>12.5g} {meas[1]:>12.5g} {100 * err_wall:>+8.1f} % "
          f"{meas[0]:>12.5g} {100 * err:>+8.1f} %  {unit:8} {verdict}")
    return err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20_480)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    solo, pair = concurrency()
    print(f"this host now: one busy Python loop {solo * 1e3:.0f} ms alone, {pair * 1e3:.0f} ms "
          f"each with two at once ({pair / solo:.2f}x; 1.00x = two free cores)")
    print("measured on the CPU basis of crossconfig.py (carries the verdict) and "
          "from wall time; the 'own host' rows are validate's bookkeeping replay, wall on "
          "both sides")
    print(f"{'case':46} {'predicted':>12} {'meas. wall':>12} {'error':>10} "
          f"{'meas. CPU':>12} {'error':>10}  {'unit':8}")
    rows: dict[str, tuple[list[tuple[float, float]], list[float], str]] = {}
    run(1, 512, seed=0)  # this process's first imports (module docstring)

    def case(name: str, meas: tuple[float, float], pred: float, unit: str, r: int) -> None:
        line(f"[{r}] {name}", meas, pred, unit)
        got = rows.setdefault(name, ([], [], unit))
        got[0].append(meas)
        got[1].append(pred)

    for r in range(args.rounds):
        one = run(1, args.steps, seed=r)
        two = run(2, args.steps, seed=r)
        table, _ = check_replay(one)
        total = table.loc["TOTAL (wall)"]
        case("1 actor on its own host: total wall", (total["measured_s"],) * 2,
             total["simulated_s"], "s", r)
        pred = predict(one, actors=2, cores=2)
        m2 = measured(two)
        iterations = int(two.meta.workload_info["iterations"])
        case("2 actors from 1: env steps/s (whole run)", m2["steps_per_s"],
             pred.env_steps_per_s, "steps/s", r)
        case("2 actors from 1: env steps/s (loop)", m2["loop_steps_per_s"],
             pred.env_steps_per_s, "steps/s", r)
        case("2 actors from 1 (wall rule): env steps/s", m2["steps_per_s"],
             predict(wall_rule(one), actors=2, cores=2).env_steps_per_s, "steps/s", r)
        case("2 actors from 1, as if 1 core: env steps/s", m2["steps_per_s"],
             predict(one, actors=2, cores=1).env_steps_per_s, "steps/s", r)
        case("2 actors from 1: learner learn s/iteration", m2["learn_s_per_iter"],
             pred.breakdown_s["learn_s"] / iterations, "s", r)
        table2, _ = check_replay(two)
        total2 = table2.loc["TOTAL (wall)"]
        case("2 actors on their own host: total wall", (total2["measured_s"],) * 2,
             total2["simulated_s"], "s", r)
        print(f"    host drift between the two captures (2-actor / 1-actor mean op time): "
              f"act+env_step {drift(one, two, ('act', 'env_step')):.2f}x, "
              f"learn {drift(one, two, ('learn',)):.2f}x")
    print(f"medians over {args.rounds} rounds (host load changes between captures; the "
          "median of each side is the comparison):")
    for name, (meas, pred, unit) in rows.items():
        line(name, (statistics.median(m[0] for m in meas), statistics.median(m[1] for m in meas)),
             statistics.median(pred), unit)


if __name__ == "__main__":
    main()
