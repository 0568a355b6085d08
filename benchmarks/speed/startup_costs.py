"""Fixed costs (prints; not a test), all measured in this one run:

- CLI start-up: the median wall time of 5 fresh processes per light command (`--version`,
  `--help`, `capture dqn --help`, `metrics`, `spec schema`, `parts list`), next to a bare
  interpreter's; the heavy libraries each loaded (none expected: tests/cli/test_imports.py
  checks it); and what importing each heavy library alone costs a fresh process, which is
  what a command would pay again if one crept back onto its path;
- in this process, the best of 5: the trace digest of a shipped trace, reading every
  preset file, and a short actor-learner simulate (the per-call setup dominates it); and
  one host fingerprint (``rldse.host.measure``, which every capture runs; about 2 s).

    python benchmarks/speed/startup_costs.py [--runs 5]

Run it in a checkout of an older commit (PYTHONPATH=that checkout) to compare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).parents[2]
TRACE = ROOT / "traces" / "actor_learner_cartpole_2.parquet"
HEAVY = ("pandas", "pyarrow", "gymnasium", "torch", "optuna", "matplotlib", "seaborn",
         "scipy")
COMMANDS = (["--version"], ["--help"], ["capture", "--help"], ["capture", "dqn", "--help"],
            ["metrics"], ["spec", "schema"], ["parts", "list"])
#: Runs ``rldse ARGV`` silenced and prints the heavy libraries it left in sys.modules.
_PROBE = """
import contextlib, io, json, sys
from rldse.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[2:])
    except SystemExit:
        pass
print(json.dumps([m for m in json.loads(sys.argv[1]) if m in sys.modules]))
"""


def median_wall_ms(argv: list[str], runs: int) -> float:
    """Median wall time of ``argv`` as a fresh process, output discarded."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                       cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def heavy_loaded(args: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(HEAVY), *args],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return json.loads(out.splitlines()[-1])


def best_ms(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def cli_costs(runs: int) -> None:
    bare = median_wall_ms([sys.executable, "-c", "pass"], runs)
    print(f"CLI start-up, median of {runs} fresh processes (bare interpreter {bare:.0f} ms):")
    cli = median_wall_ms([sys.executable, "-c", "import rldse.cli"], runs)
    print(f"  import rldse.cli{'':<21}{cli:6.0f} ms  (+{cli - bare:.0f} over the interpreter)")
    for args in COMMANDS:
        ms = median_wall_ms([sys.executable, "-m", "rldse.cli", *args], runs)
        heavy = ", ".join(heavy_loaded(args)) or "none"
        print(f"  rldse {' '.join(args):<31}{ms:6.0f} ms  heavy libraries loaded: {heavy}")
    print(f"each heavy library imported alone, median of {runs} fresh processes, minus the "
          "bare interpreter:")
    for name in HEAVY:
        try:
            ms = median_wall_ms([sys.executable, "-c", f"import {name}"], runs)
        except subprocess.CalledProcessError:
            print(f"  {name:<12} not installed")
            continue
        print(f"  {name:<12}{ms - bare:6.0f} ms")


def in_process_costs() -> None:
    from rldse import trace as trace_mod
    from rldse.models import presets

    t = trace_mod.load_trace(TRACE)
    print(f"trace digest, {len(t.ops):,} ops: {best_ms(lambda: trace_mod._digest(t)):.1f} ms")

    def read_presets():
        presets._read_kind.cache_clear()
        for path in sorted((Path(presets.__file__).parent / "presets").glob("*.yaml")):
            presets._read_kind(path.stem)

    print(f"every preset file read and validated: {best_ms(read_presets):.1f} ms")

    from rldse.sim import simulate
    from rldse.system import load_spec
    spec = load_spec(ROOT / "examples" / "dgx1_like.yaml", {"workload.env_steps": 100_000})
    print(f"simulate, 1e5 env steps of {TRACE.name} on dgx1_like: "
          f"{best_ms(lambda: simulate(t, spec)):.0f} ms")
    from rldse.host import measure

    t0 = time.perf_counter()
    measure()
    print(f"host fingerprint (rldse.host.measure, once): {time.perf_counter() - t0:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per command")
    args = ap.parse_args()
    cli_costs(args.runs)
    in_process_costs()


if __name__ == "__main__":
    main()
