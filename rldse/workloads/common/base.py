"""What every workload shares: the capture request and turning recorders into a Trace."""

from __future__ import annotations

import platform
from collections.abc import Callable
from functools import lru_cache
from importlib import metadata
from typing import Any, Literal, TypeVar

import gymnasium as gym
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rldse.errors import RldseError
from rldse.host import HostFingerprint
from rldse.host import measure as measure_host
from rldse.trace import Trace, TraceMeta
from rldse.workloads.common.recorder import Recorder, merge_frames

#: Called with the number of environment steps (or transitions) done since the last call.
Progress = Callable[[int], None]


def no_progress(_: int) -> None:
    return None


class CaptureConfig(BaseModel):
    """One capture request: `rldse capture WORKLOAD --env ENV ...` as a value."""

    model_config = ConfigDict(extra="forbid")

    workload: str = Field(description="a registered workload (rldse.workloads.WORKLOADS)")
    env_id: str
    steps: int | None = Field(default=None, gt=0, description="env steps (default per workload)")
    seed: int = 0
    actors: int = Field(default=1, ge=1, le=256)
    replay: Literal["uniform", "per", "amper_k", "amper_fr"] = "uniform"
    algorithm: str | None = Field(default=None, description="tabular: q_learning or sarsa")
    dataset: str | None = Field(default=None, description="tabular offline: SwiftRL-format file")
    agents: int = Field(default=1, ge=1, description="tabular offline: chunks/agents")
    dtype: Literal["fp32", "int32"] = "fp32"
    options: dict[str, Any] = Field(default_factory=dict, description="workload-specific knobs")


    @field_validator("workload")
    @classmethod
    def _registered(cls, name: str) -> str:
        from rldse.workloads import WORKLOADS

        try:
            WORKLOADS.lookup(name, "workload")
        except RldseError as exc:
            raise ValueError(exc.message) from None
        return name


ConfigT = TypeVar("ConfigT", bound=BaseModel)

#: What make_env's ``action`` kinds require, as its error message says it.
_SPACE_NEEDS = {
    "discrete": "a flat Box observation and Discrete actions",
    "box": "flat Box observations and Box actions",
}


def workload_config(model: type[ConfigT], workload: str, cfg: CaptureConfig,
                    fixed: tuple[str, ...], defaults: dict[str, Any] | None = None,
                    **extra: Any) -> ConfigT:
    """``model`` from ``defaults``, then the capture request (env, seed, ``extra``, steps),
    then its options; one shared path so that every workload rejects options the capture
    sets itself (``fixed``) and reports a bad option as the same one-line RldseError."""
    taken = set(cfg.options) & set(fixed)
    if taken:
        raise RldseError(f"{workload} option '{sorted(taken)[0]}' is set by the capture "
                         "itself, not by options")
    values: dict[str, Any] = dict(defaults or {})
    values.update(env_id=cfg.env_id, seed=cfg.seed, **extra)
    values.update(cfg.options)
    if cfg.steps is not None:
        values["steps"] = cfg.steps
    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise RldseError(f"{workload} option '{loc}': {err['msg']}") from None


def make_env(env_id: str, workload: str, action: Literal["discrete", "box"]) -> gym.Env:
    """A gymnasium env with a flat Box observation and ``action``-kind actions (a 1-D Box
    for "box"), or a one-line RldseError: the numpy MLP workloads handle nothing else, and
    a bad env id or space should fail before any capture starts."""
    try:
        env = gym.make(env_id)
    except gym.error.Error as exc:
        raise RldseError(f"env '{env_id}': {exc}") from None
    obs, act = env.observation_space, env.action_space
    act_ok = (isinstance(act, gym.spaces.Discrete) if action == "discrete"
              else isinstance(act, gym.spaces.Box) and len(act.shape) == 1)
    if not (isinstance(obs, gym.spaces.Box) and len(obs.shape) == 1 and act_ok):
        env.close()
        raise RldseError(f"env '{env_id}': {workload} needs {_SPACE_NEEDS[action]}, "
                         f"found {obs} and {act}")
    return env


@lru_cache(maxsize=1)
def host_fingerprint() -> HostFingerprint:
    """This host's fingerprint, measured once per process (about 1 s): the hardware does
    not change between captures made by one process."""
    return measure_host()


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in ("rldse", "numpy", "pandas", "pyarrow", "gymnasium"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "unknown"
    return versions


def build_trace(*, workload: str, algorithm: str, env_id: str, seed: int,
                hyperparameters: dict[str, Any], workload_info: dict[str, Any],
                episode_returns: list[float], wall_time_s: float,
                recorders: list[Recorder] | None = None,
                frames: list[pd.DataFrame] | None = None,
                overhead_ns: float | None = None,
                host: HostFingerprint | None = None,
                transitions: pd.DataFrame | None = None) -> Trace:
    """Assemble a Trace from in-process recorders and/or frames sent back by workers."""
    all_frames = [r.frame() for r in recorders or []] + list(frames or [])
    if overhead_ns is None:
        overhead_ns = recorders[0].overhead_ns if recorders else 0.0
    meta = TraceMeta(
        workload=workload, algorithm=algorithm, env_id=env_id, seed=seed,
        hyperparameters=hyperparameters, workload_info=workload_info,
        episode_returns=[float(x) for x in episode_returns], wall_time_s=wall_time_s,
        recorder_overhead_ns=overhead_ns, library_versions=library_versions(),
        host=host or host_fingerprint(),
    )
    return Trace(ops=merge_frames(all_frames), meta=meta, transitions=transitions)
