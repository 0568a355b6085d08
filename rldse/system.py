"""SystemSpec: the machine and how the workload is laid on it (YAML or Python).

    cpu: {preset: xeon-silver-4215, sockets: 2}      # preset + overrides of its fields
    gpu: {preset: v100-sxm2, count: 8}
    pim: {preset: upmem-p21, dimms: 16}
    am:  {preset: fefet-tcam-64, arrays: 256}
    placement: {act: cpu, learn: gpu, replay: am, q_update: pim}
    workload: {actors: 16, batch_size: 64, learner: sync}

Part fields are validated by the part library (rldse/models), placement and knobs
here; every error is one line naming the field's path and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rldse.errors import RldseError
from rldse.host import HostFingerprint
from rldse.models.registry import load_part
from rldse.models.spec import PartSpec
from rldse.yamlfile import read_mapping


class PartRef(BaseModel):
    """A preset by name plus overrides of any of its fields (checked by the part library)."""

    model_config = ConfigDict(extra="allow")

    preset: str

    def overrides(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class GpuRef(PartRef):
    count: int = Field(default=1, ge=0, le=64, description="GPUs of this preset")


class TableRef(BaseModel):
    """Replay manager and learner as rows of a measured latency table (PEARL's PT.csv).

    The file's path is relative to the spec file (absolute once loaded). The same row for
    both means co-located: the table's co-located (RPLN-) latencies apply, and the two
    run concurrently on that device, as PEARL measured them.
    """

    model_config = ConfigDict(extra="forbid")

    latency_csv: str
    unit: Literal["s", "ms", "us", "ns"] = "ms"
    replay: str = Field(description="table row that runs the replay manager")
    learn: str = Field(description="table row that runs the learner")
    max_w: dict[str, float] = Field(default_factory=dict, description="power per row, W")


class Placement(BaseModel):
    """Which kind of device runs each RL phase (env_step always runs on CPU cores)."""

    model_config = ConfigDict(extra="forbid")

    act: Literal["cpu", "gpu"] = "cpu"
    learn: Literal["cpu", "gpu", "table"] = "cpu"
    replay: Literal["cpu", "gpu", "am", "table"] = "cpu"
    q_update: Literal["cpu", "gpu", "pim"] = "cpu"


class Knobs(BaseModel):
    """Workload knobs; None means 'as in the trace'."""

    model_config = ConfigDict(extra="forbid")

    env_steps: int | None = Field(default=None, ge=1, le=10**10,
                                  description="environment steps to simulate")
    actors: int = Field(default=1, ge=1, le=65_536)
    envs_per_actor: int | None = Field(default=None, ge=1, le=65_536)
    cores: int | None = Field(default=None, ge=1, le=65_536,
                              description="CPU cores given to actors (default: all)")
    inference: Literal["local", "central"] = Field(
        default="local", description="actors run their own policy, or a batched server does")
    batch_size: int | None = Field(default=None, ge=1, le=2**20)
    replay_capacity: int | None = Field(default=None, ge=1, le=2**32)
    learn_every: int | None = Field(default=None, ge=1, le=10**6,
                                    description="env steps per learner update")
    learner: Literal["sync", "async"] = "sync"
    sync_interval: int = Field(default=1, ge=1, le=10**6,
                               description="learner updates between parameter broadcasts")
    rollout_len: int | None = Field(default=None, ge=1, le=10**7)
    transitions: int | None = Field(default=None, ge=1, le=10**10,
                                    description="tabular: dataset size to train on")
    agents: int | None = Field(default=None, ge=1, le=10**7,
                               description="tabular: agents (default one per DPU or core)")
    passes: int | None = Field(default=None, ge=1, le=10**6,
                               description="tabular: total passes over each agent's chunk")
    dtype: Literal["fp32", "int32"] | None = None
    tasklets: int | None = Field(default=None, ge=1, le=24)
    obs_bytes: int | None = Field(default=None, ge=1, le=2**40,
                                  description="bytes per observation (TimeRL-style what-ifs)")
    gpu_swap: bool = Field(default=False,
                           description="swap GPU buffers to host memory instead of OOM")
    epochs: int | None = Field(default=None, ge=1, le=10_000,
                               description="on-policy: passes over each rollout (default: "
                                           "the trace's)")
    resident_steps: int | None = Field(
        default=None, ge=1, le=10**7,
        description="on-policy: rollout steps the learner must hold on its GPU at once "
                    "(default: the whole rollout, as Monte-Carlo returns need; an n-step "
                    "TD objective needs n + 1)")


class SystemSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "system"
    cpu: PartRef = PartRef(preset="host")
    gpu: GpuRef | None = None
    pim: PartRef | None = None
    am: PartRef | None = None
    table: TableRef | None = None
    placement: Placement = Placement()
    workload: Knobs = Knobs()

    @model_validator(mode="after")
    def _placed_parts_exist(self) -> SystemSpec:
        needs = {"gpu": ("act", "learn", "replay", "q_update"), "am": ("replay",),
                 "pim": ("q_update",), "table": ("replay", "learn")}
        for kind, phases in needs.items():
            ref = getattr(self, kind)
            missing = ref is None or (kind == "gpu" and ref.count == 0)
            for phase in phases:
                if getattr(self.placement, phase) == kind and missing:
                    raise ValueError(f"placement.{phase} is '{kind}' but the system has no "
                                     f"{kind} (add a '{kind}:' part)")
        if (self.placement.replay == "table") != (self.placement.learn == "table"):
            raise ValueError("placement.replay and placement.learn: a measured table gives "
                             "both replay manager and learner, or neither ('table' for both)")
        return self

    @property
    def digest(self) -> str:
        """Content digest: a table's file counts by its bytes, not by where it lies."""
        data = self.model_dump(mode="json")
        if self.table is not None:
            path = Path(self.table.latency_csv)
            data["table"]["latency_csv"] = (hashlib.sha256(path.read_bytes()).hexdigest()
                                            if path.is_file() else path.name)
        text = json.dumps(data, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def parts(self, host: HostFingerprint) -> dict[str, PartSpec]:
        """Resolve every present part to its validated spec (errors name `system.<kind>.<field>`)."""
        out: dict[str, PartSpec] = {}
        for kind in ("cpu", "gpu", "pim", "am"):
            ref = getattr(self, kind)
            if ref is None or (kind == "gpu" and ref.count == 0):
                continue
            out[kind] = load_part(kind, ref.preset, host=host, where=f"system.{kind}",
                                  **ref.overrides())
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json", exclude_defaults=False),
                              sort_keys=False)


def set_path(raw: dict[str, Any], dotted: str, value: Any) -> None:
    """Apply `a.b.c=value` to a raw spec dict, creating intermediate mappings."""
    node = raw
    keys = dotted.split(".")
    for key in keys[:-1]:
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        elif not isinstance(child, dict):
            raise RldseError(f"--set {dotted}: '{key}' is a value, not a section")
        node = child
    node[keys[-1]] = value


def parse_spec(raw: dict[str, Any], where: str = "system") -> SystemSpec:
    try:
        return SystemSpec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        ctx = err.get("ctx") or {}
        bounds = ", ".join(f"{k} {v}" for k, v in ctx.items() if k in ("ge", "le", "gt", "lt"))
        if bounds:
            msg += f" (allowed: {bounds})"
        return _raise(f"{where}: {loc + ': ' if loc else ''}{msg}")


def _raise(msg: str) -> SystemSpec:
    raise RldseError(msg)


def load_spec(path: str | Path, sets: dict[str, Any] | None = None) -> SystemSpec:
    """Read a SystemSpec YAML file, apply `--set` overrides, validate."""
    path = Path(path)
    raw = read_mapping(path, "sections cpu, gpu, pim, am, table, placement, workload")
    for dotted, value in (sets or {}).items():
        set_path(raw, dotted, value)
    table = raw.get("table")
    if isinstance(table, dict) and isinstance(table.get("latency_csv"), str):
        table["latency_csv"] = str((path.parent / table["latency_csv"]).resolve())
    return parse_spec(raw, where=str(path))
