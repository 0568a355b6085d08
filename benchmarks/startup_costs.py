"""Fixed costs (prints; not a test): the trace digest of a shipped trace, reading every
preset file, and a short actor-learner simulate (the per-call setup dominates it), each
the best of 5 in this process.

    python benchmarks/startup_costs.py

Run it in a checkout of an older commit (PYTHONPATH=that checkout) to compare.
"""

from __future__ import annotations

import time
from pathlib import Path

from rldse import trace as trace_mod
from rldse.models import registry

TRACE = Path(__file__).parents[1] / "traces" / "actor_learner_cartpole_2.parquet"


def best_ms(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main() -> None:
    t = trace_mod.load_trace(TRACE)
    print(f"trace digest, {len(t.ops):,} ops: {best_ms(lambda: trace_mod._digest(t)):.1f} ms")

    def presets():
        registry._read_kind.cache_clear()
        for path in sorted((Path(registry.__file__).parent / "presets").glob("*.yaml")):
            registry._read_kind(path.stem)

    print(f"every preset file read and validated: {best_ms(presets):.1f} ms")

    from rldse.sim import simulate
    from rldse.system import load_spec
    spec = load_spec(TRACE.parents[1] / "examples" / "dgx1_like.yaml",
                     {"workload.env_steps": 100_000})
    print(f"simulate, 1e5 env steps of {TRACE.name} on dgx1_like: "
          f"{best_ms(lambda: simulate(t, spec)):.0f} ms")


if __name__ == "__main__":
    main()
