"""The search space: dotted SystemSpec paths, each with a range and an optional condition.

    workload.actors: {int: [1, 64], log: true}
    cpu.clock_mhz:   {float: [1800, 3500], step: 100}
    gpu.preset:      {choices: [a100-40g, h100-sxm]}
    tcam.arrays:     {int: [64, 4096], log: true, when: {placement.replay: tcam}}

A parameter is the Optuna parameter of the same name, so trials tables, plots and
optuna-dashboard show the SystemSpec path itself. A `when` condition names paths set
earlier in the space or fixed in the base spec; a parameter whose condition does not
hold is not suggested (Optuna's define-by-run conditional spaces), and the spec keeps
its base value there.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from rldse.errors import RldseError
from rldse.system import SystemSpec, parse_spec, set_path

Scalar = bool | int | float | str | None
MAX_GRID = 1_000_000  # values one dimension may enumerate for the grid and bruteforce samplers


@dataclass(frozen=True)
class Dimension:
    path: str
    kind: str  # 'int', 'float' or 'categorical'
    low: float = 0.0
    high: float = 0.0
    step: float | None = None
    log: bool = False
    choices: tuple[Scalar, ...] = ()
    when: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()

    def distribution(self) -> BaseDistribution:
        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log,
                                   step=int(self.step or 1))
        if self.kind == "float":
            return FloatDistribution(self.low, self.high, log=self.log, step=self.step)
        return CategoricalDistribution(self.choices)

    def suggest(self, trial: optuna.Trial) -> Scalar:
        d = self.distribution()
        if isinstance(d, IntDistribution):
            return trial.suggest_int(self.path, d.low, d.high, step=d.step, log=d.log)
        if isinstance(d, FloatDistribution):
            return trial.suggest_float(self.path, d.low, d.high, step=d.step, log=d.log)
        return trial.suggest_categorical(self.path, self.choices)

    def extremes(self) -> list[Scalar]:
        """Values that exercise the whole range when validating against the base spec."""
        if self.kind == "categorical":
            return list(self.choices)
        if self.kind == "float":
            return [self.low, self.high]
        return [int(round(self.low)), int(round(self.low + (self.count() - 1) * self._step()))]

    def _step(self) -> float:
        if self.step is None and self.kind == "float":
            raise ValueError("a float range needs a step to be enumerated")
        return 1.0 if self.step is None else self.step

    def count(self) -> int:
        """How many values the range allows, computed from the range (never enumerated)."""
        if self.kind == "categorical":
            return len(self.choices)
        return int(math.floor((self.high - self.low) / self._step() + 1e-9)) + 1

    def grid_values(self) -> list[Scalar]:
        """Every value the range allows (ints by step, floats by step, all choices); a range
        of more than MAX_GRID values is refused rather than materialised."""
        if self.kind == "categorical":
            return list(self.choices)
        n, step = self.count(), self._step()
        if n > MAX_GRID:
            raise RldseError(f"{n:,} values are too many to enumerate for a grid "
                             f"(at most {MAX_GRID:,}); use a sampler other than grid or "
                             "bruteforce, or a coarser step", where=f"space.{self.path}")
        vals = [self.low + k * step for k in range(n)]
        return [int(round(v)) for v in vals] if self.kind == "int" else vals


class Space:
    """The ordered dimensions of a study, applied to a base spec."""

    def __init__(self, dims: list[Dimension], base_raw: Mapping[str, Any]) -> None:
        self.dims = dims
        self.base_raw = base_raw

    def __len__(self) -> int:
        return len(self.dims)

    def active(self, dim: Dimension, params: Mapping[str, Scalar]) -> bool:
        return all(self.value_at(path, params) in allowed for path, allowed in dim.when)

    def value_at(self, path: str, params: Mapping[str, Scalar]) -> Any:
        """A path's value: the trial's parameter if set, else the base spec's."""
        if path in params:
            return params[path]
        node: Any = self.base_raw
        for key in path.split("."):
            if not isinstance(node, Mapping) or key not in node:
                return None
            node = node[key]
        return node

    def suggest(self, trial: optuna.Trial) -> dict[str, Scalar]:
        params: dict[str, Scalar] = {}
        for dim in self.dims:
            if self.active(dim, params):
                params[dim.path] = dim.suggest(trial)
        return params

    def raw(self, params: Mapping[str, Scalar]) -> dict[str, Any]:
        """The base spec's raw mapping with `params` applied."""
        raw = copy.deepcopy(dict(self.base_raw))
        for path, value in params.items():
            set_path(raw, path, value)
        return raw

    def spec(self, params: Mapping[str, Scalar], where: str) -> SystemSpec:
        return parse_spec(self.raw(params), where=where)

    def grid(self) -> dict[str, list[Scalar]]:
        """The full grid for Optuna's GridSampler (inactive parameters are just not used)."""
        return {d.path: d.grid_values() for d in self.dims}

    def grid_size(self) -> int:
        return math.prod(d.count() for d in self.dims)
