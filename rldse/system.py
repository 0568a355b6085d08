"""SystemSpec (the machine as written) and ResolvedSystem (every number it stands for).

    cpu: {preset: xeon-silver-4215, sockets: 2}      # preset + overrides of its fields
    gpu: {preset: v100-sxm2, count: 8}
    pim: {preset: upmem-p21, dimms: 16}
    tcam: {preset: fefet-tcam-64, arrays: 256}
    placement: {act: cpu, learn: gpu, replay: tcam, q_update: pim}
    workload: {actors: 16, batch_size: 64, learner: sync}
    nodes: 4                                          # that box four times
    fabric: {preset: dgx1-v100}                       # how a node's GPUs reach each other
    network: {preset: ib-hdr, nics_per_node: 4}       # between the nodes
    platform: {preset: pcie-4gpu-1s}                  # board, DRAM, NICs, chassis, supplies
    runs_per_machine: 4                               # four runs share the machine
    cost: {life_years: 5, usd_per_kwh: 0.1274}        # how a bought machine is paid for

``nodes`` repeats every part the file describes (node 0's devices keep their names, node
k's are 'node{k}/gpu3'); inside a node GPUs reach each other over its ``fabric``
(rldse.models.fabric; unset: PCIe through the host at the GPUs' own host link), between
nodes over the ``network``'s NICs (rldse.models.network; ``nics_per_node`` unset: the
fabric's NICs, at least one). ``Nodes.cluster`` gives the collectives' view of any
number of GPUs of it (rldse.models.collectives).

``platform``, ``cost`` and ``price_usd_per_hour`` price the machine (rldse.models.platform);
with ``runs_per_machine`` N the parts resolved are one run's share of them
(rldse.models.packing), and the Result gives the run's figures and the machine's.

The part sections and the placement roles come from the part-kind registry
(rldse.models.kinds); the workload knobs from the trace's workload family
(rldse.workloads), so a spec is checked in two steps: its form when it is read, and its
parts, placement and knobs when it is resolved against a trace (`resolve`).

A ResolvedSystem is frozen: every part's numbers after preset and overrides, the
placement, the knobs with "as in the trace" filled in, and rldse's version and code. Its
digest covers all of them, so editing a preset file or a model constant misses the
results cache.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from rldse.errors import RldseError, did_you_mean, error_location, validation_error
from rldse.models import PART_KINDS, ROLES, CpuSpec, PartRef, cpu_from_host, renamed
from rldse.models.collectives import Cluster
from rldse.models.fabric import FabricSpec
from rldse.models.kinds import Instance, kinds_for
from rldse.models.network import NetworkSpec
from rldse.models.packing import run_share
from rldse.models.platform import CostKnobs, Ownership, node_items
from rldse.models.presets import load_part
from rldse.models.spec import spec_fields
from rldse.paths import data_path
from rldse.strict import UserModel
from rldse.workloads import Info, Workload, workload_of
from rldse.yamlfile import read_mapping

if TYPE_CHECKING:
    from rldse.trace import Trace

#: Where env steps run, and every role a spec leaves unset.
CPU_KIND = "cpu"

Placement = create_model(  # one field per placement role, each naming a part kind
    "Placement", __config__=ConfigDict(extra="forbid"),
    **{role: (str, Field(default=CPU_KIND, description=text)) for role, text in ROLES.items()},
    protocol=(str | None, Field(default=None, description="how the roles share the GPUs, "
                                "for families that name ways (Workload.protocols; unset: "
                                "the family's first)")))


class FabricRef(UserModel):
    """``fabric: {preset: dgx1-v100, ...}``: a fabric preset plus overrides of its fields."""

    model_config = ConfigDict(extra="allow")

    preset: str


class NetworkRef(UserModel):
    """``network: {preset: ib-hdr, nics_per_node: 4, ...}``: a network preset, the NICs
    each node uses, and overrides of the preset's fields."""

    model_config = ConfigDict(extra="allow")

    preset: str
    nics_per_node: int | None = Field(default=None, ge=0, le=64, description="NICs each "
                                      "node uses (unset: its fabric's, at least one)")


#: SystemSpec fields that lay the parts over several nodes; left at these values they are
#: not written (to_yaml) nor digested, so one-node specs keep their digests
CLUSTER_DEFAULTS: dict[str, Any] = {"nodes": 1, "fabric": None, "network": None}
#: SystemSpec fields that price the machine and pack runs on it, likewise
OWNERSHIP_DEFAULTS: dict[str, Any] = {"platform": None, "runs_per_machine": 1, "cost": None}


class PlatformRef(UserModel):
    """``platform: {preset: pcie-4gpu-1s, ...}``: a platform preset plus overrides."""

    model_config = ConfigDict(extra="allow")

    preset: str


class _SpecBase(UserModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "system"
    nodes: int = Field(default=1, ge=1, le=4096, description="nodes, each holding every "
                       "part the file describes")
    fabric: FabricRef | None = Field(default=None, description="how a node's GPUs reach "
                                     "each other (unset: PCIe through the host)")
    network: NetworkRef | None = Field(default=None, description="the network between "
                                       "nodes (needs nodes of 2 or more)")
    placement: Placement = Placement()  # type: ignore[valid-type]
    workload: dict[str, Any] = Field(default_factory=dict, description="knobs of the trace's "
                                     "workload family (`rldse spec knobs`); unset: as in the trace")
    price_usd_per_hour: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="hourly price of the whole "
        "machine (cloud rental): gives steps_per_usd_hour and cost_to_target_usd; unset: a "
        "rented platform's, else none")
    platform: PlatformRef | None = Field(default=None, description="the node's baseboard, "
                                         "DRAM, NICs, chassis and supplies, or its cloud "
                                         "price (unset: CPUs and GPUs priced alone)")
    runs_per_machine: int = Field(default=1, ge=1, le=256, description="identical runs "
                                  "sharing the machine, each on an equal share of it")
    cost: CostKnobs | None = Field(default=None, description="life_years and usd_per_kwh "
                                   "of a bought machine (unset: their defaults)")

    def present(self) -> dict[str, Any]:
        """Part sections that hold at least one part, by kind."""
        out = {}
        for kind in PART_KINDS.values():
            ref = getattr(self, kind.name, None) if kind.in_system else None
            if ref is not None and getattr(ref, "count", 1) > 0:
                out[kind.name] = ref
        return out

    @property
    def digest(self) -> str:
        """Digest of the spec as written (a table's file by its bytes). Results are keyed
        by ResolvedSystem.digest, which also covers the numbers presets stand for."""
        return _digest(self.written(), self._file_bytes())

    def written(self) -> dict[str, Any]:
        """The spec as JSON values, without cluster fields left at their defaults."""
        out = self.model_dump(mode="json")
        for key, default in {**CLUSTER_DEFAULTS, **OWNERSHIP_DEFAULTS}.items():
            if out.get(key) == default:
                del out[key]
        if out["placement"].get("protocol") is None:
            del out["placement"]["protocol"]
        return out

    def _file_bytes(self) -> dict[str, str]:
        out = {}
        for kind in PART_KINDS.values():
            ref = getattr(self, kind.name, None) if kind.in_system else None
            path = getattr(ref, "latency_csv", None)
            if path is not None:
                p = Path(path)
                out[kind.name] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() \
                    else p.name
        return out

    def to_yaml(self) -> str:
        out = self.model_dump(mode="json", exclude_none=True)
        for key in ("nodes", "runs_per_machine"):
            if out.get(key) == 1:
                del out[key]
        return yaml.safe_dump(out, sort_keys=False)


_SPEC_MODELS: dict[tuple, type[_SpecBase]] = {}


def system_spec() -> type[_SpecBase]:
    """The SystemSpec model for the part kinds registered now: one optional section per
    kind a system holds. Built on first use and again whenever the kind registry changes,
    so registering a kind (rldse.models.kinds.register) is all a new section needs."""
    kinds = tuple((k.name, k.ref) for k in PART_KINDS.values() if k.in_system)
    model = _SPEC_MODELS.get(kinds)
    if model is None:
        model = create_model(
            "SystemSpec", __base__=_SpecBase,
            **{name: (ref | None, PartRef(preset="host") if name == CPU_KIND else None)
               for name, ref in kinds})
        model.__doc__ = "The machine and how the workload is laid on it, as the user wrote it."
        _SPEC_MODELS[kinds] = model
    return model


def __getattr__(name: str) -> Any:
    """``rldse.system.SystemSpec``: the model of the kinds registered when it is read
    (``system_spec``); a module that keeps it from import time sees the kinds of then."""
    if name == "SystemSpec":
        return system_spec()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- reading -----------------------------------------------------------------------------

def set_path(raw: dict[str, Any], dotted: str, value: Any) -> None:
    """Apply `a.b.c=value` to a raw spec dict, creating intermediate mappings."""
    node = raw
    keys = dotted.split(".")
    for key in keys[:-1]:
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        elif not isinstance(child, dict):
            raise RldseError(f"'{key}' is a value, not a section", where=f"--set {dotted}")
        node = child
    node[keys[-1]] = value


def parse_spec(raw: dict[str, Any], where: str = "system") -> Any:
    """Validate a raw mapping into a SystemSpec; errors name the field's path."""
    try:
        return system_spec().model_validate(renamed.spec(raw, where))
    except ValidationError as exc:
        raise validation_error(exc, where, _fields_at(exc)) from None


def _fields_at(exc: ValidationError) -> list[str]:
    """Names allowed where an unknown field was found (for 'did you mean')."""
    loc = [str(p) for p in error_location(exc)]
    if len(loc) == 1:
        return list(system_spec().model_fields)
    if loc[0] == "placement":
        return list(Placement.model_fields)
    if loc[0] in ("fabric", "network", "platform"):
        return list(PART_KINDS[loc[0]].spec.model_fields)
    return []


def load_spec(path: str | Path, sets: dict[str, Any] | None = None) -> Any:
    """Read a SystemSpec YAML file, apply `--set` overrides, validate. A problem in the file
    names the file; one in a `--set` value names the flag. An empty file is refused (it
    would silently simulate the capture host)."""
    path = Path(path)
    raw = renamed.spec(read_mapping(path, "sections " + ", ".join(
        [k.name for k in PART_KINDS.values() if k.in_system]
        + ["nodes", "fabric", "network", "placement", "workload", "platform",
           "runs_per_machine", "cost"])), str(path))
    if not raw:
        raise RldseError(f"{path}: the file is empty: expected a system (sections "
                         f"{', '.join(k.name for k in PART_KINDS.values() if k.in_system)}, "
                         "placement, workload: examples/dgx1_like.yaml is one)")
    try:
        raw = files_beside(raw, path)
        alone = parse_spec(copy.deepcopy(raw) if sets else raw, where="")
    except RldseError as exc:
        raise exc.within(str(path)) from None
    if not sets:
        return alone
    for dotted, value in sets.items():
        set_path(raw, renamed.path(dotted, f"--set {dotted}"), _own_file(dotted, value))
    try:
        return parse_spec(raw, where="")
    except RldseError as exc:
        raise on_flag(exc, sets) or exc.within("--set") from None


def on_flag(exc: RldseError, sets: dict[str, Any]) -> RldseError | None:
    """``exc`` (an error at a spec field: 'gpu.count', or 'system.gpu.count' from
    `resolve`) blamed on the `--set` flag whose path holds that field, or None when no
    flag does (the file is at fault)."""
    field = exc.where.removeprefix("system.")
    for dotted in sets:
        if dotted == field or dotted.startswith(f"{field}.") or field.startswith(f"{dotted}."):
            named = "" if dotted == field else f"{field}: "
            return RldseError(f"{named}{exc.message}", where=f"--set {dotted}")
    return None


#: SystemSpec fields (in a part kind's section) naming a data file the spec reads
DATA_FILE_FIELDS = ("latency_csv",)


def files_beside(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """Data files a spec file names (a table's latency_csv) are relative to it and must lie
    beside it (rldse.paths.data_path)."""
    for kind in PART_KINDS.values():
        ref = raw.get(kind.name)
        for field in DATA_FILE_FIELDS:
            if isinstance(ref, dict) and isinstance(ref.get(field), str):
                ref[field] = str(data_path(ref[field], path.parent, f"{kind.name}.{field}"))
    return raw


def _own_file(dotted: str, value: Any) -> Any:
    """A data file given with `--set` is the user's own path: from the working folder,
    wherever it lies."""
    if dotted.rpartition(".")[2] in DATA_FILE_FIELDS and isinstance(value, str):
        return str(Path(value).resolve())
    return value


# ---- resolving ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ResolvedSystem:
    """A SystemSpec resolved against a trace: what the Machine, the search, the results
    cache and the reports take. Build it with `resolve`."""

    spec: Any  # the SystemSpec as written
    workload: Workload
    parts: dict[str, tuple[Instance, ...]]  # by kind, in registry order
    placement: dict[str, str]  # role -> part kind
    knobs: BaseModel  # the family's Knobs, "as in the trace" filled in
    version: str
    digest: str
    info: Info  # the trace's workload_info as its family's typed Info (what programs read)
    nodes: Nodes  # the nodes, their fabric and the network between them
    protocol: str | None = None  # placement.protocol resolved (families with protocols)
    ownership: Ownership = dataclass_field(default_factory=Ownership)  # price, runs sharing it

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def specs(self) -> dict[str, Any]:
        """Each kind's part spec (every instance of a kind shares its first one's)."""
        return {k: insts[0].spec for k, insts in self.parts.items()}

    def as_dict(self) -> dict[str, Any]:
        """Everything the digest covers, as plain JSON values."""
        return {
            "name": self.name, "workload": self.workload.name, "version": self.version,
            "parts": {k: [{"name": i.name, "preset": i.preset, "lanes": i.lanes,
                           "spec": i.spec.model_dump(mode="json")} for i in insts]
                      for k, insts in self.parts.items()},
            "placement": self.placement,
            "knobs": self.knobs.model_dump(mode="json"),
            **({"nodes": self.nodes.as_dict()} if self.nodes.spans else {}),
            **({"protocol": self.protocol} if self.protocol is not None else {}),
            **({"ownership": self.ownership.as_dict()} if self.ownership.terms_set else {}),
        }


def resolve(spec: Any, trace: Trace) -> ResolvedSystem:
    """Resolve `spec` for `trace`: parts from presets and overrides, placement checked
    against the kinds and the workload family, knobs against the family."""
    workload = workload_of(trace)
    workload.check_knob_names(spec.workload)
    machine = resolve_parts(spec, trace, where="system.")
    parts = run_share(machine, spec.runs_per_machine, CPU_KIND, "system.runs_per_machine")
    placement = _placement(spec, parts, workload)
    info = workload.read_info(trace)
    nodes = resolve_nodes(spec, trace, parts, placement, workload)
    ownership = resolve_ownership(spec, machine, nodes)
    parts = nodes.replicate(parts)
    knobs = workload.resolve_knobs(spec.workload, trace, parts, placement, info)
    _check_learner_gpus(knobs, parts, placement, nodes)
    system = ResolvedSystem(spec=spec, workload=workload, parts=parts, placement=placement,
                            knobs=knobs, version=code_version(), digest="", info=info,
                            nodes=nodes, protocol=_protocol(spec, workload),
                            ownership=ownership)
    return replace(system, digest=_digest(system.as_dict(), {}))


@dataclass(frozen=True)
class Nodes:
    """The system's nodes (each every part the spec holds), the fabric inside each and the
    network between them: what collectives and cross-node messages are priced on."""

    count: int
    fabric: FabricSpec
    network: NetworkSpec | None = None
    nics_per_node: int = 0
    gpus_per_node: int = 0  # the learn role's kernel parts in one node (0: none)
    named_fabric: bool = False  # the spec has a fabric section (else the PCIe default)

    @property
    def spans(self) -> bool:
        """Several nodes, or a fabric the spec names: what one-node digests leave out."""
        return self.count > 1 or self.network is not None or self.named_fabric

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "fabric": self.fabric.model_dump(mode="json"),
                "network": None if self.network is None
                else self.network.model_dump(mode="json"),
                "nics_per_node": self.nics_per_node}

    def replicate(self, parts: dict[str, tuple[Instance, ...]]
                  ) -> dict[str, tuple[Instance, ...]]:
        """Every part once per node: node 0's under their own names, node k's as
        'node{k}/<name>' (the same specs, so the Machine builds one model per kind)."""
        if self.count == 1:
            return parts
        return {kind: insts + tuple(replace(i, name=f"node{k}/{i.name}")
                                    for k in range(1, self.count) for i in insts)
                for kind, insts in parts.items()}

    def cluster(self, gpus: int) -> Cluster:
        """The collectives' view of ``gpus`` GPUs taken in node order (node 0's first)."""
        per = max(1, min(gpus, self.gpus_per_node or 1))
        return Cluster(self.fabric, nodes=max(1, -(-gpus // per)), gpus_per_node=per,
                       network=self.network, nics=self.nics_per_node)

    def between_nodes(self) -> Cluster:
        """One rank per node: what a message from node 0 to the others crosses."""
        return Cluster(self.fabric, nodes=self.count, gpus_per_node=1,
                       network=self.network, nics=self.nics_per_node)


#: The fabric a node without a ``fabric:`` section has: PCIe through the host, at the
#: GPUs' own host link (rldse.models.fabric)
DEFAULT_FABRIC = "pcie4-8gpu"


def resolve_nodes(spec: Any, trace: Trace, parts: dict[str, tuple[Instance, ...]],
                  placement: dict[str, str], workload: Workload) -> Nodes:
    """The spec's nodes, fabric and network, checked: a network needs several nodes,
    several nodes need a network with NICs and a family whose programs place work over
    them (one that has the ``learner_gpus`` knob, or ``Workload.over_nodes``); a node's
    GPUs fit its fabric."""
    n = spec.nodes
    if n > 1 and not workload.over_nodes and "learner_gpus" not in workload.knobs.model_fields:
        raise RldseError(f"{workload.name} programs run on one node (families with "
                         "workload.learner_gpus place work over nodes)", where="system.nodes")
    if spec.network is not None and n == 1:
        raise RldseError("a one-node system has no network between nodes to use (set "
                         "nodes: 2 or more, or remove network)", where="system.network")
    if n > 1 and spec.network is None:
        raise RldseError(f"{n} nodes but no network between them: the nodes' GPUs and "
                         "actors have no path (add network: {preset: ib-hdr})",
                         where="system.nodes")
    kernel_kind = placement.get("learn", CPU_KIND)
    on_kernels = PART_KINDS[kernel_kind].issues_kernels
    per_node = len(parts.get(kernel_kind, ())) if on_kernels else 0
    fabric = _fabric(spec, trace, parts.get(kernel_kind, ()) if on_kernels else (),
                     per_node)
    if per_node > fabric.gpus:
        raise RldseError(f"the {fabric.name} fabric connects {fabric.gpus} GPUs, but a "
                         f"node has {per_node} {kernel_kind}", where="system.fabric")
    network, nics = None, 0
    if spec.network is not None:
        ref = spec.network
        overrides = dict(ref.model_extra or {})
        _check_part_fields("network", "system.network", overrides)
        network = load_part("network", ref.preset, where="system.network", **overrides)
        nics = ref.nics_per_node if ref.nics_per_node is not None else max(1, fabric.nics)
        if nics == 0:
            raise RldseError("0 NICs per node: the nodes have no path to each other",
                             where="system.network.nics_per_node")
    return Nodes(n, fabric, network, nics, per_node, named_fabric=spec.fabric is not None)


def resolve_ownership(spec: Any, machine: dict[str, tuple[Instance, ...]], nodes: Nodes
                      ) -> Ownership:
    """The machine's itemised price (one node's parts, all of them, and its platform),
    the cost knobs and its hourly rental (rldse.models.platform); several runs need one
    node (rldse.models.packing)."""
    runs, where = spec.runs_per_machine, "system.runs_per_machine"
    if runs > 1 and nodes.count > 1:
        raise RldseError(f"{runs} runs on {nodes.count} nodes: runs share one node's parts "
                         "(set nodes: 1, or runs_per_machine: 1)", where=where)
    platform = None
    if spec.platform is not None:
        overrides = dict(spec.platform.model_extra or {})
        _check_part_fields("platform", "system.platform", overrides)
        platform = load_part("platform", spec.platform.preset, where="system.platform",
                             **overrides)
    rental = spec.price_usd_per_hour
    if platform is not None and platform.rented:
        if rental is not None:
            raise RldseError(f"the rented platform {platform.name} has its hourly price: "
                             "drop price_usd_per_hour, or override platform."
                             "cloud_usd_per_hour", where="system.price_usd_per_hour")
        rental = nodes.count * (platform.cloud_usd_per_hour or 0.0) or None
    cpu = machine[CPU_KIND][0].spec
    dram_gib = cpu.mem_capacity_bytes / 2**30
    nics = nodes.nics_per_node if nodes.network is not None else \
        (platform.nics if platform is not None else 0)
    parts = []  # (item, preset, count, unit price): a CPU by its sockets
    for kind, insts in machine.items():
        per = getattr(insts[0].spec, "sockets", 1)
        parts.append((kind, insts[0].preset, len(insts) * per, insts[0].spec.price_usd / per))
    items = node_items(parts, platform, dram_gib, nics)
    return Ownership(items=items, platform=platform, knobs=spec.cost or CostKnobs(),
                     runs_per_machine=runs, nodes=nodes.count, dram_gib=dram_gib, nics=nics,
                     rental_usd_per_hour=rental)


def _fabric(spec: Any, trace: Trace, gpus: tuple[Instance, ...], per_node: int
            ) -> FabricSpec:
    """The spec's fabric preset with its overrides, else PCIe through the host at the
    GPUs' host link with as many GPUs as a node has."""
    if spec.fabric is not None:
        overrides = dict(spec.fabric.model_extra or {})
        _check_part_fields("fabric", "system.fabric", overrides)
        return load_part("fabric", spec.fabric.preset, where="system.fabric", **overrides)
    overrides: dict[str, Any] = {"gpus": max(1, per_node)}
    link = getattr(gpus[0].spec, "host_link", None) if gpus else None
    if link:
        overrides["link_gbs"] = load_part("link", link).bandwidth_gbs
    return load_part("fabric", DEFAULT_FABRIC, where="system.fabric", **overrides)


def _check_learner_gpus(knobs: BaseModel, parts: dict[str, tuple[Instance, ...]],
                        placement: dict[str, str], nodes: Nodes) -> None:
    """Data-parallel learners need that many GPUs of the learn role's kind, whole nodes'
    worth when they span nodes."""
    want = getattr(knobs, "learner_gpus", None) or 1
    if want == 1:
        return
    where, kind = "workload.learner_gpus", placement.get("learn", CPU_KIND)
    if not PART_KINDS[kind].issues_kernels:
        raise RldseError(f"{want} data-parallel learners need placement.learn on a GPU "
                         f"(it is '{kind}')", where=where)
    present, per = len(parts[kind]), nodes.gpus_per_node
    if want > present:
        raise RldseError(f"{want}, but the system has {present} {kind} "
                         f"({nodes.count} node{'s' * (nodes.count > 1)} × {per})",
                         where=where)
    if want > per and want % per:
        raise RldseError(f"{want} learners over nodes of {per} {kind}: expected at most "
                         f"{per} or a multiple of {per} (whole nodes)", where=where)


def capture_host_cpu(trace: Trace) -> CpuSpec:
    """The CPU the trace was captured on, as a part spec (the 'host' preset from its
    fingerprint): what every CPU model scales measured times from (rldse.sim.machine), and
    what a spec's ``cpu: {preset: host}`` resolves to before its overrides."""
    return cpu_from_host(trace.meta.host)


def resolve_parts(spec: Any, trace: Trace, where: str = "") -> dict[str, tuple[Instance, ...]]:
    """Every part the spec holds, by kind: its presets (the CPU preset 'host' from the
    trace's fingerprint) with overrides, as the kind's instances; errors name
    ``where`` + the part's path."""
    def load(kind: str, preset: str, at: str, overrides: dict[str, Any]):
        _check_part_fields(kind, at, overrides)
        return load_part(kind, preset, host=trace.meta.host, where=at, **overrides)

    parts: dict[str, tuple[Instance, ...]] = {}
    for name, ref in spec.present().items():
        kind = PART_KINDS[name]
        insts = tuple(kind.instances(kind, ref, load, f"{where}{name}"))
        if insts:
            parts[name] = insts
    return parts


def _check_part_fields(kind: str, where: str, overrides: dict[str, Any]) -> None:
    """Refuse a field neither the section (preset, count) nor the part's spec has, with
    the closest names of both."""
    section = [f for f in PART_KINDS[kind].ref.model_fields if f not in overrides]
    fields = spec_fields(PART_KINDS[kind].spec)
    for key in overrides:
        if key not in fields:
            raise RldseError(f"unknown field{did_you_mean(key, section + fields)} (allowed: "
                             f"{', '.join(section + fields)})", where=f"{where}.{key}")


def _placement(spec: Any, parts: dict[str, tuple[Instance, ...]],
               workload: Workload) -> dict[str, str]:
    """Every role on a kind that can run it, that the system has, and that the workload's
    program places there; a role the program does not use may only stay on the CPU."""
    out = {}
    for role, kind in spec.placement.model_dump(exclude={"protocol"}).items():
        where = f"placement.{role}"
        if role not in PART_KINDS.lookup(kind, where).roles:
            raise RldseError(f"a {kind} part cannot run {role} (kinds that can: "
                             f"{', '.join(kinds_for(role))})", where=where)
        allowed = workload.placements.get(role)
        if allowed is None:
            if kind != CPU_KIND:
                raise RldseError(f"{workload.name} programs place nothing on '{role}' "
                                 f"(leave it unset; they place: {', '.join(workload.placements)})",
                                 where=where)
            continue
        if not workload.places(role, kind):
            kinds = [k for k in kinds_for(role) if workload.places(role, k)]
            raise RldseError(f"{workload.name} programs run {role} on "
                             f"{' or '.join(kinds)}, not '{kind}'", where=where)
        if kind not in parts:
            raise RldseError(f"'{kind}' but the system has no {kind} (add a '{kind}:' part)",
                             where=where)
        out[role] = kind
    if CPU_KIND not in parts:
        raise RldseError("a system needs a cpu part (env steps run on its cores)", where="cpu")
    return out


def _protocol(spec: Any, workload: Workload) -> str | None:
    """``placement.protocol``, one of the family's (unset: its first; None for families
    that name none)."""
    name = spec.placement.protocol
    if not workload.protocols:
        if name is not None:
            raise RldseError(f"{workload.name} programs have one way to place their roles "
                             "(leave it unset)", where="placement.protocol")
        return None
    if name is None:
        return workload.protocols[0]
    if name not in workload.protocols:
        raise RldseError(f"'{name}': expected one of {', '.join(workload.protocols)}"
                         f"{did_you_mean(name, list(workload.protocols))}",
                         where="placement.protocol")
    return name


@cache
def code_version() -> str:
    """rldse's version plus a hash of the code that turns numbers into results (models,
    engine, workload programs and the work counts they use), so a changed model constant
    misses the cache too."""
    from rldse import __version__

    h = hashlib.sha256()
    root = resources.files("rldse")
    for sub in ("kernels", "models", "sim", "workloads"):
        for path in sorted(Path(str(root.joinpath(sub))).rglob("*.py")):
            h.update(path.relative_to(Path(str(root))).as_posix().encode())
            h.update(path.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def _digest(body: dict[str, Any], files: dict[str, str]) -> str:
    text = json.dumps({"body": body, "files": files}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]

