"""Cost of a streamed ``--timeline`` against a plain simulate, in every program (prints;
not a test).

Each case runs on examples/dgx1_like.yaml (tabular: a CPU-only system) with and without
a timeline streamed to a new file in a temporary folder, alternating, best of
``--repeats``; then with ``--timeline-window`` on 1 % of simulated time in the middle of
the run. Prints both walls, the ratio of the bests (target <= 1.5x) with the spread of the
per-round ratios, and the events and bytes written (a booking made for a worker is two
events: its device lane and its worker's track). Central inference books every env step
of every actor; the off-policy merged paths write one event per worker per tile of
COARSE_STEPS env steps, and every actor chunk and learner update inside a window.

    python benchmarks/speed/sim_speed_timeline.py [--scale 1.0] [--repeats 3] [--only central]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rldse.sim import simulate
from rldse.system import load_spec, parse_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).parents[2]
TARGET = 1.5
CPU_ONLY = {"name": "cpu-only", "cpu": {"preset": "xeon-silver-4215", "sockets": 2}}
#: label -> (trace, --set overrides, env steps at scale 1)
CASES = {
    "actor-learner local": ("actor_learner_cartpole_2", {"workload.inference": "local"},
                            1_000_000),
    "actor-learner central": ("actor_learner_cartpole_2", {"workload.inference": "central"},
                              1_000_000),
    "dqn sync": ("dqn_cartpole_uniform", {"workload.learner": "sync"}, 1_000_000),
    "dqn async": ("dqn_cartpole_uniform", {"workload.learner": "async"}, 1_000_000),
    "tabular": ("tabular_frozenlake", {}, 200_000),
}


def run_case(label: str, scale: float, repeats: int, folder: Path) -> bool:
    name, sets, steps = CASES[label]
    steps = max(1, int(steps * scale))
    trace = load_trace(ROOT / "traces" / f"{name}.parquet")
    sets = {**sets, "workload.env_steps": steps}
    spec = parse_spec({**CPU_ONLY, "workload": {k.split(".")[1]: v for k, v in sets.items()}}) \
        if name.startswith("tabular") else load_spec(ROOT / "examples" / "dgx1_like.yaml", sets)
    system = resolve(spec, trace)
    out = folder / "timeline.json"
    sim_s = simulate(trace, system).sim_time_s  # (and warms the per-trace caches)
    ok = True
    for window in (None, (0.495 * sim_s, 0.505 * sim_s)):
        ok &= _compare(label, steps, trace, system, out, repeats, window)
    return ok


def _compare(label, steps, trace, system, out: Path, repeats: int, window) -> bool:
    walls: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(repeats):
        for streamed in (False, True):
            out.unlink(missing_ok=True)  # a new file, as a first --timeline run writes
            t0 = time.perf_counter()
            simulate(trace, system, timeline=out if streamed else None,
                     timeline_window=window if streamed else None)
            walls[streamed].append(time.perf_counter() - t0)
    events = len(json.loads(out.read_text())["traceEvents"])
    plain, streamed = min(walls[False]), min(walls[True])
    ratio = streamed / plain
    rounds = [t / p for p, t in zip(walls[False], walls[True], strict=True)]
    ok = ratio <= TARGET
    what = "" if window is None else " (window 1%)"
    print(f"{label + what:34} {steps:9,d} steps: plain {plain:7.3f} s, timeline {streamed:7.3f} s, "
          f"{ratio:5.2f}x (rounds {min(rounds):.2f}-{max(rounds):.2f}x) "
          f"{'PASS' if ok else 'FAIL'} against {TARGET}x; {events:,} events, "
          f"{out.stat().st_size / 1e6:.1f} MB", flush=True)
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every case's steps")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=[c.split()[-1] for c in CASES] + list(CASES),
                    help="run the cases whose label ends with (or is) this")
    args = ap.parse_args()
    labels = [c for c in CASES if args.only in (None, c, c.split()[-1])]
    with tempfile.TemporaryDirectory() as tmp:
        results = [run_case(label, args.scale, args.repeats, Path(tmp)) for label in labels]
    print(f"{sum(results)}/{len(results)} within {TARGET}x")


if __name__ == "__main__":
    main()
