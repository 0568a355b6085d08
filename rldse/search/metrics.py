"""Metric names a study may optimise or constrain: the scalars of `Result.metrics()`.

Fixed names come from Result's numeric fields; `util.<device>` and `breakdown.<key>`
depend on the machine and the program, so only their form is checked before a run
(a missing one fails at its first trial, naming the key).
"""

from __future__ import annotations

import re

from rldse.errors import RldseError
from rldse.models import all_checks, renamed
from rldse.models.spec import close_names
from rldse.sim.result import CHECK_PREFIX, Result

#: Result fields that are scalar metrics (what `Result.metrics()` returns by name).
FIXED: tuple[str, ...] = tuple(n for n, f in Result.model_fields.items()
                               if f.annotation in (int, float, bool, int | None, float | None)
                               and n != "seed")

#: Metrics a study has only with a `target:` (rldse.sim.target).
TARGET_METRICS = ("target_return", "target_smoothing_episodes", "steps_to_target",
                  "time_to_target_s", "energy_to_target_j", "cost_to_target_usd",
                  "target_seeds", "target_seeds_reached", "steps_to_target_low",
                  "steps_to_target_high", "time_to_target_s_low", "time_to_target_s_high")

#: Names the design text uses for a metric under another name (a check `x` also reads as
#: `x_ok`, the name study files used before checks were declared by part kinds).
ALIASES = {"power_w": "avg_power_w",
           **{f"{name}_ok": f"{CHECK_PREFIX}{name}" for name in all_checks()}}

_CHECKS = tuple(f"{CHECK_PREFIX}{name}" for name in all_checks())
_DYNAMIC = re.compile(r"^(util\.[a-z]+\d*(:.+)?|breakdown\..+)$")


def metric_name(name: str, where: str) -> str:
    """The canonical metric for `name`, or RldseError naming `where`."""
    name = renamed.metric(name, where)
    name = ALIASES.get(name, name)
    if name in FIXED or name in _CHECKS or _DYNAMIC.match(name):
        return name
    return _unknown(name, where)


def _unknown(name: str, where: str) -> str:
    known = [*FIXED, *_CHECKS]
    raise RldseError(f"{where}: unknown metric '{name}'{close_names(name, known)} "
                     f"(metrics: {', '.join(known)}, util.<device>, breakdown.<part>)")


def metric_value(metrics: dict[str, float], name: str, where: str) -> float:
    """A metric of one Result; RldseError when this program's results lack it. A check
    the result lacks belongs to a part kind the design has none of: it holds."""
    if name not in metrics and name.startswith(CHECK_PREFIX):
        return 1.0
    if name not in metrics:
        have = [k for k in metrics if k.split(".")[0] == name.split(".")[0]] or list(metrics)
        raise RldseError(f"{where}: this workload's results have no metric '{name}' "
                         f"(it has {', '.join(have)})")
    return float(metrics[name])
