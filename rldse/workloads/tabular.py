"""Tabular Q-learning and SARSA, captured: online on Gymnasium's toy-text environments,
and offline on an experience dataset split over agents, the way SwiftRL trains on UPMEM.

Online, one agent steps the environment with an ε-greedy policy (ε decays linearly) and
updates its Q-table after every step. Offline, a dataset of transitions is cut into
``agents`` contiguous chunks; every round each agent runs ``passes_per_round`` in-order
passes over its chunk, starting from the host's table, and the host then averages the
agents' tables (SwiftRL's multi-agent scheme: one agent per DPU, averaging on the CPU).

Work formulas (A actions, S states; a Q-value is 4 bytes in fp32 and int32):

- ``act`` (ε-greedy, one observation): a random action reads nothing (0 flops, touches,
  bytes); a greedy one is an argmax over row s: flops A−1 compares, touches A, bytes 4A.
- ``q_update``, Q-learning: Q[s,a] += α·(r + γ·max_a' Q[s',a'] − Q[s,a]).
  flops (A−1) compares + 5 (γ·m, +r, −Q, α·δ, +Q); touches A (row s') + 2 (read and
  write Q[s,a]); bytes 4·touches + the transition's bytes (4 four-byte fields = 16;
  online 17 with the done byte). A terminal online step has target r: flops 3, touches 2.
- ``q_update``, SARSA online: target r + γ·Q[s',a'] with a' chosen by the step's ``act``:
  flops 5, touches 3 (terminal: 3 and 2). Offline SARSA has no next action in the data,
  so the agent picks a' ε-greedily from its own table (random number draws outside the
  count): flops 5, + A−1 compares when a' is greedy; touches 2 + A (greedy: all of row
  s') or 2 + 1 (random a': Q[s',a'] only); bytes 4·touches + 16.
- ``aggregate`` (host, per round): flops agents·S·A adds + S·A divides; bytes 4·S·A·
  (agents + 1): read every agent's table, write the average.

int32 fixed point (SwiftRL uses INT32 to avoid emulated FP32 on DPUs): a Q-value or
reward x is stored as round(x·2^B) with B = ``int32_scale_bits``, as many fractional
bits as the env's value range leaves (FrozenLake 25, Taxi 21, CliffWalking 19 at
γ 0.95); values below 2^-B round to 0. α and γ are multipliers round(α·2^24) and
round(γ·2^24); a product ``(m·y + 2^23) >> 24`` is the widening 32×32→64-bit multiply,
rounded half up and shifted back; flops count it as one multiply, like the fp32 one.
The host's average divides the int64 sum with rounding half up. In fp32 the table is
stored as float32 (``array('f')`` rounds every write); the arithmetic between a read and
a write runs in binary64, as C compiled with FLT_EVAL_METHOD 1 does.

The simulated twin, ``program(machine)``, sits at the end of this module: the same loops
on a SimPy Machine, with the Q updates on the CPU, a GPU or UPMEM DPUs (SwiftRL).
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

import gymnasium as gym
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rldse.errors import RldseError
from rldse.models import OpColumns
from rldse.models.cpu import roofline_seconds
from rldse.models.pim import OpMix
from rldse.models.spec import Param
from rldse.sim.machine import Cycle, Machine, Outcome
from rldse.trace import Trace
from rldse.workloads.base import CaptureConfig, Progress, build_trace, no_progress
from rldse.workloads.recorder import NullRecorder, Recorder
from rldse.workloads.swiftrl_format import line_of_row, read_swiftrl

ALGORITHMS = ("q_learning", "sarsa")
Q_BYTES = 4  # one fp32 or int32 Q-value
OFFLINE_TRANSITION_BYTES = 16  # state, action, reward, next_state: 4 bytes each
ONLINE_TRANSITION_BYTES = 17  # the same plus the done byte
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
#: Offline defaults: SwiftRL's multi-agent reference run (REFERENCE.md §7).
OFFLINE_ALPHA, OFFLINE_GAMMA, OFFLINE_EPSILON = 0.1, 0.95, 0.1
#: Evaluation cap for envs without a time limit (CliffWalking): a greedy loop must end.
EVAL_MAX_STEPS = 200


class TabularParams(BaseModel):
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


@dataclass(frozen=True)
class Evaluation:
    success_rate: float
    mean_return: float
    episodes: int


# ---- environments and parameters ------------------------------------------------------

def env_defaults(env_id: str, map_name: str | None = None) -> EnvDefaults:
    if env_id not in TABULAR_ENVS:
        raise RldseError(f"env '{env_id}' is not a tabular env (supported: "
                         f"{', '.join(TABULAR_ENVS)})")
    return FROZENLAKE_8X8 if map_name == "8x8" else TABULAR_ENVS[env_id]


def make_env(env_id: str, map_name: str | None = None, **kwargs) -> gym.Env:
    """The Gymnasium env (gymnasium's defaults: FrozenLake is slippery)."""
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
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise RldseError(f"option '{loc}': {err['msg']}") from None
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


def evaluate_greedy(env_id: str, q: np.ndarray, episodes: int = 1000, seed: int = 0,
                    map_name: str | None = None) -> Evaluation:
    """Run the greedy policy of ``q``; success = reaching the goal.

    FrozenLake also terminates in holes (reward 0), so success there needs reward 1;
    Taxi and CliffWalking terminate only at their goal.
    """
    env = make_env(env_id, map_name)
    if env.spec.max_episode_steps is None:
        env = gym.wrappers.TimeLimit(env, EVAL_MAX_STEPS)
    policy = greedy_policy(q).tolist()
    frozen = env_id.startswith("FrozenLake")
    successes, total = 0, 0.0
    state, _ = env.reset(seed=seed)
    for _ in range(episodes):
        done = False
        while not done:
            state, reward, terminated, truncated, _ = env.step(policy[state])
            total += reward
            done = terminated or truncated
        successes += terminated and (reward > 0 or not frozen)
        state, _ = env.reset()
    return Evaluation(successes / episodes, total / episodes, episodes)


# ---- online training ------------------------------------------------------------------

class _Ticker:
    """Calls ``progress`` about every 1% of ``total`` instead of every step."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.step, self.pending = progress, max(1, total // 100), 0

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
    # (flops, bytes, touches) of one update, bootstrapped or terminal (module docstring)
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
    """(flops, touches) of n updates; see the module docstring."""
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
            tables = group.run_round(*msg, no_progress)
            conn.send(("ok", tables, rec.rows))
            rec.rows = []
    except Exception:
        conn.send(("error", traceback.format_exc(), []))
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
            status, payload, rows = conn.recv()
            if status != "ok":
                raise RuntimeError(f"an agent worker process failed:\n{payload}")
            tables += payload
            if self.rec.enabled:
                self.rec.rows += rows
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


# ---- the simulated twin (rldse simulate) ----------------------------------------------
#
# ``program(m)`` replays the loop above on a Machine, on the device that
# ``placement.q_update`` names. Online traces replay the online loop (CPU only). Offline,
# every round each agent runs ``passes_per_round`` passes over its chunk and the host
# averages the tables, as ``train_offline`` does; what differs per device is how a round
# is costed (see ``_cpu_program``, ``_gpu_program``, ``_pim_program``). A round of all
# agents is one booking per lane or device and one SimPy timeout, so events grow with
# rounds (online: with chunks of ONLINE_CHUNK steps), never with transitions.

#: Online steps merged into one event (no other process observes the single agent).
ONLINE_CHUNK = 10_000
#: Multi-process costs of the CPU twin that no trace row and no fingerprint number holds.
PIPE_ROUND_TRIP = Param(30e-6, "s", "measured: multiprocessing Pipe send + recv of a small "
                        "message took 25 µs on the development host (2-vCPU KVM EPYC)",
                        (10e-6, 100e-6))
FORK = Param(2e-3, "s", "measured: starting one forked worker process took 1.5 ms on the "
             "development host", (0.5e-3, 20e-3))
#: GPU twin: what one update costs on a thread's dependent chain.
GPU_DEPENDENT_LOADS = Param(2, "count", "global loads in sequence per update: the "
                            "transition, then the Q entries at the states it names (a plain "
                            "kernel; 1 if the next transition is prefetched)", (1, 2))
GPU_DEPENDENT_OP = Param(2.7e-9, "s", "one dependent ALU op: about 4 cycles of issue "
                         "latency (Jia et al., arXiv 1804.06826) at about 1.5 GHz",
                         (1.5e-9, 5e-9))
#: PIM twin: native instructions of the DPU kernel per transition besides the arithmetic.
DPU_FIELD_LOADS = 4  # s, a, r, s' from the tasklet's WRAM buffer
DPU_ADDRESS_OPS = 3  # s'·A and s·A + a (A a small constant: shifts and adds)
DPU_LOOP_OPS = 3  # index increment, bound compare, branch
DPU_FIXED_POINT_OPS = 4  # int32: two (x + 2^23) >> 24 rescalings, an add and a shift each
DPU_SARSA_DRAW_OPS = 7  # offline SARSA's a': xorshift32 (3 shifts, 3 xors), the ε compare
DPU_STACK = Param(1024, "B", "assumption: WRAM stack per tasklet (SDK stacks are set at "
                  "build time; 1 KB holds this kernel's few locals)", (256, 2048))
#: MRAM DMA sizes the WRAM layout tries for each tasklet's transition buffer (SDK: 8-2048 B).
DPU_BUFFERS = (2048, 1024, 512, 256, 128, 64, 32, 16, 8)


@dataclass(frozen=True)
class _Offline:
    """An offline trace's loop as the twin runs it: the trace's numbers and the knobs."""

    algorithm: str
    n_states: int
    n_actions: int
    dtype: str  # the run's number format (knob, else the trace's)
    transitions: int  # dataset size N
    agents: int
    passes: int
    passes_per_round: int
    flops_per: float  # per transition, from the trace's q_update rows
    touches_per: float
    bytes_per: float

    @property
    def rounds(self) -> int:
        return self.passes // self.passes_per_round

    @property
    def updates(self) -> int:
        return self.transitions * self.passes

    @property
    def q_bytes(self) -> int:
        return Q_BYTES * self.n_states * self.n_actions

    @property
    def compares_per(self) -> float:
        """Compares of the max over actions per update (the flops beyond the 5 of the TD
        arithmetic, see the module docstring)."""
        return max(self.flops_per - 5.0, 0.0)


def program(m: Machine) -> Outcome:
    """The tabular loop on machine ``m``, on the device ``placement.q_update`` names."""
    info = m.trace.meta.workload_info
    place = m.spec.placement.q_update
    if info.get("mode") == "online":
        if place != "cpu":
            raise RldseError(f"placement.q_update: '{place}' runs offline (SwiftRL-style) "
                             "tabular traces only; this trace is online (one agent stepping "
                             "its env), which runs on 'cpu'")
        return _online_program(m)
    if place == "cpu":
        return _cpu_program(m, _offline(m, default_agents=int(info["agents"])))
    if place == "gpu":
        return _gpu_program(m, _offline(m, default_agents=int(info["agents"])))
    return _pim_program(m, _offline(m, default_agents=m.model("pim").spec.dpus))


def _offline(m: Machine, default_agents: int) -> _Offline:
    info, k = m.trace.meta.workload_info, m.knobs
    n = k.transitions or int(info["dataset_transitions"])
    ppr = int(info["passes_per_round"])
    passes = k.passes or int(info["passes"])
    if passes % ppr:
        raise RldseError(f"workload.passes: {passes} is not a multiple of the trace's "
                         f"passes_per_round ({ppr})")
    agents = k.agents or min(default_agents, n)
    if agents > n:
        raise RldseError(f"workload.agents: {agents} agents need at least as many "
                         f"transitions (workload.transitions is {n})")
    upd = m.trace.ops[m.trace.ops["phase"] == "q_update"]
    items = float(upd["items"].sum())
    return _Offline(
        algorithm=m.trace.meta.algorithm, n_states=int(info["n_states"]),
        n_actions=int(info["n_actions"]), dtype=k.dtype or str(info["dtype"]),
        transitions=n, agents=agents, passes=passes, passes_per_round=ppr,
        flops_per=float(upd["flops"].sum()) / items,
        touches_per=float(upd["touches"].sum()) / items,
        bytes_per=float(upd["bytes"].sum()) / items)


def _split(n: int, parts: int, i: int) -> int:
    """Start of part i when n items are cut into `parts` contiguous parts (train_offline)."""
    return n * i // parts


# ---- CPU: agents in worker processes ---------------------------------------------------

@dataclass(frozen=True)
class _Glue:
    """Untimed time of the captured offline loop, from its timestamps (host seconds)."""

    load_per_transition_s: float  # before the first update: chunks to Python lists, forks
    agent_switch_s: float  # between two agents of one process: table in, table out
    round_s: float  # per round besides the agents' work and the average (ticks, pipes)


def _ipc_s(workers: int, q_bytes: int, agents: int, host_copy_gbs: float) -> float:
    """Per round with worker processes: a pipe round trip to each, and the tables pickled
    through it (start table out, every agent's table back) at the host's copy rate."""
    if workers <= 1:
        return 0.0
    return workers * PIPE_ROUND_TRIP.value + q_bytes * (workers + agents) / (host_copy_gbs * 1e9)


def _offline_glue(m: Machine) -> _Glue:
    """Split the capture's untimed wall time into per-transition, per-agent and per-round
    parts: gaps between consecutive agents of one process are agent switches; what a round
    took beyond its busiest process's agents and the average is the round's own glue."""
    info, ops = m.trace.meta.workload_info, m.trace.ops
    agents, workers = int(info["agents"]), int(info["workers"])
    edges = np.array([_split(agents, workers, w) for w in range(workers + 1)])
    upd = ops[ops["phase"] == "q_update"]
    agent = upd["worker"].astype(str).str.rpartition("/")[2].astype(int).to_numpy()
    df = pd.DataFrame({"iter": upd["iter"].to_numpy(), "start": upd["start_s"].to_numpy(),
                       "dur": upd["dur_s"].to_numpy(),
                       "proc": np.searchsorted(edges, agent, side="right") - 1})
    df = df.sort_values(["iter", "proc", "start"], kind="stable")
    same = (df["iter"].to_numpy()[1:] == df["iter"].to_numpy()[:-1]) & \
        (df["proc"].to_numpy()[1:] == df["proc"].to_numpy()[:-1])
    ends = (df["start"] + df["dur"]).to_numpy()
    gaps = df["start"].to_numpy()[1:][same] - ends[:-1][same]
    switch_s = float(np.clip(gaps, 0, None).mean()) if len(gaps) else 0.0
    agg = ops[ops["phase"] == "aggregate"].groupby("iter")["dur_s"].sum()
    first = df.groupby("iter")["start"].min()
    per_proc = df.groupby(["iter", "proc"])["dur"].agg(["sum", "count"])
    busy = (per_proc["sum"] + per_proc["count"] * switch_s).groupby(level=0).max()
    # traces whose times start at the recorder's calibration, not the loop: the loop ends
    # right after its last average, so that end is at least the wall time from its start
    last_end = float((ops["start_s"] + ops["dur_s"]).max())
    offset = max(last_end - m.trace.meta.wall_time_s, 0.0)
    span = np.append(np.diff(first.to_numpy()),
                     m.trace.meta.wall_time_s + offset - first.iloc[-1])
    glue = span - busy.to_numpy() - agg.reindex(first.index, fill_value=0.0).to_numpy()
    glue = glue[:-1] if len(glue) > 1 else glue  # the last round also holds the teardown
    q_bytes = int(info["q_table_bytes"])
    ipc = _ipc_s(workers, q_bytes, agents, m.trace.meta.host.copy_gbs)
    round_s = max(float(glue.mean()) - ipc, 0.0)
    forks = workers * FORK.value if workers > 1 else 0.0
    load_s = max(float(first.iloc[0]) - offset - forks, 0.0) * workers  # built in parallel
    return _Glue(load_s / int(info["dataset_transitions"]), switch_s, round_s)


def _aggregate_s(m: Machine, agents: int) -> float:
    """The host's average of ``agents`` tables on the target CPU, from the trace's aggregate
    rows with their work rescaled to that many agents (flops agents·S·A + S·A, bytes
    4·S·A·(agents + 1)): the part of a row's measured time its host roofline explains
    scales with the roofline, the rest (numpy call overhead) stays, as offpolicy rescales
    a learner step to another batch size; then the CPU model costs it on the target."""
    ops, cm = m.trace_ops("aggregate"), m.model("cpu")
    info = m.trace.meta.workload_info
    cells = int(info["n_states"]) * int(info["n_actions"])
    flops = np.full(len(ops), float((agents + 1) * cells))
    bytes_ = np.full(len(ops), float(Q_BYTES * cells * (agents + 1)))
    old = roofline_seconds(cm.host, ops.flops, ops.bytes, ops.touches)
    new = roofline_seconds(cm.host, flops, bytes_, ops.touches)
    explained = np.minimum(ops.host_dur_s, old)
    scale = np.divide(new, old, out=np.ones_like(old), where=old > 0)
    rescaled = OpColumns(phase=ops.phase, dtype=ops.dtype, items=np.full(len(ops), float(agents)),
                         flops=flops, bytes=bytes_, touches=ops.touches,
                         host_dur_s=ops.host_dur_s - explained + explained * scale)
    return float(np.mean(cm.op_seconds(rescaled)))


def _cpu_program(m: Machine, sh: _Offline) -> Outcome:
    """Agents in ``workers`` processes on the CPU's cores, as ``train_offline`` runs them.

    Workers = ``workload.cores``, else the trace's worker count (so a replay on the capture
    host reproduces the captured run; more cores predict more workers), at most the agents.
    Worker w runs agents [G·w/W, G·(w+1)/W) one after another. An agent's round costs its
    chunk × passes_per_round × the trace's cost per transition (a q_update row's cost on
    this CPU / its items; rows are taken in turn from a seeded start) plus one agent switch.
    Then the host averages (``_aggregate_s``) and runs its per-round glue, plus the pipe
    traffic when W > 1. Before round 0 the chunks are loaded (the trace's time before its
    first update, per transition, split over the workers, plus a fork per worker). Untimed
    glue is measured host time, scaled like interpreter time. ``dtype`` cannot change a
    CPU's cost here: the trace measured its own number format.

    More workers than cores share them (the OS time-slices processes): a round's agents
    then take max(the busiest worker, all workers' work / cores), not a FIFO queue of
    whole workers. A trace captured with more workers than its host had CPUs measured its
    updates while sharing, so its costs are divided by workers / CPUs first.
    """
    info, k = m.trace.meta.workload_info, m.knobs
    env, clock, cpu, cm = m.env, m.clock, m.device("cpu"), m.model("cpu")
    workers = min(k.cores or int(info["workers"]), sh.agents)
    g = _offline_glue(m)
    scale = cm.interp_scale
    shared = max(1.0, int(info["workers"]) / m.trace.meta.host.cores)
    upd_ops = m.trace_ops("q_update")
    per_transition = Cycle(m.phase_cost("q_update", "cpu") / np.maximum(upd_ops.items, 1.0)
                           / shared, start=int(m.rng.integers(len(upd_ops))))
    agg_s = _aggregate_s(m, sh.agents)
    ipc_s = _ipc_s(workers, sh.q_bytes, sh.agents, m.trace.meta.host.copy_gbs) * scale
    round_glue_s = g.round_s * scale + ipc_s
    switch_s = g.agent_switch_s * scale / shared
    load_s = (g.load_per_transition_s * sh.transitions / workers * scale
              + (workers * FORK.value if workers > 1 else 0.0))
    groups = []  # (agents, transitions per pass) of each worker
    for w in range(workers):
        lo, hi = _split(sh.agents, workers, w), _split(sh.agents, workers, w + 1)
        n = _split(sh.transitions, sh.agents, hi) - _split(sh.transitions, sh.agents, lo)
        groups.append((hi - lo, n * sh.passes_per_round))
    split = {"load_s": load_s, "q_update_s": 0.0, "sync_s": 0.0, "aggregate_s": 0.0}

    def host():
        t = cpu.book(env.now, load_s, "load")
        clock.spend("host", "load", "cpu", load_s)
        yield env.timeout(t - env.now)
        for _ in range(sh.rounds):
            t0, work = env.now, []
            for n_agents, n in groups:
                s_upd = n * per_transition.take(n_agents) / n_agents
                s_sw = n_agents * switch_s
                work.append(s_upd + s_sw)
                clock.spend("agent", "q_update", "cpu", s_upd, n_agents)
                clock.spend("agent", "sync", "cpu", s_sw, n_agents)
            if workers <= cpu.lanes:
                ends = [cpu.book(t0, s, "q_update") for s in work]
            else:  # time-sliced: the work spread over every core, the busiest worker a floor
                share = sum(work) / cpu.lanes
                ends = [cpu.book(t0, share, "q_update") for _ in range(cpu.lanes)]
                ends = [max(t0 + s, max(ends)) for s in work]
            t_agents = max(ends)
            t = cpu.book(t_agents, round_glue_s + agg_s, "aggregate")
            clock.spend("host", "aggregate", "cpu", agg_s)
            clock.spend("host", "sync", "cpu", round_glue_s)
            clock.spend("host", "wait:agents", "any", t_agents - t0, 0)
            clock.spend("agent", "wait:host", "any", sum(t - e for e in ends), 0)
            split["q_update_s"] += t_agents - t0
            split["sync_s"] += round_glue_s
            split["aggregate_s"] += agg_s
            yield env.timeout(t - env.now)

    env.process(host())
    env.run()
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split)


# ---- GPU: one thread per agent ----------------------------------------------------------

def _gpu_program(m: Machine, sh: _Offline) -> Outcome:
    """The dataset resident in GPU memory; per round one kernel updates every agent's table
    (one thread per agent: agents in parallel, an agent's transitions in order), then an
    averaging kernel writes the next start table. Agents: ``workload.agents``, else the
    trace's.

    A thread's transitions form a dependent chain: each update loads its transition, then
    the Q entries at the states it names (row s' for the max, Q[s,a]), then computes the
    max over actions and the TD step, and stores Q[s,a], which the next update may read.
    So an update costs GPU_DEPENDENT_LOADS global-memory latencies (the part's
    ``mem_latency_ns``, a miss to device memory: a pessimistic bound when the tables stay
    in L2; set it lower to model hits) plus its flops as dependent ALU ops
    (GPU_DEPENDENT_OP each). The kernel takes launch + max(longest chain, the roofline of
    all updates' flops and bytes): the GPU model's kernel form with the chain as its
    latency term, like its sum-tree descent. Copies: the dataset in once, the final table
    out once (``copy_seconds``). Memory: dataset + every agent's table + the average.
    Sources: GPU_DEPENDENT_* above, and rldse/models/gpu.py for launch, latency, roofline.
    """
    env, clock, gm = m.env, m.clock, m.model("gpu")
    gpu = m.gpus[0]
    dtype = sh.dtype
    chunk = -(-sh.transitions // sh.agents) * sh.passes_per_round
    per_update_s = (GPU_DEPENDENT_LOADS.value * gm.spec.mem_latency_ns * 1e-9
                    + sh.flops_per * GPU_DEPENDENT_OP.value)
    n_round = sh.transitions * sh.passes_per_round
    roof_s = float(gm.kernel_seconds(0, n_round * sh.flops_per,
                                     n_round * sh.bytes_per + sh.agents * sh.q_bytes, dtype))
    kernel_s = float(gm.kernel_seconds(1, 0, 0)) + max(chunk * per_update_s, roof_s)
    cells = sh.n_states * sh.n_actions
    average_s = float(gm.kernel_seconds(1, (sh.agents + 1) * cells,
                                        sh.q_bytes * (sh.agents + 1), dtype))
    h2d_s = float(gm.copy_seconds(sh.transitions * OFFLINE_TRANSITION_BYTES))
    d2h_s = float(gm.copy_seconds(sh.q_bytes))
    need = sh.transitions * OFFLINE_TRANSITION_BYTES + (sh.agents + 1) * sh.q_bytes

    def host():
        t = gpu.book(env.now, h2d_s, "load")
        clock.spend("host", "load", "gpu", h2d_s)
        for _ in range(sh.rounds):
            t = gpu.book(t, kernel_s, "q_update")
            t = gpu.book(t, average_s, "aggregate")
            yield env.timeout(t - env.now)
        clock.spend("host", "q_update", "gpu", kernel_s * sh.rounds, sh.agents * sh.rounds)
        clock.spend("host", "aggregate", "gpu", average_s * sh.rounds, sh.rounds)
        t = gpu.book(env.now, d2h_s, "sync")
        clock.spend("host", "sync", "gpu", d2h_s)
        yield env.timeout(t - env.now)

    env.process(host())
    env.run()
    split = {"h2d_s": h2d_s, "kernel_s": kernel_s * sh.rounds,
             "average_s": average_s * sh.rounds, "d2h_s": d2h_s}
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split,
                   gpu_memory_peak_bytes=int(need), gpu_memory_ok=bool(gm.fits(need)))


# ---- PIM: SwiftRL on UPMEM ----------------------------------------------------------------

def dpu_mix(sh: _Offline) -> OpMix:
    """Work of one Q-learning or SARSA update in the DPU kernel (per transition).

    Arithmetic in the kernel's data type (INT32 native; FP32 emulated in software):
    ``add`` = the compares of the max over actions (A − 1 for Q-learning; for SARSA only
    when a' is greedy: from the trace's flops) + 3 (+r, −Q[s,a], +Q[s,a]); ``mul`` = 2
    (γ·max, α·δ). An FP32 compare is counted as an emulated add (PrIM gives no compare
    rate; a soft-float compare is cheaper, so this bounds it from above). The fixed-point
    products count as INT32 multiplies, as SwiftRL's INT32 kernel does (the Python twin
    widens to 64 bits, which on a DPU would cost an INT64 multiply). ``native`` INT32
    instructions: 4 loads of the transition's fields, 3 of address arithmetic, 1 load or
    store per Q touch (A + 2 for Q-learning), 1 select per compare, 3 of loop control,
    int32: 4 for the two rounding rescalings; SARSA: 7 to draw a' (xorshift32, ε compare).
    Q-learning with A = 4 in INT32: add 6, mul 2, native 23 (87 instructions at PrIM's
    costs); in FP32: 6 emulated adds, 2 emulated multiplies, native 19 (776).
    """
    native = (DPU_FIELD_LOADS + DPU_ADDRESS_OPS + sh.touches_per + sh.compares_per
              + DPU_LOOP_OPS)
    if sh.dtype == "int32":
        native += DPU_FIXED_POINT_OPS
    if sh.algorithm == "sarsa":
        native += DPU_SARSA_DRAW_OPS
    return OpMix(add=sh.compares_per + 3, mul=2, native=native)


def wram_layout(wram_bytes: int, q_bytes: int, tasklets: int) -> tuple[bool, int]:
    """(Q-table in WRAM?, each tasklet's transition buffer in bytes).

    WRAM holds every tasklet's stack (DPU_STACK) and transition buffer; the Q-table stays
    there when it fits beside them with a buffer of at least 64 B (the largest such buffer
    is chosen: fewer DMA setups). Otherwise the table lives in MRAM and the buffers take
    the WRAM. With 16 tasklets and 1 KB stacks, 2 KB buffers leave 16 KB for Q: FrozenLake
    (256 B), CliffWalking (768 B) and Taxi (12 KB) fit.
    """
    for buf in DPU_BUFFERS[:6]:
        if tasklets * (DPU_STACK.value + buf) + q_bytes <= wram_bytes:
            return True, buf
    for buf in DPU_BUFFERS:
        if tasklets * (DPU_STACK.value + buf) <= wram_bytes:
            return False, buf
    raise RldseError(f"pim.tasklets: {tasklets} tasklets' stacks ({DPU_STACK.value} B each) "
                     f"do not fit in WRAM ({wram_bytes} B)")


def _pim_program(m: Machine, sh: _Offline) -> Outcome:
    """SwiftRL on UPMEM: the dataset split over DPUs, one agent per DPU by default.

    Agents go to DPUs in contiguous blocks (D = min(agents, DPUs) DPUs used); a DPU runs
    its agents one after another, each with its chunk streamed from MRAM in its tasklets'
    buffers and its table in WRAM (``wram_layout``; else in MRAM, where each update pays
    a DMA for row s', one for Q[s,a] and a write-back). The tasklets share the agent's
    table and take interleaved slices of its chunk (SwiftRL's kernel, lock-free; one
    tasklet gives the strictly in-order loop at 1/11 of the issue rate). Kernel time =
    the busiest DPU's updates × ``dpu_mix`` through ``PimModel.kernel_seconds``' rule
    (compute and DMA overlap with ≥ 2 tasklets), plus loading and storing each agent's
    table (MRAM↔WRAM, not overlapped).

    Per run and round, SwiftRL's (and PrIM's) time split:
    - cpu_to_dpu: the dataset once (parallel per rank, ranks in parallel, padded to the
      largest chunk, as a parallel push is) and the first start table (broadcast);
    - kernel: every round;
    - inter_dpu: between rounds, every DPU's tables to the CPU (parallel per rank), the
      host's average (a roofline on one core of agents·S·A adds) and the broadcast of the
      new start table: there is no DPU↔DPU path. The last average is counted here too;
    - dpu_to_cpu: the last round's tables.
    Energy: DPU instructions (``instruction_joules``) on top of the DIMMs' idle power.
    """
    env, clock, k = m.env, m.clock, m.knobs
    pm, pim, cpu = m.model("pim"), m.device("pim"), m.device("cpu")
    ps = pm.spec
    tasklets = k.tasklets or ps.tasklets
    dpus = min(sh.agents, ps.dpus)
    # transitions and agents of each DPU (agents in contiguous blocks, as in train_offline)
    first_agent = np.array([_split(sh.agents, dpus, j) for j in range(dpus + 1)], np.int64)
    starts = sh.transitions * first_agent // sh.agents
    busiest = int(np.diff(starts).max())
    agents_per_dpu = int(np.diff(first_agent).max())
    mram_need = busiest * OFFLINE_TRANSITION_BYTES + agents_per_dpu * sh.q_bytes
    if mram_need > ps.mram_bytes:
        raise RldseError(f"pim: {mram_need:,} bytes of transitions and tables per DPU exceed "
                         f"its MRAM ({ps.mram_bytes:,} B); use more DPUs (workload.agents) or "
                         "fewer transitions")
    q_in_wram, buf = wram_layout(ps.wram_bytes, sh.q_bytes, tasklets)
    mix = dpu_mix(sh)
    items = busiest * sh.passes_per_round
    compute_s = float(pm.compute_seconds(items, mix, sh.dtype, tasklets))
    dma_s = float(pm.mram_seconds(items * OFFLINE_TRANSITION_BYTES, buf))
    if not q_in_wram:
        row = -(-Q_BYTES * sh.n_actions // 8) * 8
        dma_s += items * float(pm.mram_seconds(row, row) + pm.mram_seconds(8, 8)
                               + pm.mram_seconds(8, 8, write=True))
    body_s = compute_s + dma_s if tasklets == 1 else max(compute_s, dma_s)
    table = -(-sh.q_bytes // 8) * 8
    swap_s = agents_per_dpu * float(pm.mram_seconds(table, min(table, 2048))
                                    + pm.mram_seconds(table, min(table, 2048), write=True))
    kernel_s = body_s + swap_s
    load_s = float(pm.cpu_to_dpu_seconds(busiest * OFFLINE_TRANSITION_BYTES, dpus, "parallel"))
    bcast_s = float(pm.cpu_to_dpu_seconds(sh.q_bytes, dpus, "broadcast"))
    gather_s = float(pm.dpu_to_cpu_seconds(agents_per_dpu * sh.q_bytes, dpus, "parallel"))
    cells = sh.n_states * sh.n_actions
    average_s = float(m.model("cpu").roofline_seconds((sh.agents + 1) * cells,
                                                      sh.q_bytes * (sh.agents + 1)))
    rounds = sh.rounds

    def host():
        t = pim.book_all(env.now, load_s + bcast_s, "load")
        for r in range(rounds):
            # a round on the DPUs: the start table (after round 0), the kernel, the tables back
            parts = ([("sync", bcast_s)] if r else []) + [("q_update", kernel_s),
                                                          ("sync", gather_s)]
            for phase, s in parts:
                t = pim.book_all(t, s, phase)
            t = cpu.book(t, average_s, "aggregate")
            yield env.timeout(t - env.now)

    env.process(host())
    env.run()
    # every round costs the same, so the accounting is in closed form
    between = rounds - 1
    split = {"cpu_to_dpu_s": load_s + bcast_s, "kernel_s": kernel_s * rounds,
             "inter_dpu_s": (gather_s + bcast_s) * between + average_s * rounds,
             "dpu_to_cpu_s": gather_s, "inter_dpu_gather_s": gather_s * between,
             "inter_dpu_average_s": average_s * rounds, "inter_dpu_broadcast_s": bcast_s * between}
    host_s = (gather_s + bcast_s) * between + gather_s
    clock.spend("host", "load", "pim", load_s + bcast_s)
    clock.spend("host", "sync", "pim", host_s, 2 * rounds - 1)
    clock.spend("host", "aggregate", "cpu", average_s * rounds, rounds)
    clock.spend("host", "wait:agents", "any", kernel_s * rounds, 0)
    clock.spend("agent", "q_update", "pim", kernel_s * rounds * dpus, sh.agents * rounds)
    clock.spend("agent", "wait:host", "any", (host_s + average_s * rounds + load_s + bcast_s)
                * dpus, 0)
    instructions = sh.updates * pm.instructions(mix, sh.dtype)
    pim.add_action_energy("dpu_instructions", float(pm.instruction_joules(instructions)))
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split)


# ---- online: one agent stepping its env ---------------------------------------------------

def _online_program(m: Machine) -> Outcome:
    """Replay the online loop on one core: per step an env step, an act (SARSA: one more
    per episode), a Q update, and resets folded in at the trace's rate per step; merged in
    chunks of ONLINE_CHUNK steps. ``loop`` is the loop's untimed glue (appending the
    transition log, episode bookkeeping, the recorder's own calls): the trace's wall time
    not inside any recorded operation, per step, scaled like interpreter time."""
    k, env, clock, cpu = m.knobs, m.env, m.clock, m.device("cpu")
    if k.agents not in (None, 1):
        raise RldseError(f"workload.agents: online tabular traces run one agent, got {k.agents}")
    ops = m.trace.ops
    trace_steps = int(ops.loc[ops["phase"] == "env_step", "items"].sum())
    steps = k.env_steps or trace_steps
    step_c, act_c, upd_c = (m.cycle(p, "cpu") for p in ("env_step", "act", "q_update"))
    acts_per_step = int((ops["phase"] == "act").sum()) / trace_steps
    resets = m.phase_cost("env_reset", "cpu") if (ops["phase"] == "env_reset").any() else None
    reset_per_step = float(resets.sum()) / trace_steps if resets is not None else 0.0
    untimed = m.trace.meta.wall_time_s - float(ops["dur_s"].sum())
    glue_per_step = max(untimed, 0.0) / trace_steps * m.model("cpu").interp_scale
    done = {"steps": 0, "acts": 0}

    def agent():
        while done["steps"] < steps:
            n = min(ONLINE_CHUNK, steps - done["steps"])
            done["steps"] += n
            n_act = round(done["steps"] * acts_per_step) - done["acts"]
            done["acts"] += n_act
            parts = {"env_step": step_c.take(n), "act": act_c.take(n_act),
                     "q_update": upd_c.take(n), "env_reset": n * reset_per_step,
                     "loop": n * glue_per_step}
            t = cpu.book(env.now, sum(parts.values()), "env_step")
            for phase, s in parts.items():
                count = {"act": n_act, "env_reset": 0, "loop": 0}.get(phase, n)
                clock.spend("agent", phase, "cpu", s, count)
            yield env.timeout(t - env.now)

    env.process(agent())
    env.run()
    return Outcome(env_steps=steps, updates=steps)
