"""Trace: the hardware-free record of what a real training run did (schema v2).

A Trace is three things, kept as free of the capture machine as possible:

- ``ops``: one row per operation instance (columns in ``OPS_COLUMNS``);
- ``meta``: who/what/where: algorithm, env, hyperparameters, seed, learning curve,
  library versions and the host fingerprint (``TraceMeta``);
- ``transitions`` (optional): the experience the run produced or consumed, for
  workloads whose replay needs it (tabular datasets in SwiftRL's format).

On disk it is one Parquet file: the table is ``ops``; ``meta`` is JSON under the
file's key ``rldse.meta``; ``transitions`` is a zstd-compressed Arrow IPC stream,
base64-encoded, under ``rldse.transitions``. The digest hashes all three canonically,
independent of Parquet's encoding, so equal content gives equal digests; `Trace.save`
writes it under ``rldse.digest`` and `load_trace` recomputes it, so a file changed after
it was written, or without its digest, is refused. `load_trace` also refuses rows no capture writes (`check_rows`: duplicates,
phases that did no work, CPU time 0 throughout).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rldse.errors import RldseError, validation_error
from rldse.files import atomic_write
from rldse.host import HostFingerprint
from rldse.kernels.network_work import OPERATOR_KINDS

if TYPE_CHECKING:  # pandas and pyarrow load on first use: the vocabularies and TraceMeta
    import pandas as pd  # are read by commands that never touch a table (parsers, presets)

#: v3: network operations list their operators (``TraceMeta.operators``) and the file
#: carries its digest. Older traces are refused (``_read_meta``: re-capture them).
SCHEMA_VERSION = 3

#: Phase vocabulary (closed): what each operation is, in RL terms.
PHASES: dict[str, str] = {
    "env_reset": "reset one or more environments",
    "env_step": "step environments (items = environments stepped)",
    "act": "choose actions: policy/Q inference (items = observations)",
    "replay_add": "insert transitions into a replay buffer (items = transitions)",
    "replay_sample": "sample a minibatch from replay (items = batch size)",
    "replay_update": "update priorities after learning (items = priorities)",
    "rollout_add": "append/send on-policy rollout data to the learner (items = transitions)",
    "learn": "one gradient step: forward, backward, optimizer (items = batch size)",
    "sync": "copy parameters: target network or learner-to-actor broadcast",
    "q_update": "tabular Q-learning/SARSA updates (items = transitions)",
    "aggregate": "combine per-agent tables or gradients on the host (items = agents)",
}

#: Phases that run the agent's networks. In a capture whose networks ran on a GPU
#: (``networks_on_gpu``) their host time dispatches to it and waits on it.
NETWORK_PHASES = ("act", "learn")

#: Data types an operation's arithmetic uses; 'none' for pure control/data movement.
DTYPES = ("fp32", "fp64", "int32", "int64", "none")

#: Column name -> (pandas dtype kind, description). Units are in the names.
OPS_COLUMNS: dict[str, tuple[str, str]] = {
    "worker": ("category", "who ran it: 'host', 'learner', 'actor/3', 'agent/12'"),
    "phase": ("category", "one of PHASES"),
    "iter": ("int64", "loop iteration of that worker (env step, update or round number)"),
    "start_s": ("float64", "start, seconds since the capture's origin"),
    "dur_s": ("float64", "measured duration with the recorder's own overhead removed"),
    "cpu_s": ("float64", "CPU time of dur_s: the worker's CPU clock over the operation "
              "(rldse.cpu_clock); NaN where unknown (v1 traces, imports without it)"),
    "items": ("int64", "batch size, transitions or environments the operation handled"),
    "flops": ("int64", "arithmetic operations, counted analytically from shapes"),
    "bytes": ("int64", "bytes read plus written, counted analytically"),
    "touches": ("int64", "irregular (data-dependent) memory accesses, e.g. sum-tree nodes"),
    "dtype": ("category", "one of DTYPES"),
}

#: the largest value of one cell (exact in float64, and far past any real run: 2^53 flops
#: is 9e15) and of a count column's total (int64 sums stay exact below it)
_MAX_VALUE, _MAX_TOTAL = float(2**53), float(2**62)
_INT_COLUMNS = [c for c, (k, _) in OPS_COLUMNS.items() if k == "int64"]
#: Columns a table may leave out (filled as unknown) or hold NaN in.
_OPTIONAL_COLUMNS = ("cpu_s",)

#: Phases whose host time is waiting, not computing, so they are costed from wall time:
#: the time is set by the other side (a pipe, a queue, the learner), not by this CPU.
#: By workload, as each family's registration declares them (``Workload.wait_phases``,
#: published here by ``rldse.workloads.register``, which sits above this module); a
#: workload with none declared has none.
_WAIT_PHASES: dict[str, frozenset[str]] = {}


def set_wait_phases(workload: str, phases: frozenset[str]) -> None:
    """Record ``workload``'s waiting phases for the host-cost rule (``compute_mask``)."""
    _WAIT_PHASES[workload] = frozenset(phases)


_META_KEY = b"rldse.meta"
_TRANSITIONS_KEY = b"rldse.transitions"
_DIGEST_KEY = b"rldse.digest"
#: how deep the metadata's JSON may nest (a real trace's is 4-5 levels)
_MAX_META_DEPTH = 64
#: wall time over which a CPU clock has surely ticked: a trace whose rows took longer and
#: have CPU time 0 on every one did not measure it (the coarsest per-thread CPU clock,
#: Windows', ticks every 15.6 ms; a recording of a few empty phases may read 0 throughout)
_CPU_CLOCK_TICKS_S = 0.05
#: phases whose rows always handle something (items >= 1); ``sync`` copies parameters
_WORK_PHASES = tuple(p for p in PHASES if p != "sync")


class TracedOperator(BaseModel):
    """``count`` calls of operator ``op`` of ``shape`` (rldse.kernels.network_work's
    ``OPERATOR_KINDS``: a GEMM as nn.Linear's B,M,N,K; element-wise and optimizer kernels
    as KERNELS,BYTES,FLOPS in total; state read from memory as BYTES) in one operation of
    ``phase`` that handled ``items``: what the capture's loop ran, from the work it
    counted (the numpy loops' own kernels, or torch's flop counter over the modules)."""

    model_config = ConfigDict(extra="forbid")

    phase: Literal[tuple(PHASES)]  # type: ignore[valid-type]
    items: int = Field(ge=0)
    flops: int = Field(ge=0, description="the flops of the rows it belongs to: with phase and "
                       "items, which rows ran these operators")
    op: Literal[OPERATOR_KINDS]  # type: ignore[valid-type]
    shape: list[int]
    count: int = Field(ge=1)
    source: Literal["loop", "modules"] = Field(
        default="loop", description="'loop': the work a built-in loop counted as it ran "
        "(the same count its simulated twin makes); 'modules': the user's torch modules' "
        "per-layer description (torch.utils.flop_counter), the optimizer as one Adam step")

    @field_validator("shape")
    @classmethod
    def _counts(cls, value: list[int]) -> list[int]:
        if not value or min(value) < 0:
            raise ValueError("expected one or more counts ≥ 0")
        return value


def operator_records(phase: str, items: int, work, flops: int | None = None,
                     source: str = "loop") -> list[TracedOperator]:
    """The operators of one ``phase`` operation at ``items`` that did ``work`` (an
    analytic Work: rldse.kernels.network_work), for the rows of ``flops`` (default: the
    work's own, what the built-in loops record)."""
    key = int(work.flops if flops is None else flops)
    return [TracedOperator(phase=phase, items=int(items), flops=key, op=o.op,
                           shape=list(o.shape), count=o.count, source=source)
            for o in work.operators()]


class SeedCurve(BaseModel):
    """The learning curve of the same capture run with another seed (``rldse capture
    --seeds N``): each episode's return and the env steps completed when it ended."""

    model_config = ConfigDict(extra="forbid")

    seed: int
    end_steps: list[int]
    returns: list[float]


class TraceMeta(BaseModel):
    """Everything about a run except its operations."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    workload: str = Field(description="rldse workload family (tabular, dqn, ddpg, "
                          "actor_learner): the module that captures and simulates the loop")
    algorithm: str = Field(description="q_learning, sarsa, dqn, dqn_per, ddpg, a2c, ...")
    env_id: str
    seed: int
    hyperparameters: dict[str, Any] = Field(default_factory=dict)
    workload_info: dict[str, Any] = Field(
        default_factory=dict,
        description="shapes the simulator needs: network layer sizes, state/action counts, ...",
    )
    episode_returns: list[float] = Field(default_factory=list, description="learning curve")
    seed_curves: list[SeedCurve] = Field(
        default_factory=list, description="learning curves of the same run with further "
        "seeds (capture --seeds N): the interval of steps to a target return")
    wall_time_s: float = Field(ge=0, description="wall time of the captured loop")
    recorder_overhead_ns: float = Field(ge=0, description="per-record bias removed from dur_s")
    library_versions: dict[str, str] = Field(default_factory=dict)
    host: HostFingerprint
    operators: list[TracedOperator] = Field(
        default_factory=list, description="the operators of each network operation (act, "
        "learn, sync) the capture ran, per phase and items")

    @field_validator("hyperparameters", "workload_info", mode="before")
    @classmethod
    def _plain(cls, value: Any, info) -> Any:
        return plain(value, info.field_name) if isinstance(value, dict) else value


def plain(value: Any, where: str) -> Any:
    """``value`` as plain JSON types: a user's script hands over numpy scalars
    (``env.single_action_space.n`` is a numpy.int64), arrays, tuples, paths, torch
    devices and dtypes, which the trace's JSON metadata cannot hold; a 0-d tensor becomes
    its number. Anything else is refused, naming where it sits (``where``: the key path),
    so a recording can check its hyperparameters before training rather than fail at save."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Path):
        return str(value)
    kind = f"{type(value).__module__}.{type(value).__name__}"
    if kind in ("torch.device", "torch.dtype"):
        return str(value)
    if kind == "torch.Tensor" and value.ndim == 0:
        return value.item()
    raise RldseError(f"a {kind} is not a plain value (number, string, list or dict of "
                     "them)", where=where)


@dataclass
class Trace:
    ops: pd.DataFrame
    meta: TraceMeta
    transitions: pd.DataFrame | None = None
    source: str = field(default="ops", repr=False, compare=False)  # names errors: file or 'ops'
    _digest: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.ops = normalize_ops(self.ops, where=self.source)

    # ---- content -------------------------------------------------------------------
    @property
    def digest(self) -> str:
        """sha256 of the canonical content (ops, meta, transitions); 16 hex digits."""
        return self.full_digest[:16]

    @property
    def full_digest(self) -> str:
        """sha256 of the canonical content, all 64 hex digits (written into the file)."""
        if self._digest is None:
            self._digest = _digest(self)
        return self._digest

    @property
    def env_steps(self) -> int:
        """Environment steps the run took: the items of its env_step rows."""
        return int(self.ops.loc[self.ops["phase"] == "env_step", "items"].sum())

    def phase_summary(self) -> pd.DataFrame:
        """Per (worker kind, phase): count, time and work, for `rldse trace info`."""
        kind = self.ops["worker"].astype(str).str.split("/").str[0]
        g = self.ops.assign(worker_kind=kind).groupby(["worker_kind", "phase"], observed=True)
        out = g.agg(
            ops=("dur_s", "size"),
            time_s=("dur_s", "sum"),
            cpu_s=("cpu_s", "sum"),
            mean_us=("dur_s", "mean"),
            items=("items", "sum"),
            flops=("flops", "sum"),
            bytes=("bytes", "sum"),
            touches=("touches", "sum"),
        )
        out["mean_us"] *= 1e6
        known = g["cpu_s"].count()  # sum() of all-NaN is 0: mark phases without CPU time
        out.loc[known == 0, "cpu_s"] = np.nan
        return out

    def host_cost_s(self) -> np.ndarray:
        """Each op's host cost (``host_cost_s``) under this trace's capture."""
        return host_cost_s(self.ops, self.meta)

    @cached_property
    def compute_wall_per_cpu(self) -> float | None:
        """Wall time / CPU time of the compute rows (``host_cost_s`` costs from CPU time):
        1 on a quiet host; None where no row has CPU time."""
        ops = self.ops
        mask = compute_mask(ops, self.meta) & ops["cpu_s"].notna().to_numpy()
        cpu = float(ops["cpu_s"].to_numpy()[mask].sum())
        return float(ops["dur_s"].to_numpy()[mask].sum()) / cpu if cpu > 0 else None

    # ---- I/O -----------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the trace to `path` atomically: a run killed mid-write leaves the old
        file (or none), never a torn one."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = Path(path)
        table = pa.Table.from_pandas(self.ops, preserve_index=False, nthreads=1)
        md = dict(table.schema.metadata or {})
        md[_META_KEY] = self.meta.model_dump_json().encode()
        if self.transitions is not None:
            md[_TRANSITIONS_KEY] = _encode_frame(self.transitions)
        md[_DIGEST_KEY] = self.full_digest.encode()
        table = table.replace_schema_metadata(md)
        categorical = [c for c, (kind, _) in OPS_COLUMNS.items() if kind == "category"]
        return atomic_write(path, lambda tmp: pq.write_table(  # dictionaries pay only there
            table, tmp, compression="zstd", use_dictionary=categorical))


def networks_on_gpu(meta: TraceMeta) -> bool:
    """Whether the capture ran its networks on a GPU (rldse.recording records the CUDA
    device's per-phase time as ``workload_info["cuda"]``)."""
    return "cuda" in meta.workload_info


def compute_mask(ops: pd.DataFrame, meta: TraceMeta | None) -> np.ndarray:
    """Rows that compute on the host (costed from CPU time): not the workload's
    wait phases (``set_wait_phases``), and not the NETWORK_PHASES of a capture whose networks ran on a GPU (the
    host waits on the device there, so wall time)."""
    waits = frozenset()
    if meta is not None:
        if not _WAIT_PHASES:  # no family registered: the rule would miss their waits
            raise RuntimeError("rldse.trace.compute_mask: no workload registered its wait "
                               "phases; import rldse.workloads first")
        waits = _WAIT_PHASES.get(meta.workload, frozenset()) \
            | (frozenset(NETWORK_PHASES) if networks_on_gpu(meta) else frozenset())
    return ~ops["phase"].isin(list(waits)).to_numpy()


def host_cost_s(ops: pd.DataFrame, meta: TraceMeta | None) -> np.ndarray:
    """The one rule for what an op cost the capture host, seconds: its CPU time where it
    computes on the host (``compute_mask``), so time the OS gave other processes is not
    the op's; its wall time where it waits (IPC, device sync), since waiting takes wall
    time whoever else runs. Where CPU time is unknown (v1 traces, imports) it falls back
    to wall time, contention included."""
    dur = ops["dur_s"].to_numpy(np.float64)
    if "cpu_s" not in ops.columns:  # optional: a table built by hand may leave it out
        return dur
    cpu = ops["cpu_s"].to_numpy(np.float64)
    use_cpu = compute_mask(ops, meta) & ~np.isnan(cpu)
    return np.where(use_cpu, cpu, dur)


def normalize_ops(ops: pd.DataFrame, where: str) -> pd.DataFrame:
    """Check an ops table against the schema and return it with canonical dtypes; an
    optional column left out (``cpu_s``) is filled as unknown (NaN).

    Raises RldseError naming the column (and row) at fault.
    """
    import pandas as pd

    missing = [c for c in OPS_COLUMNS if c not in ops.columns and c not in _OPTIONAL_COLUMNS]
    if missing:
        raise RldseError(f"{where}: column '{missing[0]}' is missing (schema v{SCHEMA_VERSION} "
                         f"needs {', '.join(OPS_COLUMNS)})")
    extra = [c for c in ops.columns if c not in OPS_COLUMNS]
    if extra:
        raise RldseError(f"{where}: unexpected column '{extra[0]}' (schema v{SCHEMA_VERSION} "
                         f"has {', '.join(OPS_COLUMNS)})")
    out = {}
    for col, (kind, _) in OPS_COLUMNS.items():
        if col not in ops.columns:
            out[col] = np.full(len(ops), np.nan)
        elif kind == "category":
            out[col] = _categorical_column(ops[col], col, where)
        else:
            out[col] = _numeric_column(ops[col], col, np.dtype(kind), where)
    return pd.DataFrame(out)


def _categorical_column(s: pd.Series, col: str, where: str) -> pd.Categorical:
    import pandas as pd

    if not (isinstance(s.dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(s)
            or s.dtype == object):
        raise RldseError(f"{where}: column '{col}' must hold strings, found {s.dtype}")
    vocab = PHASES if col == "phase" else DTYPES if col == "dtype" else None
    if isinstance(s.dtype, pd.CategoricalDtype) and all(
            isinstance(c, str) for c in s.cat.categories):  # the work is on the categories
        cats, codes = list(s.cat.categories), s.cat.codes.to_numpy()
        if (cats == sorted(cats) and (vocab is None or set(vocab).issuperset(cats))
                and codes.min(initial=0) >= 0
                and np.bincount(codes, minlength=len(cats)).all()):
            return s.array  # already canonical: every category used, sorted, known
        s = s.cat.remove_unused_categories()
        known = set(vocab) if vocab is not None else set(s.cat.categories)
        if known.issuperset(s.cat.categories):
            return s.cat.reorder_categories(sorted(s.cat.categories)).array
    values = s.astype(str)
    if vocab is not None:
        bad = ~values.isin(list(vocab))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise RldseError(f"{where}: column '{col}' has unknown value '{values.iloc[row]}' "
                             f"at row {row} (expected one of {', '.join(vocab)})")
    return pd.Categorical(values)


def _numeric_column(s: pd.Series, col: str, target: np.dtype, where: str) -> np.ndarray:
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        raise RldseError(f"{where}: column '{col}' must be numeric ({target}), found {s.dtype}")
    arr = s.to_numpy()
    as_float = arr.astype(np.float64)
    finite = np.isfinite(as_float) | (np.isnan(as_float) if col in _OPTIONAL_COLUMNS else False)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise RldseError(f"{where}: column '{col}' is not finite at row {row}")
    if target.kind == "i" and arr.dtype.kind == "f" and np.any(arr != np.round(arr)):
        raise RldseError(f"{where}: column '{col}' must hold whole numbers")
    if col != "start_s" and np.any(as_float < 0):
        row = int(np.flatnonzero(as_float < 0)[0])
        raise RldseError(f"{where}: column '{col}' is negative at row {row}")
    too_big = np.abs(as_float) > _MAX_VALUE
    if too_big.any():
        row = int(np.flatnonzero(too_big)[0])
        raise RldseError(f"{where}: column '{col}' is {as_float[row]:.3g} at row {row} "
                         f"(allowed: -2^53 to 2^53)")
    if target.kind == "i" and col != "iter" and as_float.sum() > _MAX_TOTAL:
        raise RldseError(f"{where}: column '{col}' sums to {as_float.sum():.3g} "
                         "(allowed: at most 2^62 over the trace)")
    return arr.astype(target, copy=False)


def load_trace(path: str | Path) -> Trace:
    """Read and validate a trace file. Raises RldseError with one line on any problem."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise RldseError(f"{path}: no such file")
    try:
        pf = pq.ParquetFile(path)
        table = pf.read()
    except (pa.ArrowException, OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RldseError(f"{path}: not a readable Parquet trace, damaged or not a trace "
                         f"({first})") from None
    md = table.schema.metadata or {}
    if _META_KEY not in md:
        raise RldseError(f"{path}: Parquet file has no rldse metadata (key 'rldse.meta'); "
                         "is it a trace written by rldse?")
    meta = _read_meta(path, md[_META_KEY])
    stored = md.get(_DIGEST_KEY)
    transitions = None
    if _TRANSITIONS_KEY in md:
        try:
            transitions = _decode_frame(md[_TRANSITIONS_KEY])
        except Exception as exc:  # noqa: BLE001  pyarrow and pandas raise a dozen kinds
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RldseError(f"{path}: embedded transitions are unreadable ({first})") from None
    try:
        trace = Trace(ops=table.to_pandas(), meta=meta, transitions=transitions,
                      source=str(path))
    except RldseError as exc:
        if stored is None:
            raise
        raise RldseError(f"{exc}: this trace was modified after capture") from None
    if stored is not None and stored.decode("ascii", "replace") != trace.full_digest:
        raise RldseError(f"{path}: this trace was modified after capture (its content no "
                         "longer matches the digest written with it)")
    check_rows(trace.ops, str(path))
    if stored is None:  # last: a damaged table says what is wrong with it first
        raise RldseError(f"{path}: trace without its digest (key 'rldse.digest'): not "
                         "written by rldse, or modified after capture")
    return trace


def _read_meta(path: Path, blob: bytes) -> TraceMeta:
    """The metadata JSON as TraceMeta: version and every field of its own type (a
    boolean is no version, 2.0 no count), nesting bounded."""
    try:
        raw = json.loads(blob)
    except json.JSONDecodeError as exc:
        raise RldseError(f"{path}: metadata 'rldse.meta' is not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise RldseError(f"{path}: metadata 'rldse.meta' is not UTF-8 (byte {exc.start})") \
            from None
    except RecursionError:
        raise RldseError(f"{path}: metadata 'rldse.meta' nests deeper than "
                         f"{_MAX_META_DEPTH} levels") from None
    if _depth(raw) > _MAX_META_DEPTH:
        raise RldseError(f"{path}: metadata 'rldse.meta' nests deeper than "
                         f"{_MAX_META_DEPTH} levels")
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if type(version) is int and 1 <= version < SCHEMA_VERSION:
        raise RldseError(f"{path}: a schema v{version} trace; this rldse reads v"
                         f"{SCHEMA_VERSION} (network operations list their operators): "
                         "re-capture it with this rldse's `rldse capture` (traces/make.sh "
                         "holds the shipped traces' commands)")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise RldseError(f"{path}: schema_version {version!r} is not supported "
                         f"(this rldse reads version {SCHEMA_VERSION})")
    try:
        return TraceMeta.model_validate_json(blob, strict=True)
    except ValidationError as exc:
        raise validation_error(exc, "meta").within(str(path)) from None


def _depth(value: Any) -> int:
    """How deep JSON ``value`` nests (a scalar: 0), without recursing."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth + 1)
            if deepest > _MAX_META_DEPTH:
                return deepest
            stack.extend((v, depth + 1) for v in (node.values() if isinstance(node, dict)
                                                  else node))
    return deepest


def check_rows(ops: pd.DataFrame, where: str) -> None:
    """Refuse rows no capture writes, which would change the answer unseen: a row twice
    (same worker, phase, iteration and start), a working phase's row with no items, and
    CPU time recorded as 0 on every row that has it (over _CPU_CLOCK_TICKS_S of wall time)."""
    dup = ops.duplicated(["worker", "phase", "iter", "start_s"]).to_numpy()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise RldseError(f"{where}: row {row} repeats an earlier row (same worker, phase, "
                         f"iter and start_s); {int(dup.sum()):,} rows are duplicates")
    idle = (ops["phase"].isin(list(_WORK_PHASES)) & (ops["items"] < 1)).to_numpy()
    if idle.any():
        row = int(np.flatnonzero(idle)[0])
        raise RldseError(f"{where}: column 'items' is {int(ops['items'].iloc[row])} at row "
                         f"{row} (phase '{ops['phase'].iloc[row]}' handles at least 1)")
    cpu = ops["cpu_s"].to_numpy(np.float64)
    known = ~np.isnan(cpu)
    wall_s = ops["dur_s"].to_numpy()[known].sum()
    if known.any() and not (cpu[known] > 0).any() and wall_s > _CPU_CLOCK_TICKS_S:
        raise RldseError(f"{where}: column 'cpu_s' is 0 on every row (a capture measures "
                         "each operation's CPU time; unknown is NaN)")


# ---- helpers ---------------------------------------------------------------------------

def _encode_frame(df: pd.DataFrame) -> bytes:
    import pyarrow as pa

    sink = io.BytesIO()
    table = pa.Table.from_pandas(df, preserve_index=False)
    opts = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(sink, table.schema, options=opts) as writer:
        writer.write_table(table)
    return base64.b64encode(sink.getvalue())


def _decode_frame(blob: bytes) -> pd.DataFrame:
    import pyarrow as pa

    with pa.ipc.open_stream(base64.b64decode(blob, validate=True)) as reader:
        return reader.read_all().to_pandas()


def _hash_frame(h: hashlib._Hash, df: pd.DataFrame) -> None:
    """Numbers as their little-endian bytes; categories and text as pandas' per-value
    SipHash (``hash_pandas_object``, fixed key: the same on every process and platform,
    and independent of a categorical's category order), so equal values hash equally."""
    import pandas as pd

    for col in df.columns:
        s = df[col]
        if col in _OPTIONAL_COLUMNS and s.isna().all():
            continue  # unknown throughout: the digest of a trace from before the column
        h.update(str(col).encode() + b"\0")
        if isinstance(s.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(s):
            if not isinstance(s.dtype, pd.CategoricalDtype):
                s = s.astype(str)  # mixed objects hash by their text, as before
            h.update(b"text")
            hashed = pd.util.hash_pandas_object(s, index=False).to_numpy()
            h.update(np.ascontiguousarray(hashed, dtype="<u8").tobytes())
        else:
            arr = s.to_numpy()
            h.update(str(s.dtype).encode())
            h.update(np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes())


def _digest(trace: Trace) -> str:
    h = hashlib.sha256(b"rldse-trace-digest/2\0")  # v2: hashed text (v1 joined strings)
    meta = trace.meta.model_dump(mode="json")
    if not meta["seed_curves"]:  # a trace without them keeps the digest it had before them
        del meta["seed_curves"]
    h.update(json.dumps(meta, sort_keys=True).encode())
    _hash_frame(h, trace.ops)
    if trace.transitions is not None:
        h.update(b"transitions")
        _hash_frame(h, trace.transitions)
    return h.hexdigest()
