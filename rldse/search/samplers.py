"""Optuna's built-in samplers by the names a study file uses, with options checked by name."""

from __future__ import annotations

import importlib.util
import inspect
import warnings
from collections.abc import Callable
from typing import Annotated, Any

import optuna
from pydantic import Field, TypeAdapter, ValidationError

from rldse.errors import RldseError, did_you_mean, validation_error

#: study-file name → sampler class
SAMPLERS: dict[str, Callable[..., optuna.samplers.BaseSampler]] = {
    "tpe": optuna.samplers.TPESampler,
    "nsga2": optuna.samplers.NSGAIISampler,
    "nsga3": optuna.samplers.NSGAIIISampler,
    "random": optuna.samplers.RandomSampler,
    "grid": optuna.samplers.GridSampler,
    "bruteforce": optuna.samplers.BruteForceSampler,
    "qmc": optuna.samplers.QMCSampler,
    "cmaes": optuna.samplers.CmaEsSampler,
    "gp": optuna.samplers.GPSampler,
}
#: samplers that refuse more than one objective
SINGLE_OBJECTIVE = {"cmaes"}
#: packages a sampler imports only when it first samples (not rldse dependencies)
NEEDS = {"qmc": ("scipy",), "cmaes": ("cmaes",), "gp": ("torch", "scipy")}
#: ranges of the numeric options samplers share (Optuna checks few of them itself:
#: TPE takes n_startup_trials=-3 and samples at random for ever)
_Count = Annotated[int, Field(strict=True, ge=0, le=10**9)]
_Positive = Annotated[int, Field(strict=True, ge=1, le=10**9)]
OPTION_TYPES: dict[str, Any] = {
    "n_startup_trials": _Count, "n_ei_candidates": _Positive, "population_size": _Positive,
    "n_ehvi_candidates": _Positive, "warn_independent_sampling": bool,
    "mutation_prob": Annotated[float, Field(ge=0, le=1)] | None,
    "crossover_prob": Annotated[float, Field(ge=0, le=1)],
    "swapping_prob": Annotated[float, Field(ge=0, le=1)],
    "prior_weight": Annotated[float, Field(gt=0, allow_inf_nan=False)],
}
#: arguments the study sets itself
_RESERVED = {"seed", "search_space", "constraints_func"}


def check_sampler(name: str, options: dict[str, Any], objectives: int, where: str) -> None:
    """Fail before any trial on an unknown sampler, option or objective count."""
    if name not in SAMPLERS:
        raise RldseError(f"{where}.name: unknown sampler '{name}' "
                         f"(allowed: {', '.join(SAMPLERS)})")
    if name in SINGLE_OBJECTIVE and objectives > 1:
        raise RldseError(f"{where}.name: '{name}' optimises one objective; this study has "
                         f"{objectives} (use tpe, nsga2, nsga3, random or grid)")
    missing = [m for m in NEEDS.get(name, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise RldseError(f"{where}.name: the {name} sampler needs {', '.join(missing)} "
                         f"(pip install {' '.join(missing)})")
    allowed = [p for p in inspect.signature(SAMPLERS[name]).parameters if p not in _RESERVED]
    for key, value in options.items():
        if key not in allowed:
            raise RldseError(f"{where}.options.{key}: unknown option of the {name} sampler"
                             f"{did_you_mean(key, allowed)} (allowed: {', '.join(allowed)})")
        if key in OPTION_TYPES:
            try:
                TypeAdapter(OPTION_TYPES[key]).validate_python(value)
            except ValidationError as exc:
                raise validation_error(exc, f"{where}.options.{key}") from None


def make_sampler(name: str, options: dict[str, Any], seed: int,
                 grid: Callable[[], dict[str, list]], where: str) -> optuna.samplers.BaseSampler:
    """A seeded sampler; the grid sampler gets the space's full grid (`grid()` is called
    for it alone: other samplers draw from the ranges, which are never enumerated)."""
    kwargs: dict[str, Any] = dict(options, seed=seed)
    if name == "grid":
        kwargs["search_space"] = grid()
    try:
        with warnings.catch_warnings():
            # Optuna flags qmc and bruteforce as experimental: nothing a user can act on
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return SAMPLERS[name](**kwargs)
    except (TypeError, ValueError) as exc:
        raise RldseError(f"{where}.options: {exc}") from None
