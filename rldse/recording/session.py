"""`rldse.recording`: record a user's own training loop, phase by phase, as a Trace.

The loop marks its operations with ``rec.phase(name, ...)``; the trace vocabulary
(rldse.trace.PHASES) is the only allowed set. Timing is the built-in recorder's
(rldse.workloads.common.recorder): ``perf_counter_ns`` on entry and exit, and the median
cost of an empty phase, calibrated when the recording starts, removed from every row
(RL-Scope's calibration, Gleeson et al., MLSys 2021). A phase inside another is
exclusive: the outer row loses the inner one's time and whole recording cost. The whole
cost of a phase (its row's bias and the calls around it) is calibrated too; it and the time
spent counting work are the recorder's own time, taken off the trace's wall time
(``Recording.stop``) and off every later row's start, so the gaps between rows (which the
actor-learner program reads as IPC handoffs) are the loop's, not the recorder's.

Defaults, each overridable per phase: ``iter`` is the vector env step for env-side phases
(``env_step``, ``act``, ...), the learner update for ``learn`` and the iteration for
``sync`` and ``rollout_add``; ``items`` is ``n_envs`` for env-side phases and
``batch_size`` for learner phases; ``act`` and ``learn`` work (flops, bytes) come from the
network (rldse.recording.network), the others' is 0 unless given. An ``act`` that chose at
random passes ``flops=0, bytes=0`` (the programs keep such acts on the CPU).

On a CUDA network, each phase also records a pair of CUDA events: dispatch time stays in
``dur_s`` (host) and the kernels' device time is summed per phase into
``workload_info["cuda"]`` (events are resolved at the end, never synchronising inside).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from time import perf_counter_ns
from typing import Any

from rldse.errors import RldseError
from rldse.recording.info import NETWORKS, workload_info
from rldse.recording.loops import loop_kind
from rldse.recording.network import Network, is_module
from rldse.trace import PHASES, Trace

#: Empty phases timed to calibrate the per-row bias.
_CALIBRATION_PHASES = 2000
_CALIBRATION_BLOCKS = 20
#: Phases the environment side runs (items = envs, iter = vector step); others: learner.
_ENV_PHASES = frozenset({"env_reset", "env_step", "act", "replay_add"})
#: Phases that carry the network's work by default, and whether they run a backward.
_NETWORK_PHASES = {"act": False, "learn": True}
#: Phases counted per occurrence (their iter is their own count).
_COUNTED = frozenset({"learn", "sync", "rollout_add"})
_DTYPE = {"env_reset": "fp64", "env_step": "fp64", "sync": "none", "rollout_add": "none"}


class _Phase:
    __slots__ = ("rec", "name", "worker", "iter", "items", "flops", "bytes", "touches",
                 "dtype", "t0", "shift_ns", "child_ns", "events")

    def __init__(self, rec: Recording, name: str, worker: str, iter: int, items: int,
                 flops: int, bytes_: int, touches: int, dtype: str) -> None:
        self.rec, self.name, self.worker, self.iter, self.items = rec, name, worker, iter, items
        self.flops, self.bytes, self.touches, self.dtype = flops, bytes_, touches, dtype
        self.child_ns = 0
        self.events = None

    def __enter__(self) -> _Phase:
        rec = self.rec
        rec._stack.append(self)
        if rec._cuda is not None:
            self.events = rec._cuda.start()
        self.shift_ns = rec._shift_ns
        rec._shift_ns += rec._phase_cost_int
        self.t0 = perf_counter_ns()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.rec._close(self, perf_counter_ns())


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
        if loop != "on_policy" and (actor, learner) != ("actor/0", "learner"):
            raise RldseError(f"actor and learner worker names apply to the on_policy loop, "
                             f"not {loop!r}", where="recording")
        nets = _networks(network, obs_shape)
        self.workload = self.loop.workload(actor_critic="critic" in nets)
        need = NETWORKS[self.workload]
        if set(nets) != set(need):
            given = ", ".join(sorted(nets)) or "none"
            raise RldseError(f"the {loop} loop ({self.workload}) needs "
                             f"{_network_form(need)}, got {given}", where="recording: network")
        self.nets = nets
        self.env_id, self.seed = env_id, int(seed)
        self.algorithm = algorithm or self.workload
        self.hyperparameters = dict(hyperparameters)
        self.info = workload_info(self.workload, nets, self.hyperparameters)
        self.actor = actor if loop == "on_policy" else "host"
        self.learner = learner if loop == "on_policy" else "host"
        self.n_envs = int(self.info.get("envs_per_actor", hyperparameters.get("n_envs", 1)))
        self.batch = int(self.info.get("batch_size", self.info.get("minibatch_size", 1)))
        self.rollout_len = int(self.info.get("rollout_len", 0))
        self.returns: list[float] = []
        self._roles = {p: (p in _ENV_PHASES, self.learner if p in self.loop.learner_phases
                           else self.actor) for p in PHASES}
        self._work: dict[tuple[str, int], tuple[int, int]] = {}
        #: (name, items) -> the row's defaults (worker, items, flops, bytes, dtype)
        self._templates: dict[tuple[str, int | None], tuple[str, int, int, int, str]] = {}
        self._shift_ns = 0  # the recorder's own time so far: phases' whole cost, counting
        self._phase_cost_int = self._nested_cost_ns = 0
        self._stack: list[_Phase] = []
        self._counts = dict.fromkeys(PHASES, 0)
        self._steps = 0
        self._cuda = _CudaTimer() if any(n.device == "cuda" for n in nets.values()) else None
        from rldse.workloads.common.recorder import Recorder

        self._rec = Recorder(self.actor, overhead_ns=0.0)
        self._rec.overhead_ns, self.phase_cost_ns = self._calibrate()
        self._phase_cost_int = round(self.phase_cost_ns)
        # a nested phase's cost inside its parent's row, beyond its own row's bias
        self._nested_cost_ns = max(self._phase_cost_int - round(self._rec.overhead_ns), 0)
        self._shift_ns = 0
        self._t0 = perf_counter_ns()
        self._rec.origin_ns = self._t0
        self._wall_s: float | None = None

    # ---- marking -----------------------------------------------------------------
    def phase(self, name: str, *, items: int | None = None, flops: int | None = None,
              bytes: int | None = None, touches: int = 0, dtype: str | None = None,
              iter: int | None = None, worker: str | None = None) -> _Phase:
        """A context manager timing one operation of phase ``name``."""
        if flops is None and bytes is None and dtype is None and worker is None \
                and not touches:
            t = self._templates.get((name, items))
            if t is None:
                t = self._templates[(name, items)] = self._template(name, items, None, None,
                                                                      None, None)
        else:
            t = self._template(name, items, flops, bytes, dtype, worker)
        return _Phase(self, name, t[0], self._default_iter(name) if iter is None
                      else int(iter), t[1], t[2], t[3], int(touches), t[4])

    def _template(self, name: str, items: int | None, flops: int | None,
                  bytes: int | None, dtype: str | None,
                  worker: str | None) -> tuple[str, int, int, int, str]:
        """A row's (worker, items, flops, bytes, dtype), defaults filled in."""
        if name not in self._roles:
            raise RldseError(f"unknown phase {name!r} (allowed: {', '.join(PHASES)})",
                             where="recording")
        env_side, role = self._roles[name]
        if items is None:
            items = self.n_envs if env_side else self.batch
        if (flops is None or bytes is None) and name in _NETWORK_PHASES and self.nets:
            key = (name, items)
            work = self._work.get(key)
            if work is None:
                work = self._work[key] = self.work(name, items)
            flops = work[0] if flops is None else flops
            bytes = work[1] if bytes is None else bytes
        flops, bytes = flops or 0, bytes or 0
        if dtype is None:
            dtype = _DTYPE.get(name, "fp32" if flops or bytes else "none")
        return worker or role, int(items), int(flops), int(bytes), dtype

    def episode(self, return_: float) -> None:
        """One finished episode's return (the learning curve; its end is an env_reset)."""
        self.returns.append(float(return_))

    def count(self, phase: str) -> int:
        """Rows of ``phase`` recorded so far."""
        return self._counts[phase]

    def drop(self, p: _Phase) -> None:
        """Abandon a phase entered but not exited (its time goes unrecorded)."""
        self._stack.remove(p)

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
        self._shift_ns += perf_counter_ns() - t0
        return work

    def _default_iter(self, name: str) -> int:
        if name in _COUNTED:
            return self._counts[name]
        if name == "act" and self.rollout_len:  # a bootstrap act belongs to its rollout
            return min(self._steps, (self._counts["rollout_add"] + 1) * self.rollout_len - 1)
        return self._steps

    def _close(self, p: _Phase, t1: int) -> None:
        stack = self._stack
        stack.pop()
        raw = t1 - p.t0
        if stack:  # the outer phase loses this one's time and its whole recording cost
            stack[-1].child_ns += raw + self._nested_cost_ns
        self._rec.rows.append((p.worker, p.name, p.iter, p.t0 - p.shift_ns, raw - p.child_ns,
                               p.items, p.flops, p.bytes, p.touches, p.dtype))
        self._counts[p.name] += 1
        if p.name == "env_step":
            self._steps += 1
        if p.events is not None:
            self._cuda.done(p.name, p.events)

    def _calibrate(self) -> tuple[float, float]:
        """(median raw duration of an empty phase: the bias inside each row; the median
        whole cost of one, inside and outside its row), in ns, over blocks of phases."""
        per_phase = []
        for _ in range(_CALIBRATION_BLOCKS):
            t0 = perf_counter_ns()
            for _ in range(_CALIBRATION_PHASES // _CALIBRATION_BLOCKS):
                with self.phase("env_step"):
                    pass
            per_phase.append((perf_counter_ns() - t0) / (_CALIBRATION_PHASES
                                                          // _CALIBRATION_BLOCKS))
        raw = [row[4] for row in self._rec.rows]
        self._rec.rows.clear()
        self._counts = dict.fromkeys(PHASES, 0)
        self._steps = 0
        if self._cuda is not None:
            self._cuda.clear()
        return float(statistics.median(raw)), float(statistics.median(per_phase))

    # ---- the trace ---------------------------------------------------------------
    def stop(self) -> None:
        """End the timed span; called by ``trace`` if not before. The trace's wall time is
        the span less the recorder's own time (the calibrated whole cost of each phase
        entered, RL-Scope's correction, and the time spent counting work): what the loop
        would have taken unrecorded. The span as measured is kept in workload_info as
        ``recorded_wall_s``."""
        if self._wall_s is None:
            self._recorded_wall_s = (perf_counter_ns() - self._t0) / 1e9
            self._wall_s = max(self._recorded_wall_s - self._shift_ns / 1e9, 0.0)

    def trace(self) -> Trace:
        """The Trace of what was recorded, checked against what its program needs."""
        from rldse.workloads.common.base import build_trace

        self.stop()
        if self._stack:
            raise RldseError(f"phase '{self._stack[-1].name}' is still open",
                             where="recording")
        missing = [p for p in self.loop.required if not self._counts[p]]
        if missing:
            raise RldseError(f"the {self.loop.name} loop recorded no '{missing[0]}' phase; "
                             f"its program ({self.workload}) needs "
                             f"{', '.join(self.loop.required)}", where="recording")
        self._check_episodes()
        info = dict(self.info, recorded_wall_s=self._recorded_wall_s)
        if self._cuda is not None:
            info["cuda"] = self._cuda.summary()
        return build_trace(workload=self.workload, algorithm=self.algorithm,
                           env_id=self.env_id, seed=self.seed,
                           hyperparameters=self.hyperparameters, workload_info=info,
                           episode_returns=self.returns, wall_time_s=self._wall_s,
                           recorders=[self._rec])

    def _check_episodes(self) -> None:
        """Returns are placed on env steps by the env_reset rows that end their episodes
        (rldse.sim.target): each worker's first reset starts the run, the others end one
        episode per env reset."""
        if not self.returns:
            return
        firsts: dict[str, int] = {}
        ends = 0
        for row in self._rec.rows:
            if row[1] == "env_reset":
                if row[0] in firsts:
                    ends += row[5]
                else:
                    firsts[row[0]] = row[5]
        if ends != len(self.returns):
            raise RldseError(f"{len(self.returns)} episode returns, but {ends} episode ends "
                             "(env_reset phases after the first): record an env_reset for "
                             "every episode that ends", where="recording")

    def save(self) -> Path:
        return self.trace().save(self.path)


class _CudaTimer:
    """CUDA event pairs per phase, summed once they complete (no synchronisation in the
    loop: completed pairs are folded in as new ones arrive, the rest at the end)."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.pending: list[tuple[str, Any, Any]] = []
        self.device_s: dict[str, float] = {}

    def start(self):
        start = self.torch.cuda.Event(enable_timing=True)
        start.record()
        return start

    def done(self, phase: str, start) -> None:
        end = self.torch.cuda.Event(enable_timing=True)
        end.record()
        self.pending.append((phase, start, end))
        if len(self.pending) >= 1024:
            self._fold(block=False)

    def _fold(self, block: bool) -> None:
        keep = []
        for phase, start, end in self.pending:
            if block or end.query():
                self.device_s[phase] = self.device_s.get(phase, 0.0) + \
                    start.elapsed_time(end) / 1e3
            else:
                keep.append((phase, start, end))
        self.pending = keep

    def clear(self) -> None:
        self.torch.cuda.synchronize()
        self.pending, self.device_s = [], {}

    def summary(self) -> dict[str, Any]:
        self.torch.cuda.synchronize()
        self._fold(block=True)
        return {"device": self.torch.cuda.get_device_name(), "device_s": self.device_s}


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
