"""The run's unit costs on its parts, from the trace's rows: env steps, acts (an actor's
own or an inference server's batches), minibatch steps and the learner's copies. Batch-
dependent work is rescaled with the networks' per-layer work (docs/architecture.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rldse.kernels.mlp import F32
from rldse.models import OpColumns
from rldse.models.collectives import Cluster, choose, p2p_edge
from rldse.models.cpu.roofline import with_works
from rldse.sim.machine import Cycle, Machine, SplitCycle
from rldse.workloads.actor_learner.program.handoffs import Handoffs, handoff_costs
from rldse.workloads.actor_learner.program.memory import GpuMemory
from rldse.workloads.actor_learner.program.networks import act_work, learn_work
from rldse.workloads.actor_learner.program.shape import (
    ANSWER_BYTES,
    MINIBATCH_SCALARS,
    Roles,
    Shape,
)
from rldse.workloads.common.traced import check_traced_operators


@dataclass(frozen=True)
class ServerCosts:
    """Central inference: seconds of one server batch of b actors (b·E observations; index
    b = 0..N), and on a GPU its split into the GPU's share and the server process's
    dispatch on a core of its own (empty on a CPU)."""

    wall_s: list[float]
    device_s: list[float]
    host_s: list[float]


@dataclass(frozen=True)
class Copies:
    """Learner copies per iteration on the kernels' part: the parameters to the host for a
    broadcast, the rollout to the GPU (streamed per window with ``resident_steps``), the
    swapped minibatches (``gpu_swap``)."""

    param_s: float = 0.0
    rollout_s: float = 0.0
    swap_s: float = 0.0


@dataclass(frozen=True)
class NetCosts:
    """Collectives and messages between GPUs and nodes (docs/architecture.md, "Clusters"),
    each one closed-form evaluation per distinct message (rldse.models.collectives):
    the gradient all-reduce of a minibatch step over the learner GPUs, the parameters'
    broadcast to the other nodes, and per node its actors' rollouts to node 0 over its
    NICs side by side (0 for node 0): the whole send, and the part of it the bytes hold
    the link (the rest is latency in flight)."""

    allreduce_s: float = 0.0
    params_s: float = 0.0
    rollout_s: tuple[float, ...] = ()
    rollout_wire_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class Costs:
    """What program(m) books, per unit of work (seconds on the target parts)."""

    env_per_vstep: np.ndarray  # one vector step of an actor's E envs, per trace row
    reset_per_vstep: float  # resets folded in at the trace's rate per vector step
    env: list[Cycle]  # per actor, from a seeded row
    act: list[SplitCycle]  # local inference: per actor (empty with central inference)
    server: ServerCosts | None  # central inference
    learn: SplitCycle  # one minibatch step (one learner's share of the minibatch)
    handoffs: Handoffs
    copies: Copies
    net: NetCosts = NetCosts()


def costs_of(m: Machine, s: Shape, roles: Roles, memory: GpuMemory) -> Costs:
    """Every unit cost of the run; the seeded start rows are drawn in this order: each
    actor's env steps, each actor's acts (local), the minibatches, then the handoffs."""
    env_per_vstep, reset = _env_costs(m, s)
    env = _cycles(env_per_vstep, s.N, m.rng)
    act_ops = _act_rows(m, s)
    act, server = [], None
    if s.central:
        server = _server_costs(m, s, roles, act_ops)
    else:
        act = _local_act(m, s, roles, act_ops)
    return Costs(env_per_vstep=env_per_vstep, reset_per_vstep=reset, env=env, act=act,
                 server=server, learn=_learn_cycle(m, s, roles),
                 handoffs=handoff_costs(m, s, roles.cores), copies=_copies(s, roles, memory),
                 net=_net_costs(m, s))


def _net_costs(m: Machine, s: Shape) -> NetCosts:
    """The run's collectives and network messages, NCCL's choice at each size."""
    nodes = m.system.nodes
    allreduce_s = 0.0
    if s.learners > 1:
        allreduce_s = float(choose(nodes.cluster(s.learners), "all_reduce",
                                   F32 * s.params).seconds)
    if s.nodes == 1:
        return NetCosts(allreduce_s)
    between = nodes.between_nodes()
    nics = between.nics or 1
    sends = [_send(between, len(a) * s.payload / nics) for a in s.node_actors[1:]]
    return NetCosts(allreduce_s,
                    params_s=float(choose(between, "broadcast", F32 * s.params).seconds),
                    rollout_s=(0.0, *(t for t, _ in sends)),
                    rollout_wire_s=(0.0, *(w for _, w in sends)))


def _send(between: Cluster, nbytes_per_nic: float) -> tuple[float, float]:
    """(seconds, of them the bytes on the link) of one node's send over its NICs side by
    side, each carrying ``nbytes_per_nic``, by NCCL's choice of protocol."""
    if not nbytes_per_nic:
        return 0.0, 0.0
    pick = choose(between, "send_recv", nbytes_per_nic)
    _, gbs = p2p_edge(between, str(pick.protocol))
    return float(pick.seconds), nbytes_per_nic / (gbs * 1e9)


def _env_costs(m: Machine, s: Shape) -> tuple[np.ndarray, float]:
    """(per trace row, one vector step of E envs; resets per vector step): the trace's
    rows scaled to E envs, plus stacking and storing a larger observation."""
    scale_e = s.E / s.t_envs
    env_cost = m.phase_cost("env_step")
    resets = (m.phase_cost("env_reset").sum()
              if (m.trace.ops["phase"] == "env_reset").any() else 0.0)
    reset_per_vstep = float(resets) / len(env_cost) * scale_e
    extra = 0.0
    if s.obs_bytes != s.t_obs_bytes:  # stacking and storing a larger observation
        extra = float(m.cpu.model.roofline_seconds(
            0, 2 * s.E * max(0, s.obs_bytes - s.t_obs_bytes)))
    return env_cost * scale_e + extra, reset_per_vstep


def _cycles(costs: np.ndarray, n: int, rng: np.random.Generator) -> list[Cycle]:
    """n cycles over one cost array (one per actor), each from a seeded random row; they
    share the prefix sums."""
    base = Cycle(costs)
    return [base.at(int(rng.integers(len(costs)))) for _ in range(n)]


def _split_cycles(host_s: np.ndarray, device_s: np.ndarray, wall_s: np.ndarray, n: int,
                  rng: np.random.Generator) -> list[SplitCycle]:
    """n split cycles over the same rows (one per actor), each from a seeded random row;
    they share the prefix sums."""
    base = SplitCycle(host_s, device_s, wall_s)
    return [base.at(int(rng.integers(len(wall_s)))) for _ in range(n)]


def _act_rows(m: Machine, s: Shape) -> OpColumns:
    """The trace's act rows with their work at this system's envs per actor and
    observation size: per-step rows run both networks, bootstrap rows the value one."""
    ops = m.trace_ops("act")
    t_full = act_work(s.t_nets, s.t_envs)
    t_value = s.t_nets.value.forward(s.t_envs)
    for work in (t_full, t_value):
        check_traced_operators(m.trace, "act", s.t_envs, work)
    boot = ops.flops == t_value.flops
    full, value = act_work(s.nets, s.E), s.nets.value.forward(s.E)
    return with_works(m.cpu.model.capture_host, ops, [value if b else full for b in boot],
                      [t_value if b else t_full for b in boot], s.E)


def _local_act(m: Machine, s: Shape, roles: Roles, act_ops: OpColumns) -> list[SplitCycle]:
    """Each actor's own acts: on its core, or its dispatch there and the kernels and
    copies on the part."""
    if not roles.act.kernels:
        act_s = np.asarray(m.cpu.model.op_seconds(act_ops))
        return _split_cycles(act_s, np.zeros_like(act_s), act_s, n=s.N, rng=m.rng)
    am = roles.act.model
    t = am.blocking_copy_times(s.E * ANSWER_BYTES,  # the actions read back (blocking)
                               after=am.blocking_copy_times(s.E * s.obs_bytes)
                               + am.op_times(act_ops, layers=s.layers))
    return _split_cycles(t.host_s, t.device_s, t.wall_s, n=s.N, rng=m.rng)


def _server_costs(m: Machine, s: Shape, roles: Roles, act_ops: OpColumns) -> ServerCosts:
    """One server batch of b actors, b = 0..N: on a GPU its kernels and copies; on a CPU
    core the trace's per-step act rescaled to the batch."""
    b = np.arange(s.N + 1)
    B = np.maximum(b * s.E, 1)
    w = [act_work(s.nets, int(x)) for x in B]
    device: list[float] = []
    host: list[float] = []
    if roles.act.kernels:
        flops = np.array([x.flops for x in w], np.float64)
        bytes_ = np.array([x.bytes for x in w], np.float64)
        # with each batch's Work, so the GPU prices its GEMMs by shape
        ops = with_works(m.cpu.model.capture_host, OpColumns.of("act", items=B, flops=flops,
                                                          bytes=bytes_), w, w, B)
        am = roles.act.model
        t = am.blocking_copy_times(B * ANSWER_BYTES, after=am.blocking_copy_times(
            B * s.obs_bytes) + am.op_times(ops, layers=s.layers))
        cost = t.wall_s
        device = np.where(b > 0, t.device_s, 0.0).tolist()
        host = np.where(b > 0, t.host_s, 0.0).tolist()
    else:
        full = act_ops.flops == np.max(act_ops.flops)
        ref = OpColumns.of("act", items=s.E, flops=float(act_ops.flops[full][0]),
                           bytes=float(act_ops.bytes[full][0]),
                           host_dur_s=np.full(len(b), float(np.mean(act_ops.host_dur_s[full]))))
        cost = m.cpu.model.op_seconds(with_works(
            m.cpu.model.capture_host, ref, w, act_work(s.nets, s.E), B))
    cost = np.asarray(cost, np.float64)
    cost[0] = 0.0
    return ServerCosts(cost.tolist(), device, host)


def _learn_cycle(m: Machine, s: Shape, roles: Roles) -> SplitCycle:
    """Minibatch steps from a seeded row: the trace's learn rows with their work at this
    minibatch and these networks (GEMMs by the CPU's curve: rldse.models.cpu.roofline.with_works),
    on the learner's part (a GPU's dispatch on the learner's core)."""
    cpu_model = m.cpu.model
    learn_ops = m.trace_ops("learn")
    traced = {b: learn_work(s.t_nets, b) for b in set(learn_ops.items.astype(int))}
    for b, work in traced.items():
        check_traced_operators(m.trace, "learn", b, work)
    mb = s.mb_learner  # each data-parallel learner runs its share of the minibatch
    learn_ops = with_works(cpu_model.capture_host, learn_ops, learn_work(s.nets, mb),
                           [traced[int(b)] for b in learn_ops.items], mb)
    start = int(m.rng.integers(len(learn_ops)))
    if roles.learn.kernels:
        t = roles.learn.model.op_times(learn_ops, layers=s.layers)
        return SplitCycle(t.host_s, t.device_s, t.wall_s, start)
    return SplitCycle.on_device(np.asarray(cpu_model.op_seconds(learn_ops)), start)


def _copies(s: Shape, roles: Roles, memory: GpuMemory) -> Copies:
    """The learner's copies (docs/architecture.md, "GPU memory"): none without a kernels'
    part; the parameters' copy whenever there is one."""
    g = roles.gpu
    if g is None:
        return Copies()
    param_s = float(g.copy_times(F32 * s.params).wall_s)
    if not roles.learn.kernels:
        return Copies(param_s)
    if memory.swapped:
        per_mb = s.mb * (s.obs_bytes + MINIBATCH_SCALARS * F32)
        return Copies(param_s, swap_s=float(s.n_mb * g.copy_times(per_mb).wall_s))
    if s.W < s.T:  # streamed through the resident window, every epoch
        windows = math.ceil(s.T / s.W)
        per = s.N * s.payload / windows
        return Copies(param_s, rollout_s=float(
            s.epochs * g.copy_times(np.full(windows, per)).wall_s.sum()
            + g.copy_times(s.N * s.E * s.obs_bytes).wall_s))
    return Copies(param_s, rollout_s=float(g.copy_times(
        s.N * (s.payload + s.E * s.obs_bytes)).wall_s))
