"""`rldse.recording`: record a user's own training loop, phase by phase, as a Trace.

The loop marks its operations with ``rec.phase(name, ...)``; the trace vocabulary
(rldse.trace.PHASES) is the only allowed set. Time is kept as a log of cuts
(rldse.recording.cuts): entering a phase cuts once, leaving it cuts once more (back to
the enclosing phase, or to no phase), so a phase inside another is exclusive: the outer
row loses the inner one's time and recording cost. Integrations that tile a loop into
back-to-back operations (rldse.integrations.sb3) cut directly, one clock read per
boundary, with kinds registered by ``Recording.kind``.

The recorder's own time is calibrated in tight loops on a scratch log (RL-Scope's
calibration, Gleeson et al., MLSys 2021) and removed: the cost of a bare cut (when the
recording starts), and a phase's extra cost (building its context manager, entering and
leaving it), which falls before its first cut (calibrated when first needed: a loop cut
only by an integration never pays it). Each row loses the part of its cuts' cost inside
it; the trace's wall time (``Recording.stop``) and every row's start lose the recorder's
whole time before them, and the time spent counting work, so the gaps between rows (which
the actor-learner program reads as IPC handoffs) are the loop's, not the recorder's.

Defaults, each overridable per phase: ``iter`` is the vector env step for env-side phases
(``env_step``, ``act``, ...), the learner update for ``learn`` and the iteration for
``sync`` and ``rollout_add``; ``items`` is ``n_envs`` for env-side phases and
``batch_size`` for learner phases; ``act`` and ``learn`` work (flops, bytes) come from the
network (rldse.recording.network), the others' is 0 unless given. An ``act`` that chose at
random passes ``flops=0, bytes=0`` (the programs keep such acts on the CPU).

On a CUDA network, each cut also records a CUDA event: dispatch time stays in ``dur_s``
(host) and the kernels' device time between a row's cuts is summed per phase into
``workload_info["cuda"]`` (events are resolved at the end, never synchronising inside).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from rldse.errors import RldseError
from rldse.host import load_sample
from rldse.recording.cuts import Cuts, Rows, closed_before, rows
from rldse.recording.info import workload_info
from rldse.recording.loops import loop_kind, loops
from rldse.recording.network import Network, is_module
from rldse.threads import current_torch_threads
from rldse.trace import PHASES, Trace, plain
from rldse.workloads import WORKLOADS

if TYPE_CHECKING:
    import pandas as pd

#: Calibration: blocks of bare cuts (or of empty phases), timed; the median is the cost.
_CALIBRATION_BLOCKS = 15
_CALIBRATION_PER_BLOCK = 100
#: Phases the environment side runs (items = envs, iter = vector step); others: learner.
_ENV_PHASES = frozenset({"env_reset", "env_step", "act", "replay_add"})
#: Phases that carry the network's work by default, and whether they run a backward.
_NETWORK_PHASES = {"act": False, "learn": True}  # rldse.trace.NETWORK_PHASES, with backward
#: Phases counted per occurrence (their iter is their own count).
_COUNTED = frozenset({"learn", "sync", "rollout_add"})
_DTYPE = {"env_reset": "fp64", "env_step": "fp64", "sync": "none", "rollout_add": "none"}


class Kind(NamedTuple):
    """A row's phase and defaults; ``phase_api``: its rows are opened by ``phase`` (whose
    extra cost the calibration knows) rather than by a bare cut."""

    name: str
    worker: str
    items: int
    flops: int
    bytes: int
    touches: int
    dtype: str
    phase_api: bool


#: What code 0 (GAP) reads as, where every code needs a kind's fields.
_NO_KIND = Kind("", "", 0, 0, 0, 0, "", False)


class _Phase:
    """``with rec.phase(...)``: a cut into its row on entry, back out on exit."""

    __slots__ = ("cuts", "code", "iter", "parent")

    def __init__(self, cuts: Cuts, code: int, iter: int | None) -> None:
        self.cuts, self.code, self.iter = cuts, code, iter

    def __enter__(self) -> _Phase:
        cuts = self.cuts
        self.parent = cuts.open
        row = cuts.cut(self.code)
        if self.iter is not None:
            cuts.iters[row] = self.iter
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.cuts.back(self.parent)


class Recording:
    """A recording in progress: ``phase`` marks operations, ``episode`` the returns."""

    def __init__(self, path: str | Path, *, loop: str, env_id: str, network: Any = None,
                 obs_shape: tuple[int, ...] | None = None, seed: int = 0,
                 algorithm: str | None = None, actor: str = "actor/0",
                 learner: str = "learner", **hyperparameters: Any) -> None:
        self.path = Path(path)
        if self.path.suffix != ".parquet":
            raise RldseError(f"{self.path}: a trace file must end in .parquet",
                             where="recording: path")
        self.loop = loop_kind(loop)
        separate = bool(self.loop.learner_phases)  # an actor and a learner worker
        if not separate and (actor, learner) != ("actor/0", "learner"):
            split = [name for name in loops() if loop_kind(name).learner_phases]
            raise RldseError(f"actor and learner worker names apply to the "
                             f"{' or '.join(split)} loop, not {loop!r}", where="recording")
        nets = _networks(network, obs_shape)
        self.workload = self.loop.workload(nets)
        recording = WORKLOADS[self.workload].recording
        need, one = recording.networks, recording.one_network
        if one is not None and set(nets) == {"q"}:  # one module: the loop's one network
            nets = {one: nets["q"]}
        if set(nets) != set(need) and (one is None or set(nets) != {one}):
            given = ", ".join(sorted(nets)) or "none"
            also = f" (or one network: a module, or {{'{one}': ...}})" if one else ""
            raise RldseError(f"the {loop} loop ({self.workload}) needs "
                             f"{_network_form(need)}{also}, got {given}",
                             where="recording: network")
        self.nets = nets
        self.env_id, self.seed = env_id, int(seed)
        self.algorithm = algorithm or self.workload
        self.hyperparameters = plain(dict(hyperparameters), "recording: hyperparameters")
        self.info = workload_info(self.workload, nets, self.hyperparameters)
        self.actor = actor if separate else "host"
        self.learner = learner if separate else "host"
        self.n_envs = int(self.info.get("envs_per_actor", hyperparameters.get("n_envs", 1)))
        self.batch = int(self.info.get("batch_size", self.info.get("minibatch_size", 1)))
        self.rollout_len = int(self.info.get("rollout_len", 0))
        self.returns: list[float] = []
        self._roles = {p: (p in _ENV_PHASES, self.learner if p in self.loop.learner_phases
                           else self.actor) for p in PHASES}
        self._work: dict[tuple[str, int], tuple[int, int]] = {}
        self.kinds: list[Kind | None] = [None]  # code -> Kind (code 0: GAP)
        self._codes: dict[tuple, int] = {}
        self._counted: list[tuple[int, int]] = []  # (cuts so far, ns spent counting work)
        self.cuts = _cuts(nets)
        self.cut_cost_ns = self._calibrate_cut()
        self._phase_cost_ns: float | None = None
        self._load_start = load_sample()
        self._t0 = perf_counter_ns()
        self.cuts.cpu.sample(self._t0)
        self._end_ns: int | None = None
        self._wall_s: float | None = None
        #: torch's threads and who chose them (rldse.threads.TorchThreads.stop), set by an
        #: integration that pinned them; else the trace records torch's count as it ends
        self.torch_threads: tuple[int, str] | None = None

    # ---- marking -----------------------------------------------------------------
    def phase(self, name: str, *, items: int | None = None, flops: int | None = None,
              bytes: int | None = None, touches: int = 0, dtype: str | None = None,
              iter: int | None = None, worker: str | None = None) -> _Phase:
        """A context manager timing one operation of phase ``name``."""
        code = self._codes.get((name, items, flops, bytes, touches, dtype, worker, True))
        if code is None:
            code = self._register(name, items, flops, bytes, touches, dtype, worker, True)
        return _Phase(self.cuts, code, None if iter is None else int(iter))

    def kind(self, name: str, *, items: int | None = None, flops: int | None = None,
             bytes: int | None = None, touches: int = 0, dtype: str | None = None,
             worker: str | None = None) -> int:
        """The code of a row kind for ``cuts.cut`` (defaults as ``phase`` fills them)."""
        code = self._codes.get((name, items, flops, bytes, touches, dtype, worker, False))
        if code is None:
            code = self._register(name, items, flops, bytes, touches, dtype, worker, False)
        return code

    def _register(self, name: str, items: int | None, flops: int | None, bytes: int | None,
                  touches: int, dtype: str | None, worker: str | None,
                  phase_api: bool) -> int:
        """A new kind's code, its defaults filled in."""
        key = (name, items, flops, bytes, touches, dtype, worker, phase_api)
        if name not in self._roles:
            raise RldseError(f"unknown phase {name!r} (allowed: {', '.join(PHASES)})",
                             where="recording")
        env_side, role = self._roles[name]
        if items is None:
            items = self.n_envs if env_side else self.batch
        if (flops is None or bytes is None) and name in _NETWORK_PHASES and self.nets:
            work = self._work.get((name, items))
            if work is None:
                work = self._work[(name, items)] = self.work(name, items)
            flops = work[0] if flops is None else flops
            bytes = work[1] if bytes is None else bytes
        flops, bytes = flops or 0, bytes or 0
        if dtype is None:
            dtype = _DTYPE.get(name, "fp32" if flops or bytes else "none")
        self.kinds.append(Kind(name, worker or role, int(items), int(flops), int(bytes),
                               int(touches), dtype, phase_api))
        code = self._codes[key] = len(self.kinds) - 1
        return code

    def episode(self, return_: float) -> None:
        """One finished episode's return (the learning curve; its end is an env_reset)."""
        self.returns.append(float(return_))

    def work(self, phase: str, items: int) -> tuple[int, int]:
        """(flops, bytes) of ``phase`` (act: the acting networks' forward; learn: every
        network's forward, backward and Adam step) at ``items`` observations."""
        backward = _NETWORK_PHASES[phase]
        names = [k for k in self.nets if backward or k in ("q", "actor", "policy", "value")]
        totals = [self.net_work(k, items, backward) for k in names]
        return sum(f for f, _ in totals), sum(b for _, b in totals)

    def net_work(self, name: str, items: int, backward: bool) -> tuple[int, int]:
        """(flops, bytes) of network ``name`` at ``items``; the time spent counting (once
        per shape) is the recorder's, not the loop's (``stop``)."""
        t0 = perf_counter_ns()
        work = self.nets[name].work(items, backward)
        self._counted.append((len(self.cuts), perf_counter_ns() - t0))
        return work

    def _calibrate_cut(self) -> float:
        """Median cost of a bare cut (ns), over blocks of cut-and-gap pairs on a scratch log."""
        scratch, code = type(self.cuts)(), self.kind("env_step")

        def block() -> None:
            for _ in range(_CALIBRATION_PER_BLOCK):
                scratch.cut(code)
                scratch.gap()
        return _median_block_ns(block, 2 * _CALIBRATION_PER_BLOCK)

    @property
    def phase_cost_ns(self) -> float:
        """Median whole cost of an empty ``with rec.phase(...)`` (ns), calibrated once, on
        first need, on a scratch log (swapped in for the recording's own)."""
        if self._phase_cost_ns is None:
            def block() -> None:
                for _ in range(_CALIBRATION_PER_BLOCK):
                    with self.phase("env_step"):
                        pass
            cuts, self.cuts = self.cuts, type(self.cuts)()
            try:
                self._phase_cost_ns = _median_block_ns(block, _CALIBRATION_PER_BLOCK)
            finally:
                self.cuts = cuts
        return self._phase_cost_ns

    # ---- the trace ---------------------------------------------------------------
    def stop(self) -> None:
        """End the timed span; called by ``trace`` if not before. The trace's wall time is
        the span less the recorder's own time (every cut's calibrated cost, RL-Scope's
        correction, and the time spent counting work): what the loop would have taken
        unrecorded. The span as measured is kept in workload_info as ``recorded_wall_s``."""
        if self._end_ns is None:
            self._end_ns = perf_counter_ns()
            self.cuts.cpu.sample(self._end_ns)
            self._recorded_wall_s = (self._end_ns - self._t0) / 1e9
            self._log = self.cuts.arrays()
            self._own = before, after, _ = self._costs(self._log[1])
            own_ns = float(before.sum() + after.sum()) + sum(ns for _, ns in self._counted)
            self._wall_s = max(self._recorded_wall_s - own_ns / 1e9, 0.0)

    def _costs(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per cut (of kind ``codes``): the recorder's time before its clock read, after it,
        and the time spent counting work before it (cumulative)."""
        api = self._per_kind("phase_api")
        before = np.full(len(codes), self.cut_cost_ns / 2)
        if api.any():  # a phase's build and entry precede its cut
            before[api[np.maximum(codes, 0)]] += max(self.phase_cost_ns - 2 * self.cut_cost_ns,
                                                     0.0)
        after = np.full(len(codes), self.cut_cost_ns / 2)
        counted = np.zeros(len(codes) + 1)
        for at, ns in self._counted:
            counted[at] += ns
        return before, after, np.cumsum(counted)[:len(codes)]

    def rows(self) -> Rows:
        self.stop()
        return rows(*self._log, self._end_ns, *self._own, cpu=self.cuts.cpu)

    def frame(self, r: Rows) -> pd.DataFrame:
        """The rows as an ops table (rldse.trace.OPS_COLUMNS), built by column."""
        import pandas as pd

        def column(field: str) -> np.ndarray:
            return self._per_kind(field)[r.kind]

        present = np.zeros(len(self.kinds), dtype=bool)
        present[r.kind] = True

        def categorical(field: str) -> pd.Categorical:  # canonical: used categories, sorted
            values = self._per_kind(field)
            labels = sorted(set(values[present].tolist()))
            code = {label: i for i, label in enumerate(labels)}
            lookup = np.array([code.get(v, -1) for v in values.tolist()])
            return pd.Categorical.from_codes(lookup[r.kind], categories=labels)

        phase = categorical("name")
        return pd.DataFrame({
            "worker": categorical("worker"), "phase": phase,
            "iter": self._iters(r, column("name")),
            "start_s": (r.start_ns - self._t0) / 1e9, "dur_s": r.dur_ns / 1e9,
            "cpu_s": r.cpu_ns / 1e9,
            **{f: column(f).astype(np.int64) for f in ("items", "flops", "bytes", "touches")},
            "dtype": categorical("dtype")})

    def _iters(self, r: Rows, names: np.ndarray) -> np.ndarray:
        """Each row's iter: given, or its default (the module docstring)."""
        steps = closed_before(r, names == "env_step")
        it = steps.copy()
        for phase in _COUNTED:
            mask = names == phase
            it[mask] = closed_before(r, mask)[mask]
        if self.rollout_len:  # a bootstrap act belongs to its rollout
            acts = names == "act"
            rollouts = closed_before(r, names == "rollout_add")
            it[acts] = np.minimum(steps, (rollouts + 1) * self.rollout_len - 1)[acts]
        if self.cuts.iters:
            at = np.searchsorted(r.cut, list(self.cuts.iters))
            it[at] = list(self.cuts.iters.values())
        return it.astype(np.int64)

    def trace(self) -> Trace:
        """The Trace of what was recorded, checked against what its program needs."""
        from rldse.workloads.common.base import build_trace

        self.stop()
        if self.cuts.open is not None:
            name = self.kinds[self.cuts.open_code()].name
            raise RldseError(f"phase '{name}' is still open", where="recording")
        r = self.rows()
        ops = self.frame(r)
        recorded = {self.kinds[k].name for k in np.unique(r.kind)}
        missing = [p for p in self.loop.required if p not in recorded]
        if missing:
            raise RldseError(f"the {self.loop.name} loop recorded no '{missing[0]}' phase; "
                             f"its program ({self.workload}) needs "
                             f"{', '.join(self.loop.required)}", where="recording")
        self._check_episodes(r)
        info = dict(self.info, recorded_wall_s=self._recorded_wall_s)
        if isinstance(self.cuts, CudaCuts):
            info["cuda"] = self.cuts.summary(self.kinds)
        return build_trace(workload=self.workload, algorithm=self.algorithm,
                           env_id=self.env_id, seed=self.seed,
                           hyperparameters=self.hyperparameters, workload_info=info,
                           episode_returns=self.returns, wall_time_s=self._wall_s,
                           frames=[ops], overhead_ns=self.cut_cost_ns,
                           load_start=self._load_start,
                           torch_threads=self.torch_threads or current_torch_threads(),
                           operators=self._operators())

    def _operators(self) -> list:
        """The operators of each network row kind recorded (``TraceMeta.operators``): act,
        the acting networks' forward; learn, every network's forward, backward and Adam
        step, at the kind's items (``Network.operator_work``)."""
        from rldse.trace import operator_records

        out, seen = [], set()
        for k in self.kinds:
            if k is None or k.name not in _NETWORK_PHASES or not k.flops or not self.nets \
                    or (k.name, k.items, k.flops) in seen:
                continue
            seen.add((k.name, k.items, k.flops))
            backward = _NETWORK_PHASES[k.name]
            names = [n for n in self.nets if backward or n in ("q", "actor", "policy", "value")]
            works = [self.nets[n].operator_work(k.items, backward) for n in names]
            work = works[0]
            for w in works[1:]:
                work += w
            out += operator_records(k.name, k.items, work, flops=k.flops, source="modules")
        return out

    def _check_episodes(self, r: Rows) -> None:
        """Returns are placed on env steps by the env_reset rows that end their episodes
        (rldse.sim.target): each worker's first reset starts the run, the others end one
        episode per env reset."""
        if not self.returns:
            return
        codes = r.kind[self._per_kind("name")[r.kind] == "env_reset"]
        items, workers = self._per_kind("items")[codes], self._per_kind("worker")[codes]
        _, first = np.unique(workers, return_index=True)
        ends = int(items.sum() - items[first].sum())
        if ends != len(self.returns):
            raise RldseError(f"{len(self.returns)} episode returns, but {ends} episode ends "
                             "(env_reset phases after the first): record an env_reset for "
                             "every episode that ends", where="recording")

    def save(self) -> Path:
        return self.trace().save(self.path)

    def _per_kind(self, field: str) -> np.ndarray:
        """``field`` of every kind, indexed by code (GAP, code 0, has no kind: empty values)."""
        return np.array([getattr(k or _NO_KIND, field) for k in self.kinds])


def _median_block_ns(block, per_block: int) -> float:
    """Median over timed calls of ``block()`` of the time per one of its ``per_block``
    operations (ns)."""
    costs = []
    for _ in range(_CALIBRATION_BLOCKS):
        t0 = perf_counter_ns()
        block()
        costs.append((perf_counter_ns() - t0) / per_block)
    return float(statistics.median(costs))


def _cuts(nets: dict[str, Network]) -> Cuts:
    return CudaCuts() if any(n.device == "cuda" for n in nets.values()) else Cuts()


class CudaCuts(Cuts):
    """Cuts that also record a CUDA event each (no synchronisation in the loop): a row's
    device time is the kernels' time between its cuts and the next ones."""

    __slots__ = ("events", "event")

    def __init__(self) -> None:
        super().__init__()
        import torch

        self.events: list[Any] = []
        self.event = lambda: torch.cuda.Event(enable_timing=True)

    def _record(self) -> None:
        e = self.event()
        e.record()
        self.events.append(e)

    def cut(self, code: int) -> int:
        self._record()
        return super().cut(code)

    def back(self, row: int | None) -> None:  # gap() too
        self._record()
        super().back(row)

    def clear(self) -> None:
        super().clear()
        self.events.clear()

    def summary(self, kinds: list[Kind | None]) -> dict[str, Any]:
        """Device seconds per phase (synchronises once, at the end)."""
        import torch

        self._record()  # the last tile's end
        torch.cuda.synchronize()
        device_s: dict[str, float] = {}
        codes = self.arrays()[1].tolist()
        for i, code in enumerate(codes):
            kind = kinds[code if code >= 0 else codes[-code - 1]]
            if kind is not None:  # a row's tile (not a gap, nor a dropped row's)
                s = self.events[i].elapsed_time(self.events[i + 1]) / 1e3
                device_s[kind.name] = device_s.get(kind.name, 0.0) + s
        return {"device": torch.cuda.get_device_name(), "device_s": device_s}


def _networks(network: Any, obs_shape: tuple[int, ...] | None) -> dict[str, Network]:
    """The recording's networks by role: one module or size list is the Q network; a dict
    names them ({"actor", "critic"} or {"policy", "value"})."""
    if network is None:
        return {}
    if isinstance(network, dict):
        return {str(k): Network(v, obs_shape if k != "critic" else None,
                                where=f"recording: network.{k}") for k, v in network.items()}
    if is_module(network) or isinstance(network, (list, tuple)):
        return {"q": Network(network, obs_shape)}
    raise RldseError(f"expected a torch.nn.Module, a list of layer sizes or a dict of them, "
                     f"got {type(network).__name__}", where="recording: network")


def _network_form(roles: tuple[str, ...]) -> str:
    if not roles:
        return "no network"
    if roles == ("q",):
        return "one network (a torch.nn.Module or layer sizes)"
    return "network={" + ", ".join(f"'{r}': ..." for r in roles) + "}"


class recording:  # noqa: N801 - used as a function: `with rldse.recording(...) as rec`
    """Context manager: ``with rldse.recording("run.parquet", loop=..., env_id=...,
    network=...) as rec:`` records the block and writes the trace atomically when it ends
    without an exception (nothing is written otherwise)."""

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        self.kwargs, self.path = kwargs, path

    def __enter__(self) -> Recording:
        self.rec = Recording(self.path, **self.kwargs)
        return self.rec

    def __exit__(self, exc_type, exc, tb) -> None:
        self.rec.stop()
        if exc_type is None:
            self.rec.save()
