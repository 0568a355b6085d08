"""Speed of the llm_rl simulation: a 128-GPU step with 8,192 responses of up to 28K tokens
(the verl H20 setting, colocated and async 64:64), one step and 400 steps, through
``rldse.simulate`` as ``rldse simulate`` runs it. Prints the measured seconds and rates; the
targets (one step under 1 s, 400 steps under a minute) are printed beside them,
not asserted (no wall-clock thresholds in tests).

    python benchmarks/speed/llm_rl_speed.py
"""

from __future__ import annotations

import time

from rldse import simulate
from rldse.external import verl
from rldse.system import parse_spec

ROWS = {"colocated 128": dict(mode="colocate sync", gpus=128, rollout_gpus=None,
                              staleness_threshold=None, partial_rollout=None),
        "async 64:64": dict(mode="fully_async_policy", gpus=128, rollout_gpus=64,
                            staleness_threshold=0.5, partial_rollout=True)}


class Row:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def main() -> None:
    trace = verl._trace()
    for name, row in ROWS.items():
        for steps in (1, 400):
            spec = verl.system_for(Row(**row), 2990.0)
            spec["workload"]["steps"] = steps
            simulate(trace, parse_spec(spec, where=""))  # warm: imports, presets
            t0 = time.perf_counter()
            result = simulate(trace, parse_spec(spec, where=""))
            wall = time.perf_counter() - t0
            target = 1.0 if steps == 1 else 60.0
            print(f"{name}: {steps} steps of {result.breakdown_s['step_s']:.1f} s simulated "
                  f"in {wall:.3f} s wall ({steps / wall:,.1f} steps/s; target under "
                  f"{target:g} s: {'met' if wall < target else 'NOT met'})")


if __name__ == "__main__":
    main()
