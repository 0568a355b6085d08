"""Tabular Q-learning and SARSA, captured: online on Gymnasium's toy-text environments,
and offline on an experience dataset split over agents, the way SwiftRL trains on UPMEM.

Online, one agent steps the environment with an ε-greedy policy (ε decays linearly) and
updates its Q-table after every step. Offline, a dataset of transitions is cut into
``agents`` contiguous chunks; every round each agent runs ``passes_per_round`` in-order
passes over its chunk, starting from the host's table, and the host then averages the
agents' tables (SwiftRL's multi-agent scheme: one agent per DPU, averaging on the CPU).

Each row's work (flops, touches, bytes of act, q_update and aggregate) is counted by
formula, and int32 runs in SwiftRL's fixed point: docs/architecture.md, "Tabular work
formulas". The simulated twin is rldse.workloads.tabular.program.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import random
import sys
import traceback
from array import array
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter, perf_counter_ns
from typing import TYPE_CHECKING

import numpy as np
from pydantic import ConfigDict, Field, ValidationError

from rldse.errors import RldseError, validation_error
from rldse.strict import UserModel
from rldse.trace import Trace
from rldse.workloads.common.base import (
    CaptureConfig,
    Progress,
    build_trace,
    no_progress,
    progress_chunk,
)
from rldse.workloads.common.recorder import NullRecorder, Recorder
from rldse.workloads.tabular.sizes import OFFLINE_TRANSITION_BYTES, ONLINE_TRANSITION_BYTES, Q_BYTES
from rldse.workloads.tabular.swiftrl_format import line_of_row, read_swiftrl

if TYPE_CHECKING:  # on use: `rldse capture tabular --help` imports this module
    import gymnasium as gym
    import pandas as pd

ALGORITHMS = ("q_learning", "sarsa")
MULTIPLIER_BITS = 24  # fractional bits of the fixed-point α and γ


@dataclass(frozen=True)
class EnvDefaults:
    """Per-environment defaults for online training, and the name SwiftRL's files use."""

    steps: int
    alpha: float
    gamma: float
    epsilon_end: float
    epsilon_decay: float
    file_prefix: str


#: Online defaults, long enough that the greedy policy is (near-)optimal for that env.
TABULAR_ENVS: dict[str, EnvDefaults] = {
    "FrozenLake-v1": EnvDefaults(200_000, 0.05, 0.99, 0.01, 0.5, "frozenlake"),
    "Taxi-v4": EnvDefaults(100_000, 0.2, 0.99, 0.01, 0.5, "taxi"),
    "CliffWalking-v1": EnvDefaults(20_000, 0.5, 0.99, 0.01, 0.5, "cliffwalking"),
}
#: FrozenLake's 8x8 map has 4x the states and longer paths to the goal.
FROZENLAKE_8X8 = EnvDefaults(1_000_000, 0.05, 0.99, 0.01, 0.5, "frozenlake")
#: Offline defaults: SwiftRL's multi-agent reference run (SwiftRL, arXiv 2405.03967).
OFFLINE_ALPHA, OFFLINE_GAMMA, OFFLINE_EPSILON = 0.1, 0.95, 0.1
#: Evaluation cap for envs without a time limit (CliffWalking): a greedy loop must end.
EVAL_MAX_STEPS = 200


class TabularParams(UserModel):
    """Hyperparameters; ``options`` of a CaptureConfig fill these by name."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(gt=0, le=1, description="learning rate")
    gamma: float = Field(ge=0, lt=1, description="discount")
    epsilon: float = Field(default=1.0, ge=0, le=1,
                           description="online: initial ε; offline SARSA: the ε of a'")
    epsilon_end: float = Field(default=0.01, ge=0, le=1, description="online: final ε")
    epsilon_decay: float = Field(default=0.5, gt=0, le=1,
                                 description="online: fraction of steps over which ε decays")
    passes: int = Field(default=1, ge=1, description="offline: passes over each chunk")
    passes_per_round: int = Field(default=1, ge=1, description="offline: passes between averagings")
    workers: int = Field(default=1, ge=1, le=256, description="offline: processes running agents")
    map_name: str | None = Field(default=None, description="FrozenLake map: '4x4' or '8x8'")

    @property
    def rounds(self) -> int:
        return self.passes // self.passes_per_round


Config = TabularParams  # the capture options (rldse.workloads.Workload.config)


@dataclass
class OnlineRun:
    q: np.ndarray  # (S, A) float32
    transitions: pd.DataFrame
    episode_returns: list[float]


@dataclass
class OfflineRun:
    q: np.ndarray  # (S, A) in reward units: float32, or float64 decoded from int32
    q_stored: np.ndarray  # (S, A) as the agents hold it: float32 or int32
    scale_bits: int | None


# ---- environments and parameters ------------------------------------------------------

def env_defaults(env_id: str, map_name: str | None = None) -> EnvDefaults:
    if env_id not in TABULAR_ENVS:
        raise RldseError(f"env '{env_id}' is not a tabular env (supported: "
                         f"{', '.join(TABULAR_ENVS)})")
    return FROZENLAKE_8X8 if map_name == "8x8" else TABULAR_ENVS[env_id]


def make_env(env_id: str, map_name: str | None = None, **kwargs) -> gym.Env:
    """The Gymnasium env (gymnasium's defaults: FrozenLake is slippery)."""
    import gymnasium as gym

    env_defaults(env_id, map_name)
    if map_name is not None:
        if not env_id.startswith("FrozenLake"):
            raise RldseError(f"option 'map_name' applies to FrozenLake-v1 only, not {env_id}")
        if map_name not in ("4x4", "8x8"):
            raise RldseError(f"option 'map_name' must be '4x4' or '8x8', got '{map_name}'")
        kwargs["map_name"] = map_name
    return gym.make(env_id, **kwargs)


def env_spaces(env_id: str, map_name: str | None = None) -> tuple[int, int]:
    env = make_env(env_id, map_name)
    return int(env.observation_space.n), int(env.action_space.n)


def resolve_params(env_id: str | None, options: dict, *, online: bool) -> TabularParams:
    """Defaults for ``env_id`` and mode, overridden by ``options``; bad options -> RldseError."""
    if online:
        d = env_defaults(env_id, options.get("map_name"))
        base = {"alpha": d.alpha, "gamma": d.gamma, "epsilon_end": d.epsilon_end,
                "epsilon_decay": d.epsilon_decay}
    else:
        base = {"alpha": OFFLINE_ALPHA, "gamma": OFFLINE_GAMMA, "epsilon": OFFLINE_EPSILON}
    try:
        params = TabularParams(**{**base, **options})
    except ValidationError as exc:
        err = validation_error(exc, "")
        raise RldseError(err.message, where=f"option '{err.where}'") from None
    if params.passes % params.passes_per_round:
        raise RldseError(f"option 'passes' ({params.passes}) must be a multiple of "
                         f"'passes_per_round' ({params.passes_per_round})")
    return params


def infer_env_id(path: str | Path) -> str | None:
    """SwiftRL names its files FrozenLake_*, Taxi_* (trajectories_* upstream), Cliffwalking_*."""
    name = Path(path).name.lower()
    return next((env_id for env_id, d in TABULAR_ENVS.items()
                 if name.startswith(d.file_prefix)), None)


# ---- evaluation -----------------------------------------------------------------------

def greedy_policy(q: np.ndarray) -> np.ndarray:
    """Action per state; ties go to the lowest action, as in the training loops."""
    return np.argmax(np.asarray(q), axis=1)


# ---- online training ------------------------------------------------------------------

class _Ticker:
    """Calls ``progress`` every ``progress_chunk(total)`` steps instead of every step."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.step, self.pending = progress, progress_chunk(total), 0

    def __call__(self, n: int) -> None:
        self.pending += n
        if self.pending >= self.step:
            self.progress(self.pending)
            self.pending = 0

    def flush(self) -> None:
        if self.pending:
            self.progress(self.pending)
            self.pending = 0


def train_online(env_id: str, *, algorithm: str = "q_learning", steps: int | None = None,
                 seed: int = 0, params: TabularParams | None = None,
                 rec: Recorder | NullRecorder | None = None,
                 progress: Progress = no_progress) -> OnlineRun:
    """ε-greedy Q-learning or SARSA on the env for ``steps`` env steps, recorded op by op."""
    _check_algorithm(algorithm)
    params = params or resolve_params(env_id, {}, online=True)
    steps = steps or env_defaults(env_id, params.map_name).steps
    rec = rec or NullRecorder()
    env = make_env(env_id, params.map_name)
    n_states, n_actions = int(env.observation_space.n), int(env.action_space.n)
    q = [array("f", bytes(Q_BYTES * n_actions)) for _ in range(n_states)]
    explore = random.Random(seed)
    draw, randrange, now, add = explore.random, explore.randrange, rec.now, rec.add
    eps0, eps_end, alpha, gamma = params.epsilon, params.epsilon_end, params.alpha, params.gamma
    eps_slope = (eps0 - eps_end) / max(1.0, params.epsilon_decay * steps)
    greedy_work = {"flops": n_actions - 1, "bytes": Q_BYTES * n_actions, "touches": n_actions}
    sarsa = algorithm == "sarsa"
    # (flops, bytes, touches) of one update, bootstrapped or terminal (docs/architecture.md)
    boot_flops, boot_touches = (5, 3) if sarsa else (n_actions - 1 + 5, n_actions + 2)
    boot_work = (boot_flops, Q_BYTES * boot_touches + ONLINE_TRANSITION_BYTES, boot_touches)
    term_work = (3, Q_BYTES * 2 + ONLINE_TRANSITION_BYTES, 2)

    def act(state: int, t: int) -> int:
        t0 = now()
        if draw() < max(eps_end, eps0 - eps_slope * t):
            a = randrange(n_actions)
            add("act", t0, t, items=1, flops=0, bytes=0, touches=0)
        else:
            row = q[state]
            a = row.index(max(row))
            add("act", t0, t, items=1, **greedy_work)
        return a

    log: tuple[list, ...] = ([], [], [], [], [])  # state, action, reward, next_state, done
    returns: list[float] = []
    ticker = _Ticker(progress, steps)
    episode, ep_return = 0, 0.0
    t0 = now()
    s, _ = env.reset(seed=seed)
    add("env_reset", t0, episode, items=1, dtype="none")
    a = act(s, 0) if sarsa else 0
    for t in range(steps):
        if not sarsa:
            a = act(s, t)
        t0 = now()
        sp, r, terminated, truncated, _ = env.step(a)
        add("env_step", t0, t, items=1, dtype="none")
        if sarsa and not terminated:
            ap = act(sp, t)
        t0 = now()
        row = q[s]
        qa = row[a]
        if terminated:
            row[a] = qa + alpha * (r - qa)
            work = term_work
        else:
            row[a] = qa + alpha * (r + gamma * (q[sp][ap] if sarsa else max(q[sp])) - qa)
            work = boot_work
        add("q_update", t0, t, items=1, flops=work[0], bytes=work[1], touches=work[2])
        for column, value in zip(log, (s, a, r, sp, terminated), strict=True):
            column.append(value)
        ep_return += r
        s = sp
        if sarsa and not terminated:
            a = ap
        if terminated or truncated:
            returns.append(ep_return)
            episode, ep_return = episode + 1, 0.0
            t0 = now()
            s, _ = env.reset()
            add("env_reset", t0, episode, items=1, dtype="none")
            if sarsa:
                a = act(s, t + 1)
        ticker(1)
    ticker.flush()
    return OnlineRun(_table_array(q, np.float32), _transitions_frame(log), returns)


def _transitions_frame(log: tuple[list, ...]) -> pd.DataFrame:
    """The run's experience; ``done`` = the episode terminated (a time-limit cut is not done)."""
    import pandas as pd

    return pd.DataFrame({
        "state": np.array(log[0], np.int32), "action": np.array(log[1], np.int32),
        "reward": np.array(log[2], np.float32), "next_state": np.array(log[3], np.int32),
        "done": np.array(log[4], bool),
    })


# ---- offline training (SwiftRL) -------------------------------------------------------

def int32_scale_bits(max_abs_reward: float, gamma: float) -> int:
    """Fractional bits B of the int32 Q-values: |Q| <= max|r|/(1-γ), and a TD error up to
    twice that must fit in 31 bits, so bound·2^B < 2^30. More bits, smaller rounding
    error: the greedy policy then matches fp32's."""
    bound = max(max_abs_reward, 1.0) / (1.0 - gamma)
    bits = 29 - math.floor(math.log2(bound))
    if bits < 0:
        raise RldseError(f"int32 Q-values cannot hold rewards up to {max_abs_reward} with "
                         f"gamma {gamma} (|Q| up to {bound:.3g}); use dtype fp32")
    return bits


@dataclass(frozen=True)
class _KernelSpec:
    """What every agent needs to run its passes; sent once to each worker process."""

    algorithm: str
    dtype: str
    n_states: int
    n_actions: int
    alpha: float  # fp32: the float; int32: the fixed-point multiplier
    gamma: float
    epsilon: float
    passes_per_round: int
    scale_bits: int | None
    seed: int
    block: int  # transitions between progress calls


def _q_learning_fp32(q, ss, aa, rr, nn, alpha, gamma):
    for s, a, r, sp in zip(ss, aa, rr, nn, strict=True):
        row = q[s]
        qa = row[a]
        row[a] = qa + alpha * (r + gamma * max(q[sp]) - qa)


def _q_learning_int32(q, ss, aa, rr, nn, alpha, gamma):
    shift, half = MULTIPLIER_BITS, 1 << (MULTIPLIER_BITS - 1)
    for s, a, r, sp in zip(ss, aa, rr, nn, strict=True):
        row = q[s]
        qa = row[a]
        row[a] = qa + ((alpha * (r + ((gamma * max(q[sp]) + half) >> shift) - qa) + half) >> shift)


def _sarsa_fp32(q, ss, aa, rr, nn, nx, alpha, gamma):
    for s, a, r, sp, x in zip(ss, aa, rr, nn, nx, strict=True):
        row, nrow = q[s], q[sp]
        qa = row[a]
        row[a] = qa + alpha * (r + gamma * (nrow[x] if x >= 0 else max(nrow)) - qa)


def _sarsa_int32(q, ss, aa, rr, nn, nx, alpha, gamma):
    shift, half = MULTIPLIER_BITS, 1 << (MULTIPLIER_BITS - 1)
    for s, a, r, sp, x in zip(ss, aa, rr, nn, nx, strict=True):
        row, nrow = q[s], q[sp]
        qa = row[a]
        nq = nrow[x] if x >= 0 else max(nrow)
        row[a] = qa + ((alpha * (r + ((gamma * nq + half) >> shift) - qa) + half) >> shift)


_KERNELS = {("q_learning", "fp32"): _q_learning_fp32, ("q_learning", "int32"): _q_learning_int32,
            ("sarsa", "fp32"): _sarsa_fp32, ("sarsa", "int32"): _sarsa_int32}


class _AgentGroup:
    """The agents one process runs, their chunks held as Python lists for the kernels."""

    def __init__(self, first_agent: int, chunks: list[tuple[np.ndarray, ...]],
                 spec: _KernelSpec, rec: Recorder | NullRecorder) -> None:
        self.first, self.spec, self.rec = first_agent, spec, rec
        self.chunks = [tuple(col.tolist() for col in chunk) for chunk in chunks]
        self.typecode = "f" if spec.dtype == "fp32" else "i"

    def run_round(self, rnd: int, start: bytes, tick: Progress) -> list[bytes]:
        """Each agent: copy the host's table, run its passes, return its table's bytes."""
        spec, now, add = self.spec, self.rec.now, self.rec.add
        row_bytes = Q_BYTES * spec.n_actions
        tables = []
        for k, (ss, aa, rr, nn) in enumerate(self.chunks):
            agent = self.first + k
            # the copy is the host-to-agent transfer, which workload_info sizes: not timed
            q = [array(self.typecode, start[i * row_bytes:(i + 1) * row_bytes])
                 for i in range(spec.n_states)]
            t0 = now()
            greedy = self._passes(q, ss, aa, rr, nn, agent, rnd, tick)
            n = len(ss) * spec.passes_per_round
            flops, touches = _offline_work(spec, n, greedy)
            add("q_update", t0, rnd, items=n, flops=flops,
                bytes=Q_BYTES * touches + OFFLINE_TRANSITION_BYTES * n, touches=touches,
                dtype=spec.dtype, worker=f"agent/{agent}")
            tables.append(b"".join(q))
        return tables

    def _passes(self, q, ss, aa, rr, nn, agent, rnd, tick) -> int:
        """Run the passes in blocks (for progress); return how many a' were greedy (SARSA)."""
        spec, n = self.spec, len(ss)
        kernel = _KERNELS[spec.algorithm, spec.dtype]
        greedy = 0
        for p in range(spec.passes_per_round):
            columns = [ss, aa, rr, nn]
            if spec.algorithm == "sarsa":
                nx = _next_action_draws(spec, n, agent, rnd, p)
                greedy += int(np.count_nonzero(nx < 0))
                columns.append(nx.tolist())
            for lo in range(0, n, spec.block):
                hi = min(n, lo + spec.block)
                kernel(q, *(c[lo:hi] for c in columns), spec.alpha, spec.gamma)
                tick(hi - lo)
        return greedy


def _next_action_draws(spec: _KernelSpec, n: int, agent: int, rnd: int,
                       p: int) -> np.ndarray:
    """Offline SARSA's a' per transition: a random action with probability ε, else -1
    (greedy). Seeded by (seed, agent, round, pass) so the process count cannot matter."""
    rng = np.random.default_rng([spec.seed, agent, rnd, p])
    explore = rng.random(n) < spec.epsilon
    return np.where(explore, rng.integers(spec.n_actions, size=n), -1)


def _offline_work(spec: _KernelSpec, n: int, greedy: int) -> tuple[int, int]:
    """(flops, touches) of n updates (docs/architecture.md, "Tabular work formulas")."""
    a = spec.n_actions
    if spec.algorithm == "q_learning":
        return n * (a - 1 + 5), n * (a + 2)
    return n * 5 + greedy * (a - 1), n * 2 + greedy * a + (n - greedy)


def _agent_process(conn, first_agent: int, chunks, spec: _KernelSpec,
                   clock: tuple[int, float]) -> None:
    """Worker loop: per round, receive the host table, run the agents, send tables and rows.

    The child's Recorder takes the parent's origin and calibrated overhead: perf_counter_ns
    is CLOCK_MONOTONIC, one clock for all processes, so its rows merge with the parent's.
    """
    try:
        rec = Recorder("agent", origin_ns=clock[0], overhead_ns=clock[1])
        group = _AgentGroup(first_agent, chunks, spec, rec)
        while (msg := conn.recv()) is not None:
            rec.sample_cpu()  # after waiting for the round
            tables = group.run_round(*msg, no_progress)
            conn.send(("ok", tables, (rec.rows, rec.cpu_fractions())))
            rec.rows = []
    except Exception:
        conn.send(("error", traceback.format_exc(), ([], None)))
    finally:
        conn.close()


class _ProcessPool:
    """W processes, each running a contiguous slice of the agents every round; the same
    ``run_round`` as ``_AgentGroup``, with the workers' rows added to the host's recorder.

    Linux forks (fast, and a user's script needs no ``__main__`` guard); elsewhere the
    workers are spawned, which everything they receive supports: a module-level target
    and picklable arguments.
    """

    def __init__(self, groups: list[tuple[int, list]], spec: _KernelSpec,
                 rec: Recorder | NullRecorder) -> None:
        ctx = mp.get_context("fork" if sys.platform == "linux" else "spawn")
        self.rec, self.conns, self.procs = rec, [], []
        self.transitions = sum(len(c[0]) for _, chunks in groups for c in chunks) \
            * spec.passes_per_round
        clock = (rec.origin_ns, rec.overhead_ns) if rec.enabled else (perf_counter_ns(), 0.0)
        for first, chunks in groups:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_agent_process, args=(child, first, chunks, spec, clock),
                               daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)

    def run_round(self, rnd: int, start: bytes, tick: Progress) -> list[bytes]:
        for conn in self.conns:
            conn.send((rnd, start))
        tables = []
        for conn in self.conns:
            status, payload, (rows, fractions) = conn.recv()
            if status != "ok":
                raise RuntimeError(f"an agent worker process failed:\n{payload}")
            tables += payload
            if self.rec.enabled:
                self.rec.add_foreign(rows, fractions)
        tick(self.transitions)
        return tables

    def __enter__(self) -> _ProcessPool:
        return self

    def __exit__(self, *exc) -> None:
        """Ask each worker to stop; one that already failed or exited has closed its pipe."""
        for conn, proc in zip(self.conns, self.procs, strict=True):
            with suppress(OSError):
                conn.send(None)
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
            conn.close()


def _average(tables: list[bytes], dtype: str, size: int) -> np.ndarray:
    """Host average of the agents' tables; int32 divides with rounding half up."""
    stack = np.frombuffer(b"".join(tables), np.float32 if dtype == "fp32" else np.int32)
    stack = stack.reshape(len(tables), size)
    if dtype == "fp32":
        return (stack.astype(np.float64).sum(axis=0) / len(tables)).astype(np.float32)
    agents = len(tables)
    return ((stack.astype(np.int64).sum(axis=0) + agents // 2) // agents).astype(np.int32)


def train_offline(data: pd.DataFrame, n_states: int, n_actions: int, *,
                  algorithm: str = "q_learning", params: TabularParams | None = None,
                  agents: int = 1, dtype: str = "fp32", seed: int = 0,
                  rec: Recorder | NullRecorder | None = None,
                  progress: Progress = no_progress) -> OfflineRun:
    """SwiftRL's offline training: per round, every agent learns over its chunk in order
    from the host's table, then the host averages the tables."""
    _check_algorithm(algorithm)
    if dtype not in ("fp32", "int32"):
        raise RldseError(f"dtype must be 'fp32' or 'int32', got '{dtype}'")
    n = len(data)
    if not 1 <= agents <= n:
        raise RldseError(f"agents must be between 1 and the dataset's {n} transitions, "
                         f"got {agents}")
    params = params or resolve_params(None, {}, online=False)
    rec = rec or NullRecorder()
    spec, rewards = _kernel_spec(data, n_states, n_actions, algorithm, params, dtype, seed)
    columns = (data["state"].to_numpy(), data["action"].to_numpy(), rewards,
               data["next_state"].to_numpy())
    bounds = [n * i // agents for i in range(agents + 1)]
    chunks = [tuple(c[bounds[i]:bounds[i + 1]] for c in columns) for i in range(agents)]
    size = n_states * n_actions
    table = np.zeros(size, np.float32 if dtype == "fp32" else np.int32)
    ticker = _Ticker(progress, n * params.passes)
    workers = min(params.workers, agents)
    edges = [agents * w // workers for w in range(workers + 1)]
    runner = nullcontext(_AgentGroup(0, chunks, spec, rec)) if workers == 1 else _ProcessPool(
        [(edges[w], chunks[edges[w]:edges[w + 1]]) for w in range(workers)], spec, rec)
    with runner as agents_of_round:
        for rnd in range(params.rounds):
            tables = agents_of_round.run_round(rnd, table.tobytes(), ticker)
            t0 = rec.now()
            table = _average(tables, dtype, size)
            rec.add("aggregate", t0, rnd, items=agents, flops=agents * size + size,
                    bytes=Q_BYTES * size * (agents + 1), touches=0, dtype=dtype, worker="host")
    ticker.flush()
    stored = table.reshape(n_states, n_actions)
    q = stored if dtype == "fp32" else stored / float(1 << spec.scale_bits)
    return OfflineRun(q=q, q_stored=stored, scale_bits=spec.scale_bits)


def _kernel_spec(data: pd.DataFrame, n_states: int, n_actions: int, algorithm: str,
                 params: TabularParams, dtype: str, seed: int) -> tuple[_KernelSpec, np.ndarray]:
    """The agents' constants and the reward column in their number format."""
    reward = data["reward"].to_numpy(np.float64)
    block = max(1000, len(data) * params.passes // 100)
    if dtype == "fp32":
        alpha, gamma, bits = float(np.float32(params.alpha)), float(np.float32(params.gamma)), None
        rewards = reward.astype(np.float32).astype(np.float64)
    else:
        bits = int32_scale_bits(float(np.abs(reward).max(initial=0.0)), params.gamma)
        alpha = round(params.alpha * (1 << MULTIPLIER_BITS))
        gamma = round(params.gamma * (1 << MULTIPLIER_BITS))
        rewards = np.round(reward * (1 << bits)).astype(np.int64)
    spec = _KernelSpec(algorithm, dtype, n_states, n_actions, alpha, gamma, params.epsilon,
                       params.passes_per_round, bits, seed, block)
    return spec, rewards


# ---- capture --------------------------------------------------------------------------

def capture(cfg: CaptureConfig, progress: Progress = no_progress) -> Trace:
    """Online training on ``cfg.env_id``, or offline on ``cfg.dataset`` (SwiftRL format)."""
    algorithm = cfg.algorithm or "q_learning"
    _check_algorithm(algorithm)
    if cfg.dataset is not None:
        return _capture_offline(cfg, algorithm, progress)
    if cfg.agents != 1 or cfg.dtype != "fp32":
        raise RldseError("--agents and --dtype int32 apply to offline training on a --dataset")
    params = resolve_params(cfg.env_id, cfg.options, online=True)
    steps = cfg.steps or env_defaults(cfg.env_id, params.map_name).steps
    rec = Recorder("host")
    rec.origin_ns = perf_counter_ns()  # times from the loop's start, not the calibration's
    start = perf_counter()
    run = train_online(cfg.env_id, algorithm=algorithm, steps=steps, seed=cfg.seed,
                       params=params, rec=rec, progress=progress)
    wall_s = perf_counter() - start
    n_states, n_actions = run.q.shape
    info = _workload_info(n_states, n_actions, "online", "fp32", 1, params, steps, None,
                          ONLINE_TRANSITION_BYTES)
    return build_trace(workload="tabular", algorithm=algorithm, env_id=cfg.env_id,
                       seed=cfg.seed, hyperparameters={**params.model_dump(), "steps": steps},
                       workload_info=info, episode_returns=run.episode_returns,
                       wall_time_s=wall_s, recorders=[rec], transitions=run.transitions)


def _capture_offline(cfg: CaptureConfig, algorithm: str, progress: Progress) -> Trace:
    return capture_dataset(cfg, read_swiftrl(cfg.dataset), algorithm, progress)[0]


def capture_dataset(cfg: CaptureConfig, data: pd.DataFrame, algorithm: str = "q_learning",
                    progress: Progress = no_progress) -> tuple[Trace, OfflineRun]:
    """Offline training on a dataset already in memory (columns as ``read_swiftrl``'s),
    recorded: the trace, and the run with the learned table. ``cfg.dataset`` names the data
    (the trace's ``workload_info['dataset']``); give ``cfg.env_id`` when it is no file name."""
    _check_algorithm(algorithm)
    env_id, n_states, n_actions = _dataset_env(cfg, data)
    params = resolve_params(env_id, cfg.options, online=False)
    rec = Recorder("host")
    rec.origin_ns = perf_counter_ns()  # times from the loop's start, not the calibration's
    start = perf_counter()
    run = train_offline(data, n_states, n_actions, algorithm=algorithm, params=params,
                        agents=cfg.agents, dtype=cfg.dtype, seed=cfg.seed, rec=rec,
                        progress=progress)
    wall_s = perf_counter() - start
    info = _workload_info(n_states, n_actions, "offline", cfg.dtype, cfg.agents, params,
                          len(data), run.scale_bits, OFFLINE_TRANSITION_BYTES)
    info["dataset"] = Path(cfg.dataset).name
    trace = build_trace(workload="tabular", algorithm=algorithm, env_id=env_id, seed=cfg.seed,
                        hyperparameters=params.model_dump(), workload_info=info,
                        episode_returns=[], wall_time_s=wall_s, recorders=[rec],
                        transitions=data)
    return trace, run


def _dataset_env(cfg: CaptureConfig, data: pd.DataFrame) -> tuple[str, int, int]:
    """(env id, states, actions) of a dataset: the env's spaces when the env is known (given,
    or inferred from the file name); else 'unknown' with max+1 of the data."""
    env_id = infer_env_id(cfg.dataset) if cfg.env_id in ("", "auto") else cfg.env_id
    map_name = cfg.options.get("map_name")
    if env_id in TABULAR_ENVS:
        n_states, n_actions = env_spaces(env_id, map_name)
    else:
        n_states = int(max(data["state"].max(), data["next_state"].max())) + 1
        n_actions = int(data["action"].max()) + 1
        env_id = env_id or "unknown"
    for column, limit in (("state", n_states), ("action", n_actions), ("next_state", n_states)):
        over = np.flatnonzero(data[column].to_numpy() >= limit)
        if len(over):
            value = int(data[column].iat[over[0]])
            raise RldseError(f"{cfg.dataset}: line {line_of_row(cfg.dataset, int(over[0]))}: "
                             f"{column} {value} is out of range for {env_id} "
                             f"({n_states} states, {n_actions} actions)")
    return env_id, n_states, n_actions


def _workload_info(n_states: int, n_actions: int, mode: str, dtype: str, agents: int,
                   params: TabularParams, transitions: int, scale_bits: int | None,
                   transition_bytes: int) -> dict:
    return {
        "n_states": n_states, "n_actions": n_actions, "mode": mode, "dtype": dtype,
        "agents": agents, "passes": params.passes, "passes_per_round": params.passes_per_round,
        "rounds": params.rounds, "workers": min(params.workers, agents),
        "dataset_transitions": transitions, "int32_scale_bits": scale_bits,
        "int32_multiplier_bits": MULTIPLIER_BITS if dtype == "int32" else None,
        "q_table_bytes": Q_BYTES * n_states * n_actions, "transition_bytes": transition_bytes,
        "map_name": params.map_name,
    }


def _check_algorithm(algorithm: str) -> None:
    if algorithm not in ALGORITHMS:
        raise RldseError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got '{algorithm}'")


def _table_array(q: list[array], dtype: type) -> np.ndarray:
    return np.frombuffer(b"".join(q), dtype).reshape(len(q), -1).copy()
