"""What every workload shares: the capture request and turning recorders into a Trace.

The capture request (`CaptureConfig`) is built from the workload registry: the fields
every capture has, plus each registered workload's ``capture_options``."""

from __future__ import annotations

import platform
from collections.abc import Callable
from functools import lru_cache
from importlib import metadata
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from rldse.errors import RldseError, validation_error
from rldse.strict import UserModel
from rldse.workloads import WORKLOADS

if TYPE_CHECKING:  # the CLI builds its capture flags from CaptureConfig: keep it light
    import gymnasium as gym
    import pandas as pd

    from rldse.host import HostFingerprint
    from rldse.trace import Trace
    from rldse.workloads.common.recorder import Recorder

#: Called with the number of environment steps (or transitions) done since the last call.
Progress = Callable[[int], None]


def no_progress(_: int) -> None:
    return None


#: A loop reports progress at most this many steps apart, so a run's length can be
#: projected from its first seconds (rldse.cli.capture.Bounded) however long it is.
PROGRESS_CHUNK_MAX = 2_000


def progress_chunk(total: int) -> int:
    """Steps between progress calls of a ``total``-step loop: about 1 %, at most
    PROGRESS_CHUNK_MAX."""
    return max(1, min(total // 100, PROGRESS_CHUNK_MAX))


class _CaptureRequest(UserModel):
    """The fields every capture request has; `CaptureConfig` adds each workload's own."""

    model_config = ConfigDict(extra="forbid")

    workload: str = Field(description="a registered workload (rldse.workloads.WORKLOADS)")
    env_id: str
    steps: int | None = Field(default=None, gt=0, description="env steps (default per workload)")
    seed: int = Field(default=0, ge=0, lt=2**32, description="random seed")
    options: dict[str, Any] = Field(default_factory=dict, description="workload-specific knobs")

    @field_validator("workload")
    @classmethod
    def _registered(cls, name: str) -> str:
        try:
            WORKLOADS.lookup(name, "workload")
        except RldseError as exc:
            raise ValueError(exc.message) from None
        return name

    @model_validator(mode="after")
    def _applies(self) -> _CaptureRequest:
        """A field set for a workload it does not apply to is refused, never ignored."""
        for name in sorted(self.model_fields_set):
            users = workloads_of_field(name)
            if users is not None and self.workload not in users:
                raise ValueError(f"'{name}' does not apply to {self.workload} (only to "
                                 f"{', '.join(users)})")
        return self


def _workload_fields() -> dict[str, tuple[Any, Any]]:
    """Every registered workload's ``capture_options``, each field marked with the
    workloads that take it (the CLI offers its flag only on their subcommands; setting
    it for another workload is refused). Two workloads may share a field only as the
    same type and Field."""
    fields: dict[str, tuple[Any, Any]] = {}
    users: dict[str, list[str]] = {}
    for workload in WORKLOADS.values():
        for name, (annotation, info) in workload.capture_options.items():
            if name in fields and fields[name] != (annotation, info):
                raise ValueError(f"capture option '{name}' of {workload.name} differs from "
                                 f"{users[name][0]}'s")
            fields[name] = (annotation, info)
            users.setdefault(name, []).append(workload.name)
    return {name: (annotation, FieldInfo.merge_field_infos(
        info, json_schema_extra={"workloads": users[name]})) for name, (annotation, info)
        in fields.items()}


CaptureConfig = create_model("CaptureConfig", __base__=_CaptureRequest, **_workload_fields())
CaptureConfig.__doc__ = "One capture request: `rldse capture WORKLOAD --env ENV ...` as a value."


def workloads_of_field(name: str) -> list[str] | None:
    """The workloads a CaptureConfig field applies to; None: every workload."""
    extra = CaptureConfig.model_fields[name].json_schema_extra
    return list(extra["workloads"]) if isinstance(extra, dict) else None


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
        err = validation_error(exc, "")
        raise RldseError(err.message, where=f"{workload} option '{err.where}'") from None


def make_env(env_id: str, workload: str, action: Literal["discrete", "box"]) -> gym.Env:
    """A gymnasium env with a flat Box observation and ``action``-kind actions (a 1-D Box
    for "box"), or a one-line RldseError: the numpy MLP workloads handle nothing else, and
    a bad env id or space should fail before any capture starts."""
    import gymnasium as gym

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
    from rldse.host import measure as measure_host

    return measure_host()


def library_versions() -> dict[str, str]:
    return dict(_library_versions())


@lru_cache(maxsize=1)
def _library_versions() -> dict[str, str]:
    """Read once per process (importlib.metadata takes ms per package)."""
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
                transitions: pd.DataFrame | None = None,
                load_start: tuple[float, int] | None = None,
                torch_threads: tuple[int, str] | None = None,
                operators: list | None = None) -> Trace:
    """Assemble a Trace from in-process recorders and/or frames sent back by workers.
    ``load_start`` (rldse.host.load_sample as the capture began; the first recorder's by
    default) puts the host's load around the capture in the fingerprint, with
    ``torch_threads`` where given (rldse.threads.TorchThreads.stop: the count and who
    chose it; the built-in captures pin their own and leave it out). ``operators``: those
    of work recorded outside ``recorders`` (rldse.trace.TracedOperator), beside theirs."""
    from rldse.host import CaptureLoad, load_sample
    from rldse.trace import Trace, TraceMeta
    from rldse.workloads.common.recorder import merge_frames

    all_frames = [r.frame() for r in recorders or []] + list(frames or [])
    if overhead_ns is None:
        overhead_ns = recorders[0].overhead_ns if recorders else 0.0
    meta = TraceMeta(
        workload=workload, algorithm=algorithm, env_id=env_id, seed=seed,
        hyperparameters=hyperparameters, workload_info=workload_info,
        episode_returns=[float(x) for x in episode_returns], wall_time_s=wall_time_s,
        recorder_overhead_ns=overhead_ns, library_versions=library_versions(),
        host=host or host_fingerprint(),
        operators=[*(o for r in recorders or [] for o in r.operators()), *(operators or [])],
    )
    trace = Trace(ops=merge_frames(all_frames), meta=meta, transitions=transitions)
    if load_start is None and recorders:
        load_start = recorders[0].load_start
    end = load_sample()
    if load_start is not None and end is not None:
        load = CaptureLoad(loadavg_1m_start=load_start[0], loadavg_1m_end=end[0],
                           runnable_others_start=load_start[1], runnable_others_end=end[1],
                           compute_wall_per_cpu=trace.compute_wall_per_cpu)
        if torch_threads is not None:
            load = load.model_copy(update={"torch_threads": torch_threads[0],
                                           "torch_threads_set_by": torch_threads[1]})
        trace.meta = meta.model_copy(update={"host": meta.host.model_copy(
            update={"load": load})})
    return trace
