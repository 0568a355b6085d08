"""Part kinds as registered plug-ins: the one place that knows which kinds of part exist.

Each kind's module ends with one ``register(PartKind(...))`` naming its spec, its cost
model, whether it has a presets file (``presets/<name>.yaml``), the placement roles it can
run (placement is validated against them), whether a system may hold several, and its
feasibility checks. ``rldse.models`` imports every kind module once, so adding a kind
is one module, one presets file and one import line there; nothing else lists kinds.

Placement roles are the RL phases a system can put on a device of its choice
(``ROLES``); env steps always run on CPU cores. A kind declares, per role it serves, how
its model runs that role's operations (``Runs``); programs pick their implementation of a
role by that form (``Machine.runner(role).runs``), never by the kind's name, so a new kind
that runs act and learn as kernels a host core issues gets the programs' kernel paths
with no program edit. Each form's model interface is a typed Protocol below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from rldse.errors import RldseError
from rldse.models.spec import PartSpec
from rldse.plugins import Registry
from rldse.strict import UserModel

#: Placement roles: the phases a SystemSpec's `placement` maps to a part kind.
ROLES: dict[str, str] = {
    "act": "policy inference for actors",
    "learn": "the learner's gradient steps",
    "replay": "the replay manager: sample, insert, priority update",
    "q_update": "tabular Q-learning/SARSA updates",
}


class Runs(Enum):
    """How a part runs a role's operations: the form a program's implementation of the
    role is chosen by (each form's model interface is the Protocol named)."""

    CORES = "cores"  # on its own cores, the trace's rows rescaled: CoreModel
    KERNELS = "kernels"  # kernels a host core issues and the part runs: KernelModel
    DPUS = "dpus"  # SPMD kernels on in-memory processors the host loads and gathers: DpuModel
    LOOKUP = "lookup"  # a fixed latency per operation (configured table rows): LookupModel
    SERVER = "server"  # its own replay model (rldse.models.kinds.ReplayJob): ReplayServer


@runtime_checkable
class PartModel(Protocol):
    """What every part kind's cost model gives the Machine: its spec, its lanes and the
    utilisation power model's endpoints, and the estimator it names in results."""

    spec: Any  # a PartSpec with ``price_usd``
    lanes: int
    idle_w: float
    max_w: float
    method: str
    claimed_accuracy: str
    warnings: Sequence[str]  # what a Result should say about the model's inputs


@runtime_checkable
class CoreModel(PartModel, Protocol):
    """Runs.CORES: seconds of each operation on one of the part's cores."""

    def op_seconds(self, ops: Any) -> Any: ...


@runtime_checkable
class KernelModel(PartModel, Protocol):
    """Runs.KERNELS: per operation the issuing core's and the part's seconds (``.wall_s``,
    ``.host_s``, ``.device_s`` arrays, ``.total()`` a PartTime); kernel counts grow with
    the network's ``layers``. ``mem_bytes`` on its spec bounds what it holds."""

    def op_times(self, ops: Any, layers: Any = 0) -> Any: ...

    def issue_from(self, core: Any, busy_cores: int | None = None) -> None:
        """Dispatch runs on ``core`` (a CPU spec): the system's cores, ``busy_cores`` of
        them busy at once (their clock; None: all)."""

    def anchor_dispatch(self, phases: Any) -> None:
        """The capture ran ``phases`` on a device too: anchor dispatch to its rows."""

    def dynamic_share(self, phase: str) -> float:
        """Share of dynamic power a busy second of ``phase`` draws."""
        ...

    def copy_times(self, bytes_: Any) -> Any:
        """Host<->part copies of ``bytes_`` each, in op_times' form."""

    def blocking_copy_times(self, bytes_: Any, after: Any = None) -> Any:
        """``after`` (op_times' form; None: nothing queued), then copies of ``bytes_`` the
        host waits for (a result read back): the host's wait is part of the wall time."""

    def fits(self, bytes_: Any) -> Any:
        """Whether ``bytes_`` fit the part's memory."""


@runtime_checkable
class DpuModel(PartModel, Protocol):
    """Runs.DPUS: instructions and their energy for the in-memory processors."""

    def instructions(self, mix: Any, dtype: str) -> Any: ...

    def instruction_joules(self, instructions: Any) -> Any: ...


@runtime_checkable
class LookupModel(PartModel, Protocol):
    """Runs.LOOKUP: a configured latency per operation, co-located or not."""

    def op_seconds(self, ops: Any, colocated: bool = False) -> Any: ...


@runtime_checkable
class ReplayServer(PartModel, Protocol):
    """Runs.SERVER for ``replay``: sample, update and insert on the part's own hardware
    (ReplayJob's docstring gives the contract)."""

    def replay_seconds(self, job: ReplayJob, op: str, n: int) -> PartTime: ...

    def replay_joules(self, job: ReplayJob, op: str, n: int) -> dict[str, float]: ...

    def replay_checks(self, job: ReplayJob) -> dict[str, bool]: ...


#: The interface a model must offer for each form.
FORM_PROTOCOLS: dict[Runs, type] = {
    Runs.CORES: CoreModel, Runs.KERNELS: KernelModel, Runs.DPUS: DpuModel,
    Runs.LOOKUP: LookupModel, Runs.SERVER: ReplayServer,
}


class PartRef(UserModel):
    """A SystemSpec section: a preset by name plus overrides of any of its fields (checked
    by the part's spec), and how many instances the system holds (for countable kinds)."""

    model_config = ConfigDict(extra="allow")

    preset: str
    count: int = Field(default=1, ge=0, le=64, description="instances of this part")

    def overrides(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


@dataclass(frozen=True)
class Check:
    """A feasibility check a kind declares: a named yes/no the Result reports under
    ``checks`` and a search applies as a constraint."""

    name: str
    description: str
    #: the check that what a program keeps on the part fits its memory (a kind serving a
    #: role as kernels declares one; programs report it through Machine.memory_checks)
    memory: bool = False


@dataclass(frozen=True)
class ModelContext:
    """What a model factory may need besides its spec: the capture host's CPU spec (CPU
    models scale measured times from it), a loader for presets it depends on, and the
    cores the program keeps busy at once (a CPU's clock follows it; None: all)."""

    capture_host: PartSpec | None
    load: Callable[[str, str, str], PartSpec]  # (kind, preset, where) -> spec
    busy_cores: int | None = None


@dataclass(frozen=True)
class Instance:
    """One device of a resolved system: its name in the Machine and Result ('gpu1',
    'table:CPU'), the validated spec, the preset it came from, and its lanes when the
    system sets them (None: the model's own)."""

    name: str
    spec: PartSpec
    preset: str
    lanes: int | None = None


#: (kind, preset, where, overrides) -> spec: how a kind's resolver loads presets.
Loader = Callable[..., PartSpec]


def preset_instances(kind: PartKind, ref: Any, load: Loader, where: str) -> list[Instance]:
    """The usual resolution: the ref's preset with its overrides, `count` instances named
    after the kind (numbered when there are several)."""
    if ref.count != 1 and not kind.countable:
        raise RldseError(f"{where}.count: a system holds one {kind.name} part "
                         f"(size it with its own fields instead)")
    if ref.count == 0:
        return []
    spec = load(kind.name, ref.preset, where, ref.overrides())
    names = [kind.name] if ref.count == 1 else [f"{kind.name}{i}" for i in range(ref.count)]
    return [Instance(name, spec, ref.preset) for name in names]


@dataclass(frozen=True)
class PartKind:
    name: str
    spec: type[PartSpec]
    model: Callable[[Any, ModelContext], PartModel]  # (spec, context) -> cost model
    description: str
    serves: Mapping[str, Runs] = field(default_factory=dict)  # role -> how it runs it
    presets: bool = True  # presets/<name>.yaml ships with the package
    countable: bool = False  # a system may hold `count` instances, one Device each
    in_system: bool = True  # a section of SystemSpec (links are referenced by other parts)
    ref: type[BaseModel] = PartRef  # the SystemSpec section's form
    preset_refs: dict[str, str] = field(default_factory=dict)  # field -> kind it names a preset of
    instances: Callable[[PartKind, Any, Loader, str], list[Instance]] = preset_instances
    checks: tuple[Check, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        unknown = set(self.serves) - set(ROLES)
        if unknown:
            raise ValueError(f"part kind {self.name}: unknown roles {sorted(unknown)}")

    @property
    def roles(self) -> frozenset[str]:
        """The placement roles this kind can run."""
        return frozenset(self.serves)

    def runs(self, role: str) -> Runs:
        return self.serves[role]

    @property
    def issues_kernels(self) -> bool:
        """Its operations are kernels a host core issues (costed as PartTimes)."""
        return Runs.KERNELS in self.serves.values()


PART_KINDS: Registry[PartKind] = Registry("part kind")


def register(kind: PartKind) -> PartKind:
    return PART_KINDS.add(kind.name, kind)


def kinds_for(role: str) -> list[str]:
    """Kinds that can run placement role ``role``."""
    return [k.name for k in PART_KINDS.values() if role in k.roles]


def all_checks() -> dict[str, Check]:
    """Every feasibility check any kind declares, by name."""
    return {c.name: c for k in PART_KINDS.values() for c in k.checks}


@dataclass(frozen=True)
class PartTime:
    """Seconds one operation takes on a part that a host core drives: ``host_s`` occupies
    the issuing CPU core (framework dispatch, a gather from host memory), ``device_s``
    occupies the part itself (kernels, searches; what its dynamic power is charged for),
    and ``wall_s`` is when the operation is done, counted from its start: the max of the
    two where the host issues asynchronously (GPU kernels), their sum where one waits for
    the other (a TCAM search, then the host's gather)."""

    host_s: float
    device_s: float
    wall_s: float

    def __post_init__(self) -> None:
        if not (0.0 <= self.host_s <= self.wall_s * (1 + 1e-12) + 1e-18
                and 0.0 <= self.device_s <= self.wall_s * (1 + 1e-12) + 1e-18):
            raise ValueError(f"PartTime: host {self.host_s} and device {self.device_s} "
                             f"must lie in [0, wall {self.wall_s}]")

    @classmethod
    def overlapped(cls, host_s: float, device_s: float) -> PartTime:
        """The host issues and moves on; the device runs behind it."""
        return cls(host_s, device_s, max(host_s, device_s))

    @classmethod
    def serial(cls, host_s: float, device_s: float) -> PartTime:
        """One waits for the other."""
        return cls(host_s, device_s, host_s + device_s)

    def __mul__(self, n: float) -> PartTime:
        return PartTime(self.host_s * n, self.device_s * n, self.wall_s * n)

    __rmul__ = __mul__

    def __add__(self, other: PartTime) -> PartTime:
        """One operation after the other."""
        return PartTime(self.host_s + other.host_s, self.device_s + other.device_s,
                        self.wall_s + other.wall_s)


@dataclass(frozen=True)
class ReplayJob:
    """What a replay manager serves, for kinds that can run the `replay` role on their own
    hardware (GPU, TCAM, FPGA). Such a kind's model has

        replay_seconds(job, op, n) -> PartTime   # op: 'sample' | 'update' | 'insert'
        replay_joules(job, op, n) -> dict[str, float]   # per-action energy by label
        replay_checks(job) -> dict[str, bool]   # its declared checks (e.g. capacity)

    where n is the number of operations of a batch each (sample, update) or the number of
    new transitions (insert). CPU replay is costed from the trace's own rows instead."""

    batch: int
    capacity: int
    transition_bytes: int
    prioritized: bool
    host_gather_s: float = 0.0  # gathering a batch from host memory (replay data kept there)
    searches_per_item: float = 1.0  # TCAM: searches per sampled item (AMPER's k-NN)
    writes_per_update_item: float = 1.0  # TCAM: rows rewritten per updated priority
    candidates_per_item: float = 0.0  # TCAM: candidate-set entries read per sampled item

