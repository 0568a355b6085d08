"""Workload families as registered plug-ins: the one place that knows which workloads exist.

A family is a package here (``tabular/``, ``offpolicy/``, ``actor_learner/``) whose
``__init__`` registers one `Workload` per capture it offers (the off-policy family: dqn
and ddpg), naming everything the rest of rldse asks of it:

- ``capture_options``: the capture request's fields only it takes (``CaptureConfig``,
  ``rldse capture NAME --FLAG``), and ``config``: its real loop's options (``--set``);
- ``knobs``: simulate-time settings (``workload:`` in a SystemSpec), every one "as in the
  trace" unless set; a knob the family does not use is refused; ``worker_knob``: the one
  that counts its workers (budget pilots cap it), ``host_knobs``: the workload_info
  entries ``rldse check-replay`` replays as knobs;
- ``info``: the typed ``workload_info`` its capture writes and its program reads
  (``rldse.system.ResolvedSystem.info``);
- ``placements``: the roles its program places and the forms it runs them in
  (rldse.models.kinds.Runs; "*": any kind that can run the role); ``sides``: which side of the loop runs each phase, and where (the
  search's analytic bound, rldse.search.estimate);
- ``recording``: how a user's own loop (rldse.recording) becomes its trace, if it can;
- ``capture(cfg, progress)`` and ``program(machine)``, in modules imported when first
  called: the real loop never imports the simulator, nor the program the real loop.

Families are found, not listed: every package here but ``common/`` is imported when this
module is, in name order, and registers itself. The CLI's choices and help, study-file
validation, recording, the engine and the search read this registry; ``common/`` holds the
real-loop pieces families share (recorder, capture helpers, Atari environments). Adding a
family is one package: docs/extending-families.md.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from rldse.errors import RldseError, did_you_mean, validation_error
from rldse.models.kinds import PART_KINDS, Runs
from rldse.plugins import Registry
from rldse.strict import UserModel

if TYPE_CHECKING:
    from rldse.trace import Trace


#: Field marker of a knob that changes what a learner update sees or when (``learning_knob``).
LEARNING = {"learning": True}


def learning_knob(**field: Any) -> Any:
    """A knob Field that changes the learning itself (batch per update, epochs, update
    rate, replay, staleness, network): a design that sets it differently from the trace
    has another learning curve than the captured one, so no time-to-target follows from
    the trace (``rldse.sim.target.check_same_learning``)."""
    return Field(json_schema_extra=LEARNING, **field)


class Knobs(UserModel):
    """Knobs every family has. None: as in the trace (or, where the trace cannot say, the
    system's: all its cores)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env_steps: int | None = Field(default=None, ge=1, le=10**10,
                                  description="environment steps to simulate")
    cores: int | None = Field(default=None, ge=1, le=65_536,
                              description="CPU cores the workers get (default: all)")


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):  # pydantic takes True as 1; JSON's true is no count
        raise ValueError("expected a whole number, not a boolean")
    return value


#: workload_info's counts: whole numbers (never booleans) in a range a run can have; a
#: count that also sets a knob is held to the knob's tighter range by `Workload.check`
Count = Annotated[int, BeforeValidator(_not_bool), Field(ge=1, le=2**40)]
#: counts that may be zero (learning starts, bytes of an optional part)
Count0 = Annotated[int, BeforeValidator(_not_bool), Field(ge=0, le=2**40)]
#: a network's layer widths, input to output
Layers = Annotated[list[Annotated[int, BeforeValidator(_not_bool), Field(ge=1, le=2**20)]],
                   Field(min_length=2, max_length=66)]
#: an optional network's widths: empty where there is none (a one-network on-policy script)
OptionalLayers = Annotated[list[Annotated[int, BeforeValidator(_not_bool),
                                          Field(ge=1, le=2**20)]], Field(max_length=66)]


class Info(UserModel):
    """Base of a family's typed workload_info: keys it does not name are kept, not read."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    def notes(self) -> list[str]:
        """How the simulator reads this trace where it lacks something newer captures
        record, one line each (``rldse trace info`` prints them)."""
        return []


#: Side of the loop a phase runs on, and where: a placement role, or "cpu" (env steps).
Side = tuple[Literal["actor", "learner"], str]
#: The sides of an actor-learner loop's phases, as the search's bound reads them: env
#: steps on CPU cores, acting where ``act`` is placed, the learner's phases where theirs
#: are. A family whose loop differs registers its own.
SIDES: dict[str, Side] = {
    "env_step": ("actor", "cpu"), "env_reset": ("actor", "cpu"), "act": ("actor", "act"),
    "learn": ("learner", "learn"), "replay_add": ("learner", "replay"),
    "replay_sample": ("learner", "replay"), "replay_update": ("learner", "replay"),
    "q_update": ("learner", "q_update")}


@dataclass(frozen=True)
class Recordable:
    """How a user's own training loop (``rldse.recording(..., loop=LOOP)``) becomes a
    trace of this workload. Several workloads may share a loop; the recording's networks
    pick one (``rldse.recording.loops``)."""

    loop: str  # the recording's ``loop=``
    networks: tuple[str, ...]  # the roles its networks are passed under (empty: none)
    required: tuple[str, ...]  # phases its program needs rows of
    #: (networks by role, hyperparameters) -> workload_info from the networks' shapes (the
    #: hyperparameters named like Info fields are added to it by the recording)
    info: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
    one_network: str | None = None  # a role that may stand for every network, as one
    learner_phases: frozenset[str] = frozenset()  # run by the learner worker; others: actor


def _no_progress(_: int) -> None:
    return None


@dataclass(frozen=True)
class Workload:
    name: str  # `rldse capture NAME`, and the trace's meta.workload
    family: str  # the package under rldse.workloads that holds its loop and program
    description: str
    knobs: type[Knobs]
    info: type[Info]
    #: role -> how a part may run it for this family's program (rldse.models.kinds.Runs;
    #: "*": any kind that can run the role)
    placements: dict[str, tuple[Runs | str, ...]]
    trace_knobs: Callable[[Any, Trace, dict, dict], dict[str, Any]]  # (info, trace, parts,
    # placement) -> the knob values the trace (or the system) stands for
    capture_module: str  # module with Config and capture(cfg, progress) -> Trace
    program_module: str  # module with program(machine) -> Outcome
    #: CaptureConfig fields only some workloads take: name -> (type, pydantic Field)
    capture_options: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    sides: dict[str, Side] = field(default_factory=lambda: dict(SIDES))
    worker_knob: str | None = None  # the knob counting its workers (actors, agents)
    host_knobs: tuple[str, ...] = ()  # workload_info entries `rldse check-replay` sets as knobs
    recording: Recordable | None = None
    #: phases whose host time is waiting on the other side (a pipe, a queue), costed from
    #: wall time, not CPU time (rldse.trace.compute_mask); none by default ('sync' of an
    #: off-policy loop is a target-network copy in memory: compute)
    wait_phases: frozenset[str] = frozenset()
    #: workload_info keys holding CPU time of spans that are no op (process start-up,
    #: receives): dropped where a trace is read at wall time (``without_cpu_time``)
    cpu_info: tuple[str, ...] = ()
    #: (ResolvedSystem) -> the processes its program keeps busy on CPU cores at once, at
    #: its busiest: what sets the clock a busy core runs at (CpuSpec.busy_clock_mhz; the
    #: Machine caps it at the CPU's cores). Default: one process (the loop and its dispatch)
    busy_processes: Callable[[Any], int] = field(default=lambda system: 1)
    #: resolved knobs -> (units of work the program simulates at least, what they are):
    #: priced before any pilot (rldse.sim.budget.check_size); None: env_steps
    work: Callable[[Any], tuple[float, str]] | None = None
    #: ``placement.protocol`` values: how the roles share devices (the first is the
    #: default); empty: one way, the placement alone
    protocols: tuple[str, ...] = ()
    #: its programs place work over a system's ``nodes`` (besides ``learner_gpus`` families)
    over_nodes: bool = False

    def without_cpu_time(self, trace: Trace, rows: bool = True) -> Trace:
        """``trace`` as one from before CPU time was recorded: its ``cpu_info`` entries
        dropped and, with ``rows``, its ops' CPU time unknown (rldse.trace.host_cost_s
        then takes their wall time)."""
        from rldse.trace import Trace

        meta = trace.meta.model_copy(update={"workload_info": {
            k: v for k, v in trace.meta.workload_info.items() if k not in self.cpu_info}})
        ops = trace.ops.assign(cpu_s=float("nan")) if rows else trace.ops
        return Trace(ops=ops, meta=meta, transitions=trace.transitions, source=trace.source)

    def places(self, role: str, kind: str) -> bool:
        """Whether this family's program can run ``role`` on a ``kind`` part: the kind
        serves the role in a form the program implements."""
        allowed = self.placements.get(role, ())
        part = PART_KINDS[kind]
        return role in part.roles and (allowed == ("*",) or part.runs(role) in allowed)

    @property
    def learning_knobs(self) -> tuple[str, ...]:
        """The knobs marked ``learning_knob``: setting one away from the trace's value
        changes the learning curve."""
        return tuple(name for name, f in self.knobs.model_fields.items()
                     if f.json_schema_extra == LEARNING)

    @property
    def config(self) -> type[BaseModel]:
        """The real loop's capture options (its module's ``Config``)."""
        return import_module(self.capture_module).Config

    def capture(self, cfg: BaseModel, progress: Callable[[int], None] | None = None) -> Trace:
        """Run the real loop ``cfg`` (a CaptureConfig, rldse.workloads.common.base) asks
        for; ``progress`` is called with the env steps done since its last call."""
        from rldse.threads import single_blas_thread

        with single_blas_thread():
            return import_module(self.capture_module).capture(cfg, progress or _no_progress)

    def program(self, machine: Any) -> Any:
        return import_module(self.program_module).program(machine)

    def read_info(self, trace: Trace) -> Any:
        """The trace's workload_info as this family's typed Info."""
        try:
            return self.info.model_validate(trace.meta.workload_info)
        except ValidationError as exc:
            err = validation_error(exc, "")
            at = f"{err.where}: " if err.where else ""
            raise RldseError(f"workload_info: {at}{err.message} ({self.name} traces "
                             "from this rldse have it; capture the trace again)",
                             where=f"trace {trace.source}") from None

    def check(self, trace: Trace) -> None:
        """The door every trace passes before a model sees it: its workload_info typed and in
        range, and the knobs it stands for (env steps from its ops, batch, replay, ...)
        within the knobs' ranges. Raises RldseError naming the field and the range."""
        info = self.read_info(trace)
        if not (trace.ops["dur_s"] > 0).any():
            raise RldseError("column 'dur_s': no row has a measured time (allowed: at least "
                             "one row > 0 s)", where=f"trace {trace.source}")
        try:
            self.knobs.model_validate(self.trace_knobs(info, trace, {}, {}))
        except ValidationError as exc:
            err = validation_error(exc, "")
            raise RldseError(f"{err.where} as the trace has it (workload_info, or its ops for "
                             f"env_steps): {err.message}", where=f"trace {trace.source}") from None

    def check_knob_names(self, raw: dict[str, Any]) -> None:
        """Refuse a knob this family does not have, naming the knob and the family."""
        fields = list(self.knobs.model_fields)
        for key in raw:
            if key not in fields:
                raise RldseError(f"not a knob of {self.name} traces{did_you_mean(key, fields)} "
                                 f"(its knobs: {', '.join(fields)})", where=f"workload.{key}")

    def resolve_knobs(self, raw: dict[str, Any], trace: Trace, parts: dict,
                      placement: dict[str, str], info: Info | None = None) -> Knobs:
        """The knobs a spec sets, checked against this family, with every unset one filled
        in as in the trace (``info``: its typed workload_info, where already read)."""
        self.check_knob_names(raw)
        fields = list(self.knobs.model_fields)
        try:
            given = self.knobs.model_validate(raw)
        except ValidationError as exc:
            raise validation_error(exc, "workload", fields) from None
        defaults = self.trace_knobs(info or self.read_info(trace), trace, parts, placement)
        return self.knobs.model_validate({**defaults, **given.model_dump(exclude_none=True)})


WORKLOADS: Registry[Workload] = Registry("workload")


def register(workload: Workload) -> Workload:
    from rldse.trace import set_wait_phases

    added = WORKLOADS.add(workload.name, workload)
    set_wait_phases(workload.name, workload.wait_phases)
    return added


def workload_of(trace: Trace) -> Workload:
    """The registered workload that replays ``trace``."""
    return WORKLOADS.lookup(trace.meta.workload, f"trace {trace.digest}")


def open_trace(path: Any) -> Trace:
    """`load_trace` and then `Workload.check`: the trace every command simulates."""
    from rldse.trace import load_trace

    trace = load_trace(path)
    workload_of(trace).check(trace)
    return trace


def capture(cfg: BaseModel, progress: Callable[[int], None] | None = None) -> Trace:
    """Run the real training ``cfg`` asks for and return its Trace."""
    return WORKLOADS.lookup(cfg.workload, "workload").capture(cfg, progress)


# Families register themselves when imported; each package here but common/ is one.
for _family in sorted(m.name for m in pkgutil.iter_modules(__path__)
                      if m.ispkg and m.name != "common"):
    import_module(f"{__name__}.{_family}")
