"""Study files (YAML): what to search, checked completely before any trial runs.

    name: cpu-gpu-ratio          # default: the folder's name for study.yaml, else the file stem
    trace: ../../traces/actor_learner.parquet    # paths are relative to this file
    base: system.yaml            # a SystemSpec file, or the spec inline as a mapping
    space:                       # SystemSpec paths → ranges (rldse.search.space), in order
      workload.actors: {int: [1, 64], log: true}
      gpu.count: {int: [1, 8]}
      placement.replay: {choices: [cpu, tcam]}
      tcam.arrays: {int: [64, 4096], log: true, when: {placement.replay: tcam}}
    objectives: [{maximize: steps_per_joule}, {minimize: cost_usd}]
    constraints: ["avg_power_w <= 1500", "cost_usd <= 60000"]   # and every part check
    skip_checks: []              # checks not to apply (tcam_capacity, ...): rldse.search.constraints
    sampler: tpe                 # or {name: nsga2, options: {population_size: 24}, seed: 1}
    seed: 0                      # simulation seed, and the sampler's unless it has its own
    trials: 200                  # budget of finished trials (the grid sampler: the grid)
    estimate: {prune: true, margin: 0.0}   # rldse.search.estimate
    storage: null                # default: the journal file out/journal.log; a SQLite
                                 # file (sqlite:///study.db) stays inside this folder
    presets: [mypresets]         # user preset directories (as --presets), relative to it
    target: {return: 195, smoothing_episodes: 10}   # rldse.sim.target: every point runs
                                 # to the env steps the trace's curve needs to reach it, and
                                 # gets steps_to_target, time_to_target_s, energy_to_target_j
                                 # (cost_to_target_usd with an hourly price in the spec)

Every problem is one line naming the file and the key: `study.yaml: space.gpu.countt:
unknown field`. Space paths are checked by applying each range's extremes to the base
spec and resolving its parts against the trace's host, so a misspelt path or a value the
spec refuses fails here, not in trial 37, and so does a placement choice that no point
can run (`fpga` with no FPGA in the base or the space). Combinations that only some
points break (a GPU placement with `gpu.count: 0`) are left to the trials, which mark
them invalid.

Output goes to `out/` beside the file (`out/<stem>/` when the file is not `study.yaml`,
so several studies can share a folder). Paths resolve against this file's folder
(rldse.paths); a SQLite `storage:` is written, so it must lie inside that folder.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from rldse.errors import RldseError, validation_error
from rldse.models import PART_KINDS, renamed
from rldse.models.kinds import kinds_for
from rldse.paths import study_path
from rldse.search.constraints import Constraint, parse_constraint, spec_value, with_checks
from rldse.search.metrics import TARGET_METRICS, metric_name
from rldse.search.samplers import check_sampler
from rldse.search.space import Dimension, Scalar, Space
from rldse.sim.budget import Limits
from rldse.sim.target import DEFAULT_SMOOTHING_EPISODES, Target, TargetSteps, target_steps
from rldse.strict import UserModel
from rldse.system import (
    CPU_KIND,
    files_beside,
    load_spec,
    parse_spec,
    resolve,
    resolve_parts,
    set_path,
)
from rldse.trace import Trace
from rldse.workloads import open_trace, workload_of
from rldse.yamlfile import read_mapping

DIRECTIONS = ("maximize", "minimize")
_SQLITE = "sqlite:///"


class Range(UserModel):
    """One space entry: exactly one of `int`, `float`, `choices`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    int_: tuple[int, int] | None = Field(None, alias="int")
    float_: tuple[float, float] | None = Field(None, alias="float")
    choices: list[Scalar] | None = None
    step: float | None = Field(None, gt=0)
    log: bool = False
    when: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise ValueError("expected a mapping like {int: [low, high]}, {float: [...]} or "
                             "{choices: [...]}")
        return raw

    @field_validator("int_", "float_", mode="before")
    @classmethod
    def _two_numbers(cls, v: Any) -> Any:
        if v is not None and not (isinstance(v, (list, tuple)) and len(v) == 2):
            raise ValueError("expected two numbers [low, high]")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Range:
        given = [k for k, v in (("int", self.int_), ("float", self.float_),
                                ("choices", self.choices)) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of int: [low, high], float: [low, high] or "
                             f"choices: [...] (got {', '.join(given) or 'none'})")
        if self.choices is not None:
            if not self.choices:
                raise ValueError("empty range: choices is empty")
            if len(set(map(repr, self.choices))) != len(self.choices):
                raise ValueError("choices repeat a value")
            if self.step is not None or self.log:
                raise ValueError("step and log apply to int and float ranges only")
            return self
        low, high = self.int_ or self.float_  # type: ignore[misc]
        if low > high:
            raise ValueError(f"empty range [{low}, {high}]: low is above high")
        if self.log and low <= 0:
            raise ValueError(f"a log range needs low > 0 (got {low})")
        if self.log and self.step is not None:
            raise ValueError("log and step cannot be combined")
        if self.int_ is not None and self.step is not None and self.step != int(self.step):
            raise ValueError(f"an int range needs a whole step (got {self.step})")
        if self.step is not None and low < high and self.step > high - low:
            raise ValueError(f"step {self.step:g} is larger than the range [{low}, {high}]: "
                             f"its only value would be {low} (use a step up to {high - low:g})")
        return self

    def dimension(self, path: str) -> Dimension:
        when = tuple((p, tuple(v) if isinstance(v, list) else (v,)) for p, v in self.when.items())
        if self.choices is not None:
            return Dimension(path, "categorical", choices=tuple(self.choices), when=when)
        kind = "int" if self.int_ is not None else "float"
        low, high = self.int_ or self.float_  # type: ignore[misc]
        return Dimension(path, kind, low=low, high=high, step=self.step, log=self.log, when=when)


class Objective(UserModel):
    """`{maximize: steps_per_joule}` or `{minimize: cost_usd}`."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    direction: Literal["maximize", "minimize"]

    @model_validator(mode="before")
    @classmethod
    def _from_mapping(cls, raw: Any) -> Any:
        if not isinstance(raw, dict) or len(raw) != 1:
            raise ValueError("expected one mapping like {maximize: steps_per_joule}")
        (direction, metric), = raw.items()
        if direction not in DIRECTIONS:
            raise ValueError(f"'{direction}' is not a direction (use maximize or minimize)")
        if not isinstance(metric, str):
            raise ValueError(f"{direction}: expected a metric name, got {metric!r}")
        return {"metric": metric, "direction": direction}

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler) -> dict[str, Any]:
        """The form a file writes (``{maximize: METRIC}``), not the parsed fields."""
        metric = {"type": "string", "description": "a metric: rldse metrics lists them"}
        return {"title": "Objective", "type": "object", "minProperties": 1,
                "maxProperties": 1, "additionalProperties": False,
                "properties": {d: metric for d in DIRECTIONS}}


class SamplerSpec(UserModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "tpe"
    options: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = Field(None, ge=0, le=2**32 - 1, description="default: the study's seed "
                             "(set it to vary the sampler alone: the simulations stay equal)")

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler) -> dict[str, Any]:
        """A file may give the sampler by name alone (``sampler: tpe``)."""
        return {"anyOf": [{"type": "string", "description": "a sampler's name"},
                          handler(core_schema)]}


class EstimateSpec(UserModel):
    """The analytic first look (rldse.search.estimate)."""

    model_config = ConfigDict(extra="forbid")

    prune: bool = Field(True, description="skip the simulation of points the bound rules out")
    margin: float = Field(0.0, ge=0, le=10, description="extra slack on the bound before "
                          "pruning: 0.1 prunes only points 10 % worse than needed")


class TargetSpec(UserModel):
    """`target: {return: 195, smoothing_episodes: 10}` (rldse.sim.target)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    return_: float = Field(alias="return", allow_inf_nan=False)
    smoothing_episodes: int = Field(DEFAULT_SMOOTHING_EPISODES, ge=1, le=10**6)

    @property
    def spec(self) -> Target:
        return Target(self.return_, self.smoothing_episodes)


class StudyFile(UserModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$")
    trace: str
    base: str | dict[str, Any] = Field(default_factory=dict)
    space: dict[str, Range] = Field(min_length=1)
    objectives: list[Objective] = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list)
    skip_checks: list[str] = Field(default_factory=list)  # declared checks not to apply
    sampler: SamplerSpec = SamplerSpec()
    seed: int = Field(0, ge=0, le=2**32 - 1)
    trials: int | None = Field(None, ge=1, le=10**7)
    estimate: EstimateSpec = EstimateSpec()
    storage: str | None = None
    target: TargetSpec | None = None
    presets: list[str] = Field(default_factory=list, description="user preset directories, "
                               "relative to this file (as --presets)")
    figures: bool = Field(True, description="draw figures/ at the end of each run (false: "
                          "a worker that only adds trials to a shared storage, or a batch "
                          "run read from trials.csv, skips matplotlib's seconds per figure)")

    _file: Path = PrivateAttr()
    _storage_url: str | None = PrivateAttr(None)
    _target_steps: TargetSteps | None = PrivateAttr(None)
    _limits: Limits = PrivateAttr(default_factory=Limits)
    _out_dir: Path | None = PrivateAttr(None)  # set by run_study(out_dir=...)
    _trace: Trace = PrivateAttr()
    _space: Space = PrivateAttr()
    _constraints: list[Constraint] = PrivateAttr()

    @field_validator("base", mode="before")
    @classmethod
    def _file_or_mapping(cls, v: Any) -> Any:
        if not isinstance(v, (str, dict)):
            raise ValueError("expected a SystemSpec file name or the spec as a mapping")
        return v

    @field_validator("sampler", mode="before")
    @classmethod
    def _sampler_by_name(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    # ---- resolved by load_study_file -------------------------------------------------
    @property
    def file(self) -> Path:
        return self._file

    @property
    def storage_url(self) -> str | None:
        """`storage:` with a SQLite file's path made absolute (against this file)."""
        return self._storage_url

    @property
    def study_name(self) -> str:
        if self.name:
            return self.name
        return self._file.parent.name if self._file.stem == "study" else self._file.stem

    @property
    def out_dir(self) -> Path:
        """Where its outputs go: out/ beside the file (out/STEM/ unless it is study.yaml),
        or the folder its runner was given."""
        if self._out_dir is not None:
            return self._out_dir
        out = self._file.parent / "out"
        return out if self._file.stem == "study" else out / self._file.stem

    @property
    def loaded_trace(self) -> Trace:
        return self._trace

    @property
    def search_space(self) -> Space:
        return self._space

    @property
    def parsed_constraints(self) -> list[Constraint]:
        return self._constraints

    @property
    def target_steps(self) -> int:
        """Env steps at which the trace's curve reaches `target` (each point runs that many;
        the median over seeds when the trace has several)."""
        return self._target_steps.steps if self._target_steps is not None else 0

    @property
    def limits(self) -> Limits:
        """What one trial's simulation may cost (``run_study(allow_long=...)``); a design
        estimated over them is an invalid trial, not a run."""
        return self._limits

    @property
    def target_spread(self) -> TargetSteps | None:
        """Steps to `target` over the trace's seeds (rldse.sim.target.target_steps)."""
        return self._target_steps

    @property
    def directions(self) -> list[str]:
        return [o.direction for o in self.objectives]

    @property
    def digest(self) -> str:
        """What a stored study must match to be resumed: trace, base, space, goals, seed."""
        body = {"trace": self._trace.digest, "base": self._space.base_raw,
                "space": [repr(d) for d in self._space.dims],
                "objectives": [o.model_dump() for o in self.objectives],
                "constraints": [c.text for c in self._constraints], "seed": self.seed}
        if self.target is not None:  # only then, so studies without one keep their digest
            body["target"] = self.target.model_dump()
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def load_study_file(path: str | Path) -> StudyFile:
    """Read and check a study file; RldseError names the file and the key at fault."""
    path = Path(path)
    where = str(path)
    raw = renamed.study(_read_yaml(path), where)
    try:
        study = StudyFile.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(exc, "", list(StudyFile.model_fields)).within(where) from None
    study._file = path.resolve()
    _use_presets(study, where)
    study._storage_url = _storage_url(study, where)
    study._trace = _load_trace(study, where)
    base_raw = _base_raw(study, where)
    study._space = _space(study, base_raw, where)
    _check_placement_choices(study, where)
    for i, obj in enumerate(study.objectives):
        obj.metric = metric_name(obj.metric, f"{where}: objectives[{i}].{obj.direction}")
    metrics = [o.metric for o in study.objectives]
    if len(set(metrics)) != len(metrics):
        raise RldseError(f"{where}: objectives: a metric appears twice ({', '.join(metrics)})")
    study._constraints = with_checks([parse_constraint(text, f"{where}: constraints[{i}]")
                                      for i, text in enumerate(study.constraints)],
                                     study.skip_checks, f"{where}: skip_checks")
    _check_spec_terms(study, where)
    _check_target(study, where)
    check_sampler(study.sampler.name, study.sampler.options, len(study.objectives),
                  f"{where}: sampler")
    if study.sampler.name == "grid":
        for d in study._space.dims:
            if d.kind == "float" and d.step is None:
                raise RldseError(f"{where}: space.{d.path}: the grid sampler needs a step "
                                 "for a float range")
    return study


def _use_presets(study: StudyFile, where: str) -> None:
    """The file's preset directories join the active ones before its parts resolve."""
    from rldse.models.presets import add_preset_dirs

    dirs = [study.file.parent / d for d in study.presets]
    for i, d in enumerate(dirs):
        if not d.is_dir():
            raise RldseError(f"{where}: presets[{i}]: {study.presets[i]}: no such directory "
                             f"(relative to {study.file.parent})")
    add_preset_dirs(dirs)


def _check_target(study: StudyFile, where: str) -> None:
    """Target metrics need a `target:`; a target the curve never reaches fails here (it is
    the same for every point: equal sample efficiency per env step), and the run's length
    is the target's, so the space and base may not set env_steps."""
    used = [o.metric for o in study.objectives] + [n for c in study.parsed_constraints
                                                  for n in c.names]
    if study.target is None:
        for name in used:
            if name in TARGET_METRICS:
                raise RldseError(f"{where}: '{name}' needs a target return: add "
                                 "target: {return: R} to the study file")
        return
    if "workload.env_steps" in study.search_space.base_raw.get("workload", {}) \
            or any(d.path == "workload.env_steps" for d in study.search_space.dims):
        raise RldseError(f"{where}: workload.env_steps: a target return sets the run's "
                         "length (steps_to_target); leave env_steps unset")
    trace = study.loaded_trace
    workload = workload_of(trace)
    learning = workload.learning_knobs
    base = workload.resolve_knobs(study.search_space.base_raw.get("workload", {}), trace, {}, {})
    captured = workload.resolve_knobs({}, trace, {}, {})
    for knob in learning:
        if getattr(base, knob) is not None and getattr(base, knob) != getattr(captured, knob):
            raise RldseError(f"{where}: base.workload.{knob}: {getattr(base, knob)} changes what "
                             "each learner update sees or when (the capture ran "
                             f"{getattr(captured, knob)}), so the trace's learning curve is "
                             "not this design's")
    for d in study.search_space.dims:
        knob = d.path.removeprefix("workload.")
        if d.path.startswith("workload.") and knob in learning:
            raise RldseError(f"{where}: space.{d.path}: changes what each learner update "
                             "sees or when, so the trace's learning curve is not those "
                             "designs'; a target-return study searches only knobs that keep "
                             "it (parts, placement, cores)")
    try:
        study._target_steps = target_steps(study.loaded_trace, study.target.spec)
    except RldseError as exc:
        raise exc.within(f"{where}: target.return") from None


def _read_yaml(path: Path) -> dict[str, Any]:
    return read_mapping(path, "trace, base, space, objectives, ...")


def _storage_url(study: StudyFile, where: str) -> str | None:
    """A SQLite URL's file resolved against the study file and kept inside its folder
    (SQLAlchemy would take a relative one from the working directory)."""
    url = study.storage
    if url is None or not url.startswith(_SQLITE):
        return url
    file, sep, query = url.removeprefix(_SQLITE).partition("?")
    if not file or file == ":memory:":
        raise RldseError(f"{where}: storage: {url}: expected a database file, such as "
                         "sqlite:///study.db (an in-memory database keeps nothing)")
    try:
        path = study_path(file, study.file.parent, "storage", writes=True)
    except RldseError as exc:
        raise exc.within(where) from None
    return f"{_SQLITE}{path}{sep}{query}"


def _load_trace(study: StudyFile, where: str) -> Trace:
    try:
        return open_trace(study_path(study.trace, study.file.parent, "trace", writes=False))
    except RldseError as exc:
        raise RldseError(f"{where}: trace: {exc}") from None


def _base_raw(study: StudyFile, where: str) -> dict[str, Any]:
    """The base spec, validated, as the mapping the user wrote (unset knobs stay unset, so
    'as in the trace' survives) to set paths on."""
    try:
        if isinstance(study.base, str):
            spec = load_spec(study_path(study.base, study.file.parent, "base", writes=False))
        else:
            raw = copy.deepcopy(study.base)
            spec = parse_spec(files_beside(raw, study.file), where="base")
        resolve(spec, study.loaded_trace)
    except RldseError as exc:
        raise RldseError(f"{where}: base: {str(exc).removeprefix('base: ')}") from None
    return spec.model_dump(mode="json", exclude_unset=True)


def _space(study: StudyFile, base_raw: dict[str, Any], where: str) -> Space:
    dims = [r.dimension(path) for path, r in study.space.items()]
    space = Space(dims, base_raw)
    seen: set[str] = set()
    for dim in dims:
        for path, _ in dim.when:
            if path not in seen and space.value_at(path, {}) is None:
                raise RldseError(f"{where}: space.{dim.path}.when: '{path}' is neither a path "
                                 "earlier in the space nor set in the base spec")
        seen.add(dim.path)
    typical = _typical(space)
    for dim in dims:
        for value in dim.extremes():
            point = dict(typical)
            for path, allowed in dim.when:
                point.setdefault(path, allowed[0])
            point[dim.path] = value
            problem = _point_problem(space, point, study.loaded_trace)
            if problem is not None:  # named by the space's path when it is that path's
                text = problem.message if problem.where in (dim.path, f"--set {dim.path}") \
                    else str(problem)
                raise RldseError(text, where=f"{where}: space.{dim.path}")
    return space


def _check_placement_choices(study: StudyFile, where: str) -> None:
    """A placement choice no point can run is refused here, not left to become invalid
    trials: a part kind that cannot run the role, one the workload's program does not
    place it on, or one the base lacks and no range of the space adds (``fpga.*``; a
    count range up to 0 adds none)."""
    space, trace = study.search_space, study.loaded_trace
    workload = workload_of(trace)
    present = set(space.spec({}, where="base").present())
    added = {d.path.split(".", 1)[0] for d in space.dims
             if not (d.path.endswith(".count") and max(d.extremes()) < 1)}
    for dim in space.dims:
        role = dim.path.removeprefix("placement.")
        if not dim.path.startswith("placement.") or dim.kind != "categorical" \
                or role == "protocol":
            continue
        for choice in dim.choices:
            at = f"{where}: space.{dim.path}: choice '{choice}'"
            kind = PART_KINDS.get(str(choice))
            if kind is None or role not in kind.roles:
                raise RldseError(f"{at}: a {choice} part cannot run {role} (kinds that can: "
                                 f"{', '.join(kinds_for(role))})")
            if (role in workload.placements and not workload.places(role, str(choice))) \
                    or (role not in workload.placements and choice != CPU_KIND):
                raise RldseError(f"{at}: {workload.name} programs never run {role} on "
                                 f"{choice}: every such point would be invalid")
            if choice not in present and choice not in added:
                raise RldseError(f"{at}: the base has no {choice} part and the space adds "
                                 f"none, so every such point would be invalid (add a "
                                 f"'{choice}:' part to the base or a range on {choice}.*, or "
                                 "drop the choice)")


def _typical(space: Space) -> dict[str, Scalar]:
    """One point of the space: every active dimension at its first extreme."""
    point: dict[str, Scalar] = {}
    for dim in space.dims:
        if space.active(dim, point):
            point[dim.path] = dim.extremes()[0]
    return point


def _point_problem(space: Space, point: dict[str, Scalar], trace: Trace) -> RldseError | None:
    """A field-level problem of the spec at `point`, or None. Cross-field problems (a
    placement on a part this point has none of) are the trials' to mark, not errors."""
    raw = space.raw({})
    try:
        for path, value in point.items():
            set_path(raw, path, value)
        spec = parse_spec(raw, where="")
        resolve_parts(spec, trace)
        workload_of(trace).resolve_knobs(spec.workload, trace, {}, {})
    except RldseError as exc:
        return exc
    return None


def _check_spec_terms(study: StudyFile, where: str) -> None:
    """`spec.<path>` names in constraints must exist on a spec of this space."""
    space, trace = study.search_space, study.loaded_trace
    try:  # a typical point, else the base (a point may break a cross-field rule)
        system = resolve(space.spec(_typical(space), where="spec"), trace)
    except RldseError:
        system = resolve(space.spec({}, where="spec"), trace)
    for i, con in enumerate(study.parsed_constraints):
        for name in con.names:
            if name.startswith("spec."):
                spec_value(system, name, f"{where}: constraints[{i}]")
