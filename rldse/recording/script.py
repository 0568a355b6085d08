"""`rldse capture script`: run a user's single-file PyTorch training script, unedited, and
record it as a trace (CleanRL-style scripts: gymnasium vector envs, nn.Modules, an
optimizer, optionally Stable-Baselines3's ReplayBuffer).

The script runs as ``__main__`` (runpy) with these hooked for its length, then restored:
gymnasium's ``SyncVectorEnv``/``AsyncVectorEnv`` ``step`` and ``reset`` (and the step of
envs from ``gymnasium.make``), module forwards (torch's global forward hooks; only the
outermost module call counts), ``Tensor.backward``, optimizer steps (torch's global
optimizer hooks), ``nn.Module.load_state_dict`` (a target copy: ``sync``) and SB3's
``ReplayBuffer.add``/``sample``. Each hooked call is timed on ``perf_counter_ns`` with the
hook's own bias, calibrated on a no-op, removed (RL-Scope's calibration, Gleeson et al.,
MLSys 2021). Code outside the hooks (logging, GAE, bookkeeping) is not recorded.

Phases, per gap between two env steps: every optimizer step closes one ``learn`` row that
starts at the first forward after the previous one (its forwards, backward and step);
forwards after the gap's last optimizer step are the next ``act``. The loop kind is
inferred (``on_policy``: some gap holds several optimizer steps, an epoch of minibatches
after a rollout; ``off_policy``: at most one) unless given. An on-policy script runs in
one process: its ``rollout_add`` and ``sync`` rows, which the actor-learner program
reads, are written with zero duration at each iteration's end and start.

Work counts and the program's typed Info come from rldse.recording's own pieces
(``network.Network``: FLOPs by torch's counter; ``info.workload_info``; ``loops``), so a
script's trace and a ``rldse.recording`` trace are built the same way. Schedule numbers
the program needs are read from what ran: batch (the learning forward's), warm-up and
update and target-copy intervals (env steps), replay capacity (SB3's buffer size, or,
without one, every transition the run made, named in ``hyperparameters['inferred']``).
"""

from __future__ import annotations

import runpy
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter, perf_counter_ns, process_time_ns
from typing import Any

import numpy as np

from rldse.cpu_clock import CpuClock
from rldse.errors import RldseError
from rldse.host import load_sample
from rldse.trace import Trace

_CALIBRATION_CALLS = 2000
LOOPS = ("off_policy", "on_policy")


@dataclass
class _Event:
    kind: str  # env_step, env_reset, forward, backward, opt, replay_add, replay_sample, sync
    t0: int
    dur: int
    items: int = 1
    module: Any = None
    grad: bool = False
    shape: tuple[int, ...] = ()


@dataclass
class _Hooks:
    """Installs the hooks, collects events, removes everything it installed."""

    events: list[_Event] = field(default_factory=list)
    undo: list[Any] = field(default_factory=list)
    depth: int = 0  # inside a hooked call: nested ones are part of it
    replay_capacity: int | None = None
    env_ids: list[str] = field(default_factory=list)
    fwd: list[tuple[int, Any]] = field(default_factory=list)
    #: process CPU time (torch may run the script's ops on several threads), read at most
    #: once per rldse.cpu_clock.SAMPLE_EVERY_NS at a timed call's end
    cpu: CpuClock = field(default_factory=lambda: CpuClock(process_time_ns))
    load_start: tuple[float, int] | None = None

    # ---- timed wrappers -------------------------------------------------------------
    def timed(self, kind: str, fn, items_of=None):
        hooks = self

        def wrapper(*args, **kwargs):
            if hooks.depth:
                return fn(*args, **kwargs)
            hooks.depth += 1
            t0 = perf_counter_ns()
            try:
                out = fn(*args, **kwargs)
            finally:
                t1 = perf_counter_ns()
                hooks.depth -= 1
                if t1 >= hooks.cpu.next_ns:
                    hooks.cpu.sample(t1)
            hooks.events.append(_Event(kind, t0, t1 - t0,
                                       items_of(args, kwargs, out) if items_of else 1))
            return out

        wrapper.__wrapped__ = fn
        return wrapper

    def patch(self, owner: Any, name: str, kind: str, items_of=None) -> None:
        original = getattr(owner, name)
        setattr(owner, name, self.timed(kind, original, items_of))
        self.undo.append(lambda: setattr(owner, name, original))

    def install(self) -> None:
        import gymnasium as gym
        import torch
        from torch.nn.modules import module as nn_module
        from torch.optim import optimizer as optim

        def n_envs(args, kwargs, out) -> int:
            return int(getattr(args[0], "num_envs", 1))

        for cls in (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv):
            self.patch(cls, "step", "env_step", n_envs)
            self.patch(cls, "reset", "env_reset", n_envs)
        original_make = gym.make

        def make(env_id, *args, **kwargs):
            env = original_make(env_id, *args, **kwargs)
            self.env_ids.append(str(getattr(env_id, "id", env_id)))
            env.step = self.timed("env_step", env.step)
            env.reset = self.timed("env_reset", env.reset)
            return env

        gym.make = make
        self.undo.append(lambda: setattr(gym, "make", original_make))
        self.patch(torch.Tensor, "backward", "backward")
        self.patch(torch.nn.Module, "load_state_dict", "sync")
        handles = [nn_module.register_module_forward_pre_hook(self._pre),
                   nn_module.register_module_forward_hook(self._post),
                   optim.register_optimizer_step_pre_hook(self._opt_pre),
                   optim.register_optimizer_step_post_hook(self._opt_post)]
        self.undo.extend(h.remove for h in handles)
        try:
            from stable_baselines3.common.buffers import ReplayBuffer
        except ImportError:
            return

        def sample_items(args, kwargs, out) -> int:
            buf = args[0]
            self.replay_capacity = int(buf.buffer_size * buf.n_envs)
            return int(args[1] if len(args) > 1 else kwargs["batch_size"])

        self.patch(ReplayBuffer, "add", "replay_add", lambda a, k, o: int(a[0].n_envs))
        self.patch(ReplayBuffer, "sample", "replay_sample", sample_items)

    def remove(self) -> None:
        for undo in reversed(self.undo):
            undo()
        self.undo.clear()

    # ---- torch's global hooks -----------------------------------------------------
    def _pre(self, module, args) -> None:
        if self.depth == 0:
            self.fwd.append((perf_counter_ns(), module))
        self.depth += 1

    def _post(self, module, args, out) -> None:
        self.depth -= 1
        if self.depth or not self.fwd or self.fwd[-1][1] is not module:
            return
        t0, _ = self.fwd.pop()
        import torch

        x = next((a for a in args if isinstance(a, torch.Tensor)), None)
        shape = tuple(x.shape) if x is not None else ()
        self.events.append(_Event("forward", t0, perf_counter_ns() - t0,
                                  shape[0] if shape else 1, module,
                                  torch.is_grad_enabled(), shape))

    def _opt_pre(self, opt, args, kwargs) -> None:
        self.depth += 1
        self._opt_t0 = perf_counter_ns()

    def _opt_post(self, opt, args, kwargs) -> None:
        self.depth -= 1
        self.events.append(_Event("opt", self._opt_t0, perf_counter_ns() - self._opt_t0))


def _calibrate(hooks: _Hooks) -> float:
    """Median duration a timed wrapper records around a no-op, in ns: its bias."""
    noop = hooks.timed("calibration", lambda: None)
    for _ in range(_CALIBRATION_CALLS):
        noop()
    bias = statistics.median(e.dur for e in hooks.events)
    hooks.events.clear()
    return float(bias)


def run_script(script: str | Path, args: list[str]) -> tuple[list[_Event], _Hooks, float,
                                                              float]:
    """Run ``script`` hooked: (events, hooks, bias ns, wall s)."""
    path = Path(script)
    if not path.is_file() or path.suffix != ".py":
        raise RldseError(f"{script}: expected an existing single-file Python script (.py)")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise RldseError("capture script records PyTorch scripts: pip install "
                         "'rldse[torch]'") from None
    hooks = _Hooks()
    bias = _calibrate(hooks)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.resolve().parent))
    hooks.install()
    hooks.load_start = load_sample()
    hooks.cpu.sample()
    t0 = perf_counter()
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise RldseError(f"{script}: exited with status {exc.code}") from None
    finally:
        wall_s = perf_counter() - t0
        hooks.cpu.sample()
        hooks.remove()
        sys.argv, sys.path[:] = saved_argv, saved_path
    return hooks.events, hooks, bias, wall_s


@dataclass
class _Row:
    worker: str
    phase: str
    iter: int
    t0: int
    dur: int
    items: int
    module: Any = None
    shape: tuple[int, ...] = ()


def _gaps(events: list[_Event]) -> list[list[_Event]]:
    """Events split at env steps: gap k holds what ran after env step k - 1."""
    gaps: list[list[_Event]] = [[]]
    for e in events:
        if e.kind == "env_step":
            gaps.append([])
        else:
            gaps[-1].append(e)
    return gaps


def infer_loop(events: list[_Event]) -> str:
    per_gap = [sum(e.kind == "opt" for e in gap) for gap in _gaps(events)]
    if not any(per_gap):
        raise RldseError("capture script: the script made no optimizer step (no learning "
                         "seen): is it a PyTorch training script? (--loop cannot help)")
    return "on_policy" if max(per_gap) > 1 else "off_policy"


def _phases(events: list[_Event], loop: str) -> list[_Row]:
    """Rows from the events (module docstring): env steps and resets, learn groups, acts."""
    actor, learner = ("actor/0", "learner") if loop == "on_policy" else ("host", "host")
    rows: list[_Row] = []
    learns = 0
    for k, gap in enumerate(_gaps(events)):
        step = max(0, k - 1)
        group_fwd, acts = None, []
        for e in gap:
            if e.kind in ("env_reset", "replay_add"):
                rows.append(_Row(actor, e.kind, step, e.t0, e.dur, e.items))
            elif e.kind in ("replay_sample", "sync"):
                rows.append(_Row(learner, e.kind, learns, e.t0, e.dur, e.items))
            elif e.kind == "forward":
                acts.append(e)
                if e.grad and group_fwd is None:
                    group_fwd = e
            elif e.kind == "backward":
                continue
            elif e.kind == "opt":
                first = acts[0] if acts else e
                fwd = group_fwd or first
                rows.append(_Row(learner, "learn", learns, first.t0, e.t0 + e.dur - first.t0,
                                 fwd.items, fwd.module, fwd.shape))
                learns += 1
                acts, group_fwd = [], None
        if acts:  # the forwards after the gap's last optimizer step: the next act
            t0 = acts[0].t0
            end = max(a.t0 + a.dur for a in acts)
            rows.append(_Row(actor, "act", k, t0, end - t0, acts[0].items, acts[0].module,
                             acts[0].shape))
    steps = [e for e in events if e.kind == "env_step"]
    rows.extend(_Row(actor, "env_step", i, e.t0, e.dur, e.items) for i, e in enumerate(steps))
    return sorted(rows, key=lambda r: (r.t0, r.phase))


def capture_script(script: str | Path, args: list[str], *, loop: str | None = None,
                   env_id: str | None = None, seed: int = 0) -> Trace:
    """Run ``script`` with ``args``, hooked, and return its Trace (module docstring)."""
    if loop is not None and loop not in LOOPS:
        raise RldseError(f"--loop {loop}: capture script records {' or '.join(LOOPS)} "
                         "PyTorch loops (a tabular loop has no network to hook)")
    if seed < 0:
        raise RldseError(f"--seed {seed}: expected 0 or more")
    events, hooks, bias, wall_s = run_script(script, args)
    steps = [e for e in events if e.kind == "env_step"]
    if not steps:
        raise RldseError(f"{script}: no environment step seen (rldse hooks gymnasium's "
                         "vector envs and gymnasium.make)")
    loop = loop or infer_loop(events)
    rows = _phases(events, loop)
    env = env_id or (hooks.env_ids[0] if hooks.env_ids else None)
    if env is None:
        raise RldseError(f"{script}: the env id is unknown (made without gymnasium.make): "
                         "pass --env")
    return _trace(rows, events, hooks, loop, env, seed, bias, wall_s, Path(script).name)


def _trace(rows: list[_Row], events: list[_Event], hooks: _Hooks, loop: str, env_id: str,
           seed: int, bias: float, wall_s: float, name: str) -> Trace:
    from rldse.recording.info import workload_info
    from rldse.recording.loops import loop_kind
    from rldse.recording.network import Network
    from rldse.workloads.common.base import build_trace
    from rldse.workloads.common.recorder import rows_to_frame

    kind = loop_kind(loop)
    missing = [p for p in kind.required if p not in {r.phase for r in rows}
               and p not in ("rollout_add", "sync")]
    if missing:
        raise RldseError(f"{name}: the {loop} loop recorded no '{missing[0]}' phase (rldse "
                         f"hooks {_HOOKED}); record this script with rldse.recording instead")
    learn = [r for r in rows if r.phase == "learn"]
    act = next(r for r in rows if r.phase == "act")
    obs_shape = act.shape[1:]
    n_envs = next(e.items for e in events if e.kind == "env_step")
    inferred: list[str] = []
    if loop == "off_policy":
        nets = {"q": Network(learn[0].module, obs_shape, where=f"{name}: network")}
        hp = _offpolicy_schedule(rows, hooks, n_envs, inferred)
    else:
        nets = _policy_value(learn, obs_shape, name)
        hp, rows = _onpolicy_schedule(rows, n_envs)
    workload = kind.workload(actor_critic=False)
    info = workload_info(workload, nets, hp)
    works: dict[tuple[str, int], tuple[int, int]] = {}

    def work(phase: str, items: int) -> tuple[int, int]:
        key = (phase, items)
        if key not in works:
            acting = [n for k, n in nets.items() if k in ("q", "policy", "value")]
            totals = [n.work(items, phase == "learn") for n in (
                nets.values() if phase == "learn" else acting)]
            works[key] = (sum(f for f, _ in totals), sum(b for _, b in totals))
        return works[key]

    out = []
    for r in rows:
        flops, nbytes = work(r.phase, r.items) if r.phase in ("act", "learn") else (0, 0)
        dtype = "fp32" if flops or nbytes else "fp64" if r.phase.startswith("env") else "none"
        out.append((r.worker, r.phase, r.iter, r.t0, r.dur, r.items, flops, nbytes, 0, dtype))
    origin = min(r.t0 for r in rows)
    start = np.array([r.t0 for r in rows], np.int64)
    frac = hooks.cpu.fraction(start, start + np.array([r.dur for r in rows], np.int64))
    frame = rows_to_frame(out, origin, bias, frac)
    hp = {**hp, "script": name, "loop": loop, "inferred": inferred}
    return build_trace(workload=workload, algorithm=f"script:{Path(name).stem}", env_id=env_id,
                       seed=seed, hyperparameters=hp, workload_info=info,
                       episode_returns=[], wall_time_s=wall_s, frames=[frame],
                       overhead_ns=bias, load_start=hooks.load_start)


_HOOKED = ("gymnasium vector envs and gymnasium.make, module forwards, backward, optimizer "
           "steps, load_state_dict, stable_baselines3 ReplayBuffer add/sample")


def _offpolicy_schedule(rows: list[_Row], hooks: _Hooks, n_envs: int,
                        inferred: list[str]) -> dict[str, Any]:
    """DQN's schedule as the script ran it, in env steps (vector steps × envs)."""
    env_rows = [r for r in rows if r.phase == "env_step"]
    learn_at = _env_step_at(env_rows, [r.t0 for r in rows if r.phase == "learn"])
    sync_at = _env_step_at(env_rows, [r.t0 for r in rows if r.phase == "sync"])
    batch = next(r.items for r in rows if r.phase == "learn")
    total = n_envs * len(env_rows)
    capacity = hooks.replay_capacity
    if capacity is None:
        capacity = total
        inferred.append("replay_capacity")
    return {"batch_size": batch, "replay_capacity": capacity,
            "learning_starts": n_envs * max(0, learn_at[0] - 1),  # after that step's env step
            "learn_every": max(1, n_envs * _median_gap(learn_at, len(env_rows))),
            "target_sync": max(1, n_envs * _median_gap(sync_at, len(env_rows))),
            "updates": len(learn_at)}


def _env_step_at(env_rows: list[_Row], times: list[int]) -> list[int]:
    """For each time, the vector env steps done before it."""
    import bisect

    starts = [r.t0 for r in env_rows]
    return [bisect.bisect_left(starts, t) for t in times]


def _median_gap(at: list[int], default: int) -> int:
    gaps = [b - a for a, b in zip(at, at[1:], strict=False) if b > a]
    return int(statistics.median(gaps)) if gaps else default


def _policy_value(learn: list[_Row], obs_shape: tuple[int, ...], name: str) -> dict:
    """An on-policy script's policy and value modules: the learned forwards' modules, the
    value one being the one with a single output."""
    from rldse.recording.network import Network

    modules = list({id(r.module): r.module for r in learn if r.module is not None}.values())
    nets = {m: Network(m, obs_shape, where=f"{name}: network") for m in modules}
    value = [n for n in nets.values() if n.sizes and n.sizes[-1] == 1]
    policy = [n for n in nets.values() if n.sizes and n.sizes[-1] != 1]
    if len(value) != 1 or len(policy) != 1:
        raise RldseError(f"{name}: an on_policy script needs separate policy and value "
                         "modules (chains of nn.Linear, the value one with one output), "
                         "each called on the observations")
    return {"policy": policy[0], "value": value[0]}


def _onpolicy_schedule(rows: list[_Row], n_envs: int) -> tuple[dict[str, Any], list[_Row]]:
    """Rollout length and epochs as the script ran them; the zero-duration rollout_add and
    sync rows of a one-process loop (module docstring)."""
    out, iteration, in_rollout, learns = [], 0, 0, 0
    steps_per_iter: list[int] = []
    last_learn = False
    for r in rows:
        if r.phase == "env_step" and last_learn:
            iteration += 1
            steps_per_iter.append(in_rollout)
            out.append(_Row("learner", "sync", iteration, r.t0, 0, 1))
            in_rollout, last_learn = 0, False
        if r.phase == "learn" and not last_learn:
            out.append(_Row("actor/0", "rollout_add", iteration, r.t0, 0, in_rollout * n_envs))
            last_learn = True
        if r.phase == "env_step":
            in_rollout += 1
        if r.phase == "learn":
            learns += 1
        out.append(_Row(r.worker, r.phase, r.iter, r.t0, r.dur, r.items, r.module, r.shape))
    if not steps_per_iter:
        steps_per_iter = [in_rollout]
    T = int(statistics.median(steps_per_iter))
    batch = next(r.items for r in rows if r.phase == "learn")
    iterations = max(1, iteration + (1 if last_learn else 0))
    epochs = max(1, round(learns / iterations * batch / max(1, T * n_envs)))
    first = min(r.t0 for r in out)
    out.insert(0, _Row("learner", "sync", 0, first, 0, 1))
    return ({"envs_per_actor": n_envs, "rollout_len": T, "batch_size": batch,
             "epochs": epochs}, out)
