"""The simulated twin of the actor-learner PPO loop in ppo.py."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rldse.errors import RldseError
from rldse.kernels.mlp import F32, Work, adam_work, cold, network
from rldse.kernels.network_work import NetworkWork
from rldse.kernels.trace_network import from_info
from rldse.models import OpColumns
from rldse.models.cpu import with_work, with_works
from rldse.models.kinds import PartTime
from rldse.sim import trace_cache
from rldse.sim.machine import Cycle, Machine, Outcome, SplitCycle
from rldse.sim.sharing import shared_ends
from rldse.trace import Trace
from rldse.workloads.actor_learner.ppo_work import ppo_loss_work

#: Per transition: float32 obs, int32 action, float32 logp, reward, done and value.
ROLLOUT_FIELDS = ("obs", "actions", "logp", "rewards", "dones", "values")


# ---- the simulated twin ---------------------------------------------------------------
#
# program(m) replays the loop above on a Machine. Read its docstring first; the helpers
# below it are in the order program() uses them.

#: Per transition besides the observation, a PPO learner holds action, logp, reward, done,
#: value, advantage and return (float32/int32 each): what CleanRL's storage keeps.
_PER_TRANSITION_SCALARS = 7
#: The fields of a rollout the actors send (obs aside): action, logp, reward, done, value.
_SENT_SCALARS = len(ROLLOUT_FIELDS) - 1
#: Fields of a gathered minibatch besides the observation: action, logp, advantage, return.
_MINIBATCH_SCALARS = 4
#: Bytes one inference answers per observation: action, logp, value.
_ANSWER_BYTES = 3 * F32


def program(m: Machine) -> Outcome:
    """Simulate the actor-learner PPO loop on machine ``m`` (rldse.sim.simulate calls this).

    The loop is the real one: the learner broadcasts parameters, N actors (``actors``) each
    collect ``rollout_len`` vector steps of ``envs_per_actor`` environments on C CPU cores
    (``cores``, default all), the learner receives the rollouts, runs ``epochs`` ×
    ⌈N·E·T / minibatch⌉ minibatch steps (``batch_size`` is the minibatch) and broadcasts
    again (``envs_per_actor`` and ``rollout_len`` default to the trace's). Costs are the
    trace's rows costed on the placed parts; batch-dependent work
    (act, learn) is rescaled with the trace's network's own per-layer work (``networks``:
    network_work.py; an MLP trace's by mlp.py's formulas) when envs per actor, minibatch,
    central batches or, for MLPs, the observation size (``obs_bytes``) or ``hidden``
    differ from the capture.

    Inference.
    - ``local``: each actor runs its own policy (placement.act: ``cpu`` its core, ``gpu``
      its own unbatched forwards on the GPU plus the copies).
    - ``central``: one long-lived inference server per GPU (placement.act ``gpu``; actors
      split round-robin) or one on a CPU core (``cpu``). A server takes every observation
      waiting (greedy dynamic batching, no batching timeout), runs one forward at that
      batch (GPU kernels + host→device copy of the observations and device→host copy of
      action, logp and value), and the served actors step their environments on the
      cores (FIFO lanes) and submit again. An actor makes T+1 requests per rollout (the
      last is the bootstrap value). Actor↔server messages are assumed to go through
      shared memory at no cost beyond the copies; the trace has no such rows.

    Learner. ``placement.learn`` ``cpu`` or ``gpu``; with several GPUs the learner runs on
    gpu0 only and inference servers run on every GPU: in the synchronous loop learning
    and inference never overlap, so keeping gpu0 out of inference would only idle it, and
    a data-parallel learner of these small networks is launch-bound (splitting a
    minibatch saves no time and adds an all-reduce). A GPU learner copies the rollout to
    the device each iteration and its parameters back to the host before the broadcast.

    IPC handoffs. The trace's ``sync`` and ``rollout_add`` rows are the *sender's* wall
    time, which on a busy host includes the sender being descheduled after it woke the
    receiver (measured: 4.9 ms per 36 kB send in the loop vs 0.1 ms alone). What is on
    the critical path is the time the receiver saw, and the trace's shared clock has it:
    per iteration, broadcast start → last actor's first act (per send: / actors), and the
    last actor's send → the learner's first learn (per rollout: / actors; it includes
    unpickling, GAE and batching on the learner). Those are what the program books, on the
    learner's core, scaled to the target CPU like any operation.

    ``learner: sync`` is the real loop: actors wait for the broadcast, the learner waits
    for all rollouts. ``learner: async``: actors run ahead with parameters up to
    ``sync_interval`` iterations old; the learner learns on iteration k's rollouts while
    actors collect later ones and broadcasts every ``sync_interval`` updates; a CPU
    learner then keeps one core to itself. Policy lag (``staleness_updates``, per
    iteration): learner iterations between the parameters a rollout was collected with
    and the learner's when it learns on it; 0 in the synchronous loop.

    Merged events (what no other process observes is one event). With local inference an iteration's collection is one
    event: actor a's rollout (its env steps, resets and acts) is one duration d_a from its
    release r_a (when its parameters arrived), and the N rollouts share the C cores as a
    preemptive time-sharing OS would: the collection ends at
    max(max_a r_a + d_a, max_k r_k + Σ_{j ≥ k} d_j / throughput) (releases sorted), the
    standard lower bounds, tight for equal rollouts, where throughput is C cores
    (``CpuSpec.core_throughput``: with SMT's gain, and divided by the measured
    shared-core slowdown when more rollouts than cores are runnable). Per-step
    interleaving is not resolved. With central inference there is one event per batch (and
    one per idle wait of a server); actors are entries in the server's heap, not
    processes, so events grow with batches, not with actors × steps.

    GPU memory (``_gpu_memory``): the learner GPU holds parameters, gradients and Adam
    state, the rollout (observations + 7 scalars per transition, plus the bootstrap
    observation of each env), a gathered minibatch copy (CleanRL's ``b_obs[mb_inds]``
    makes one) and the minibatch's activations and their gradients; an inference GPU holds
    the parameters and a batch. Needing more than ``mem_bytes`` sets
    the ``gpu_memory`` check fails unless ``gpu_swap``: then the rollout and minibatch stay in
    host memory (``swapped_bytes``) and every epoch streams them over the link, charged
    each iteration. ``gpu_memory(m)`` returns the buffers by name.

    ``epochs`` (default: the trace's) is the passes over each rollout. ``resident_steps``
    W is how many of the rollout's T steps the learner must hold on the GPU at once: the
    whole rollout (default) is what Monte-Carlo returns need, since the first step's
    return waits for the last reward; an n-step TD objective needs only W = n + 1. With
    W < T the rollout buffers hold W steps, a minibatch draws from at most N·E·W
    transitions, and the rollout is streamed to the GPU window by window every epoch
    (⌈T/W⌉ copies of its bytes per epoch) instead of being copied once and kept. The
    rollout is produced in host memory by the actors either way, so W changes what must
    fit on the GPU, not how many bytes cross the link in a one-epoch learner.

    ``breakdown_s`` (totals over the run): ``startup_s`` (starting the actor processes:
    the capture's time before its first operation, per actor), ``rollout_s`` (collection,
    from the first actor's release to the last rollout), ``sync_s`` (until the last
    recipient has the parameters), ``handoff_s``, ``learn_s`` (copies and swapping
    included), ``copy_s`` / ``swap_s`` (rollout to the GPU), ``inference_s`` (server
    busy time), and ``iter_s``, the mean iteration.

    Not modelled: process switches, the learner's broadcast taking a core from the first
    actors, IPC between actors and a central server, GAE on the GPU (the handoff stays
    on the CPU); a per-send delivery includes the receiver's wake-up, so broadcasts to
    many actors are pessimistic; ``sync_interval`` matters only with ``async``.
    """
    _refuse_ignored_knobs(m)
    sim = _Sim(m)
    return sim.run()


def _refuse_ignored_knobs(m: Machine) -> None:
    """One-line errors for knobs this placement would accept but not use."""
    k, place = m.knobs, m.spec.placement
    if k.learner == "sync" and k.sync_interval != 1:
        raise RldseError("sync_interval needs learner 'async': the synchronous loop sends "
                         "parameters every iteration", where="workload.sync_interval")
    for name in ("resident_steps", "gpu_swap"):
        if getattr(k, name) and not m.runner("learn").kernels:
            raise RldseError(f"{name} concerns a GPU learner's memory, but learn runs on "
                             f"'{place.learn}'", where=f"workload.{name}")


def _rescale(m: Machine, ops: OpColumns, flops: np.ndarray, bytes_: np.ndarray, items: float):
    """Trace rows with their work replaced, by the CPU model's one rescaling rule."""
    return with_work(m.host.model.host, ops, flops, bytes_, items)


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


@dataclass(frozen=True)
class Nets:
    """The networks a PPO step runs (network_work.py): ``all`` acted and trained together
    (an MLP trace's policy and value networks; otherwise ``workload_info['network']``, one
    network with both heads), ``value`` what a bootstrap row runs."""

    all: tuple[NetworkWork, ...]
    value: NetworkWork
    n_actions: int

    @property
    def params(self) -> int:
        return sum(n.n_params for n in self.all)

    @property
    def layers(self) -> int:
        return sum(len(n.layers) for n in self.all)

    @property
    def activation_bytes(self) -> int:
        """Per sample, every network's activations."""
        return sum(n.activation_bytes for n in self.all)


def networks(m: Machine, obs_dim: int) -> tuple[Nets, Nets]:
    """(the trace's, this system's) networks. An MLP trace's widths follow the knobs
    ``hidden`` and ``obs_bytes`` (obs_dim inputs); a trace with a network description
    keeps it, and refuses knobs that would reshape it."""
    info, k = m.trace.meta.workload_info, m.knobs
    t_pi, t_v = list(info["policy_sizes"]), list(info["value_sizes"])
    net = from_info(info, f"trace {m.trace.digest}")
    if net is None:
        if len(t_v) < 2:
            raise RldseError("an MLP trace without a network description needs its value "
                             "network's widths (at least input and output)",
                             where="workload_info.value_sizes")
        value = network(t_v)
        trace = Nets((network(t_pi), value), value, t_pi[-1])
        hidden = list(k.hidden) if k.hidden else t_pi[1:-1]
        value = network([obs_dim, *hidden, t_v[-1]])
        return trace, Nets((network([obs_dim, *hidden, t_pi[-1]]), value), value, t_pi[-1])
    for name, same in (("hidden", not k.hidden or list(k.hidden) == t_pi[1:-1]),
                       ("obs_bytes", not k.obs_bytes or k.obs_bytes == F32 * t_pi[0])):
        if not same:
            raise RldseError(f"the trace's network is a '{net.kind}' network, described by "
                             "its layers, which this knob cannot reshape",
                             where=f"workload.{name}")
    nets = Nets((net,), net, t_pi[-1])
    return nets, nets


def _act_work(nets: Nets, batch: int) -> Work:
    work = Work(0, 0)
    for net in nets.all:
        work += net.forward(batch)
    return work


def _learn_work(nets: Nets, batch: int) -> Work:
    """One minibatch step of ppo.ppo_grads and Adam (with its clip norm)."""
    work = _act_work(nets, batch)
    for net in nets.all:
        work += net.backward(batch)
    return (work + ppo_loss_work(batch, nets.n_actions) + cold(nets.params, 1)
            + adam_work(nets.params, sum(n.n_tensors for n in nets.all), clip=True))


def trace_handoffs(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per trace iteration: (broadcast → last actor's first act, last actor's rollout send →
    learner's first learn), in seconds on the capture host, from the shared clock."""
    info = trace.meta.workload_info
    T = int(info["rollout_len"])
    ops = trace.ops
    phase = ops["phase"].astype(str).to_numpy()
    worker = ops["worker"].astype(str).to_numpy()
    start = ops["start_s"].to_numpy()
    it = ops["iter"].to_numpy()
    sync = phase == "sync"
    n = int(sync.sum())
    if n == 0:
        return np.zeros(0), np.zeros(0)
    sync_start = np.full(n, np.nan)
    sync_start[np.minimum(it[sync], n - 1)] = start[sync]
    act = (phase == "act") & (worker != "learner")
    first_act = pd.DataFrame({"w": worker[act], "k": it[act] // T, "t": start[act]}) \
        .groupby(["k", "w"]).t.min().groupby("k").max()
    sends = phase == "rollout_add"
    last_send = pd.Series(start[sends]).groupby(it[sends]).max()
    learn = phase == "learn"
    per = max(1, int(learn.sum()) // n)
    first_learn = pd.Series(start[learn]).groupby(it[learn] // per).min()
    ks = np.arange(n)
    deliver = first_act.reindex(ks).to_numpy() - sync_start
    handoff = first_learn.reindex(ks).to_numpy() - last_send.reindex(ks).to_numpy()
    return (np.clip(deliver[np.isfinite(deliver)], 0.0, None),
            np.clip(handoff[np.isfinite(handoff)], 0.0, None))


class _Sim:
    """State and processes of one simulated run (see program())."""

    def __init__(self, m: Machine) -> None:
        self.m = m
        k, info = m.knobs, m.trace.meta.workload_info
        self.k = k
        # what serves act and learn: the host's cores, or kernels its cores issue
        self.act_r, self.learn_r = m.runner("act"), m.runner("learn")
        # ---- shape of the simulated loop ------------------------------------------------
        self.t_actors = int(info["actors"])
        self.t_envs = int(info["envs_per_actor"])
        self.t_T = int(info["rollout_len"])
        self.N = k.actors
        # envs per actor as in the trace unless the spec sets it (its default, 1, is no choice)
        self.E = k.envs_per_actor or self.t_envs
        self.T = k.rollout_len or self.t_T
        self.epochs = k.epochs or int(info["epochs"])
        t_obs_dim = int(info["obs_dim"])
        self.t_obs_bytes = F32 * t_obs_dim
        self.obs_bytes = k.obs_bytes or self.t_obs_bytes
        obs_dim = max(1, math.ceil(self.obs_bytes / F32))
        self.t_nets, self.nets = networks(m, obs_dim)
        self.params = self.nets.params
        self.layers = self.nets.layers  # every network's layers
        self.S = self.N * self.E * self.T  # transitions per iteration
        # steps of the rollout the learner holds on its GPU at once (program docstring)
        self.W = min(k.resident_steps or self.T, self.T)
        self.S_res = self.N * self.E * self.W
        self.mb = min(k.batch_size or int(info["minibatch_size"]), self.S_res)
        self.n_mb = self.epochs * math.ceil(self.S / self.mb)
        total = k.env_steps or m.trace.env_steps
        self.iterations = max(1, math.ceil(total / self.S))
        self.central = k.inference == "central"
        self.asynchronous = k.learner == "async"
        self.lag = k.sync_interval if self.asynchronous else 0
        # ---- devices ---------------------------------------------------------------------
        self.cpu = m.host.device
        # the part issued kernels run on (the learner's first): copies, its memory check
        self.kernels = next((r for r in (self.learn_r, self.act_r) if r.kernels), None)
        self.gpu = self.kernels.model if self.kernels is not None else None
        self.learner_dev = self.learn_r.device if self.learn_r.kernels else self.cpu
        lanes = self.cpu.lanes
        cores = min(k.cores or lanes, lanes)
        if self.asynchronous and not self.learn_r.kernels:
            if lanes < 2:
                raise RldseError("workload.learner: 'async' with the learner on the CPU needs "
                                 "at least 2 cores (the learner keeps one)")
            cores = min(cores, lanes - 1)
        self.C = cores
        if self.central:
            # None: a CPU core
            self.servers = list(self.act_r.devices) if self.act_r.kernels else [None]
        # async and the learner's GPU also runs inference: learn one minibatch per booking,
        # so an inference batch waits for at most one minibatch step, not a whole iteration
        self.interleave = self.asynchronous and self.learn_r.kernels and self.act_r.kernels
        # ---- costs -----------------------------------------------------------------------
        cpu_model = m.host.model
        scale_e = self.E / self.t_envs
        env_cost = m.phase_cost("env_step")
        resets = (m.phase_cost("env_reset").sum()
                  if (m.trace.ops["phase"] == "env_reset").any() else 0.0)
        self.reset_per_vstep = float(resets) / len(env_cost) * scale_e
        extra = 0.0
        if self.obs_bytes != self.t_obs_bytes:  # stacking and storing a larger observation
            extra = float(cpu_model.roofline_seconds(
                0, 2 * self.E * max(0, self.obs_bytes - self.t_obs_bytes)))
        self.env_per_vstep = env_cost * scale_e + extra
        self.env_c = _cycles(self.env_per_vstep, self.N, m.rng)
        self._act_ops = self._act_rows(m)
        if not self.central:
            if not self.act_r.kernels:
                act_s = np.asarray(cpu_model.op_seconds(self._act_ops))
                act = (act_s, np.zeros_like(act_s), act_s)
            else:  # dispatch on the actor's core, kernels and copies on the part
                am = self.act_r.model
                t = (am.copy_times(self.E * self.obs_bytes)
                     + am.op_times(self._act_ops, layers=self.layers)
                     + am.copy_times(self.E * _ANSWER_BYTES))
                act = (t.host_s, t.device_s, t.wall_s)
            self.act_c = _split_cycles(*act, n=self.N, rng=m.rng)
        else:
            self.fwd = self._server_costs(m)
            self.step_list = (self.env_per_vstep + self.reset_per_vstep).tolist()
            self.step_pos = [c.pos for c in self.env_c]
            self.left = [0] * self.N
        learn_ops = m.trace_ops("learn")  # GEMMs by the curve (rldse.models.cpu.with_works)
        traced = {b: _learn_work(self.t_nets, b) for b in set(learn_ops.items.astype(int))}
        learn_ops = with_works(cpu_model.host, learn_ops, _learn_work(self.nets, self.mb),
                               [traced[int(b)] for b in learn_ops.items], self.mb)
        start = int(m.rng.integers(len(learn_ops)))
        if self.learn_r.kernels:  # dispatch on the learner's core, kernels on the part
            t = self.learn_r.model.op_times(learn_ops, layers=self.layers)
            self.learn_c = SplitCycle(t.host_s, t.device_s, t.wall_s, start)
        else:
            self.learn_c = SplitCycle.on_device(np.asarray(cpu_model.op_seconds(learn_ops)),
                                                start)
        # IPC handoffs from the trace's clock (program docstring), per send / per rollout
        deliver, handoff = trace_cache.cached(  # once per trace in a process
            ("trace_handoffs", m.trace.digest), lambda: trace_handoffs(m.trace))
        if not len(deliver):
            deliver = np.asarray(m.trace_ops("sync").host_dur_s)
        if not len(handoff):
            handoff = np.asarray(m.trace_ops("rollout_add").host_dur_s) * self.t_actors
        t_payload = self.t_envs * self.t_T * (self.t_obs_bytes + _SENT_SCALARS * F32)
        self.payload = self.E * self.T * (self.obs_bytes + _SENT_SCALARS * F32)
        send = OpColumns.of("sync", bytes=F32 * self.t_nets.params,
                            host_dur_s=deliver / self.t_actors, dtype="none")
        send = _rescale(m, send, np.zeros(len(send)), np.full(len(send), F32 * self.params), 1)
        self.send_c = Cycle(np.asarray(cpu_model.op_seconds(send)),
                            int(m.rng.integers(len(send))))
        # the learner's per-rollout work (unpickle, GAE over T steps) scales with T
        recv = OpColumns.of("rollout_add", bytes=t_payload, dtype="none",
                            host_dur_s=handoff / self.t_actors * (self.T / self.t_T))
        recv = _rescale(m, recv, np.zeros(len(recv)), np.full(len(recv), self.payload), 1)
        self.recv_c = Cycle(np.asarray(cpu_model.op_seconds(recv)),
                            int(m.rng.integers(len(recv))))
        # starting the actor processes (fork, env creation): the capture's time before its
        # first operation, per actor (the learner starts them one after another)
        first = float(m.trace.ops["start_s"].min()) if len(m.trace.ops) else 0.0
        spawn = OpColumns.of("sync", host_dur_s=max(first, 0.0) / self.t_actors, dtype="none")
        self.startup_s = float(cpu_model.op_seconds(spawn)[0]) * self.N
        # ---- GPU memory and copies -------------------------------------------------------
        self.memory = _gpu_memory(self)
        g = self.gpu
        self.param_copy_s = float(g.copy_times(F32 * self.params).wall_s) if g is not None \
            else 0.0
        self.rollout_copy_s = 0.0
        self.swap_s = 0.0
        if self.learn_r.kernels:
            if self.memory.swapped:
                per_mb = self.mb * (self.obs_bytes + _MINIBATCH_SCALARS * F32)
                self.swap_s = float(self.n_mb * g.copy_times(per_mb).wall_s)
            elif self.W < self.T:  # streamed through the resident window, every epoch
                windows = math.ceil(self.T / self.W)
                per = self.N * self.payload / windows
                self.rollout_copy_s = float(
                    self.epochs * g.copy_times(np.full(windows, per)).wall_s.sum()
                    + g.copy_times(self.N * self.E * self.obs_bytes).wall_s)
            else:
                self.rollout_copy_s = float(g.copy_times(
                    self.N * (self.payload + self.E * self.obs_bytes)).wall_s)
        # ---- bookkeeping -----------------------------------------------------------------
        self.busy = dict.fromkeys(("env_step", "env_reset", "act"), 0.0)
        self.wait = dict.fromkeys(("wait:learner", "wait:cores", "wait:inference"), 0.0)
        self.learner_t = dict.fromkeys(("sync", "rollout_add", "dispatch", "learn",
                                        "wait:actors"), 0.0)
        self.parts = dict.fromkeys(("startup_s", "rollout_s", "sync_s", "handoff_s", "learn_s",
                                    "copy_s", "swap_s", "inference_s"), 0.0)
        self.act_count = 0
        self.act_dispatch = 0.0  # local GPU inference: the actors' dispatch, core-seconds
        self.batches = 0

    # ---- costs ------------------------------------------------------------------------
    def _act_rows(self, m: Machine) -> OpColumns:
        """The trace's act rows with their work at this system's envs per actor and
        observation size: per-step rows run both networks, bootstrap rows the value one."""
        ops = m.trace_ops("act")
        t_full = _act_work(self.t_nets, self.t_envs)
        t_value = self.t_nets.value.forward(self.t_envs)
        boot = ops.flops == t_value.flops
        full, value = _act_work(self.nets, self.E), self.nets.value.forward(self.E)
        return with_works(m.host.model.host, ops, [value if b else full for b in boot],
                          [t_value if b else t_full for b in boot], self.E)

    def _server_costs(self, m: Machine) -> list[float]:
        """Seconds of one server batch of b actors (b·E observations), b = 0..N. On a GPU
        also sets ``fwd_device``: the GPU's share of each (the rest is the server
        process dispatching, on a core of its own)."""
        b = np.arange(self.N + 1)
        B = np.maximum(b * self.E, 1)
        w = [_act_work(self.nets, int(x)) for x in B]
        flops = np.array([x.flops for x in w], np.float64)
        bytes_ = np.array([x.bytes for x in w], np.float64)
        if self.act_r.kernels:
            ops = OpColumns.of("act", items=B, flops=flops, bytes=bytes_)
            am = self.act_r.model
            t = (am.copy_times(B * self.obs_bytes)
                 + am.op_times(ops, layers=self.layers)
                 + am.copy_times(B * _ANSWER_BYTES))
            cost = t.wall_s
            self.fwd_device = np.where(b > 0, t.device_s, 0.0).tolist()
            self.fwd_host = np.where(b > 0, t.host_s, 0.0).tolist()
        else:  # the trace's per-step act, rescaled to the batch, on one CPU core
            a = self._act_ops
            full = a.flops == np.max(a.flops)
            host = float(np.mean(a.host_dur_s[full]))
            ref = OpColumns.of("act", items=self.E, flops=float(a.flops[full][0]),
                               bytes=float(a.bytes[full][0]), host_dur_s=np.full(len(b), host))
            cost = m.host.model.op_seconds(with_works(
                m.host.model.host, ref, w, _act_work(self.nets, self.E), B))
        cost = np.asarray(cost, np.float64)
        cost[0] = 0.0
        return cost.tolist()

    # ---- processes ----------------------------------------------------------------------
    def run(self) -> Outcome:
        env = self.m.env
        self.version = -1  # latest parameters the actors can get
        self.release = np.zeros(self.N)  # when each actor has them
        self.published = env.event()
        self.ready = [env.event() for _ in range(self.iterations)]
        self.used: list[int] = []  # per iteration: the parameter version its rollouts use
        env.process(self._actors())
        env.process(self._learner())
        env.run()
        return self._outcome()

    def _publish(self, version: int, t: float, local: bool) -> float:
        """Broadcast parameters from time t; sets each actor's release (when its policy has
        them) and returns when the last recipient has them."""
        t0, on_gpu = t, self.learn_r.kernels
        if local:  # to host memory, then one pipe send per actor, in actor order
            if on_gpu:
                t = self.m.book(self.learner_dev, t, self.param_copy_s, "sync", "learner")
            s = self.send_c.take(self.N)
            self.release = t + np.arange(1, self.N + 1) * (s / self.N)
            self.m.book(self.cpu, t, s, "sync", "learner", items=self.N)
            t += s
        else:  # to every inference server; its actors can go once it has them
            G, rel = len(self.servers), np.empty(self.N)
            end = t
            for g, dev in enumerate(self.servers):
                if dev is None:  # a server process on a CPU core: one pipe send
                    tg = self.m.book(self.learner_dev, t, self.param_copy_s, "sync",
                                     "learner") if on_gpu else t
                    tg = self.m.book(self.cpu, tg, self.send_c.take(1), "sync", "learner")
                elif dev is self.learner_dev:
                    tg = t
                else:  # to another GPU through host memory (learner on a GPU) or from it
                    tg = self.m.book(dev, t, self.param_copy_s * (2 if on_gpu else 1),
                                     "sync", "learner")
                rel[g::G] = tg
                end = max(end, tg)
            self.release, t = rel, end
        self.parts["sync_s"] += t - t0
        self.learner_t["sync"] += t - t0
        self.version = version
        ev, self.published = self.published, self.m.env.event()
        ev.succeed()
        return t

    def _learner(self):
        env, k = self.m.env, self.k
        local = not self.central
        t = self.m.book(self.cpu, 0.0, self.startup_s, "startup", "learner") \
            if self.startup_s else 0.0
        self.parts["startup_s"] = t
        t = self._publish(0, t, local)
        yield env.timeout(t - env.now)
        for it in range(self.iterations):
            t0 = env.now
            yield self.ready[it]
            self.learner_t["wait:actors"] += env.now - t0
            t = env.now
            h = self.recv_c.take(self.N)
            t = self.m.book(self.cpu, t, h, "rollout_add", "learner", items=self.N)
            self.parts["handoff_s"] += h
            self.learner_t["rollout_add"] += h
            t1, dispatched = t, self.learner_t["dispatch"]
            pre = PartTime.serial(0.0, self.rollout_copy_s + self.swap_s)
            if self.interleave:  # inference shares this GPU: one booking per minibatch
                yield env.timeout(t - env.now)
                t = self._learn(t, pre)
                for _ in range(self.n_mb):
                    yield env.timeout(t - env.now)
                    t = self._learn(t, self.learn_c.take(1))
            else:
                t = self._learn(t, pre + self.learn_c.take(self.n_mb))
            self.parts["learn_s"] += t - t1
            self.parts["copy_s"] += self.rollout_copy_s
            self.parts["swap_s"] += self.swap_s
            self.learner_t["learn"] += t - t1 - (self.learner_t["dispatch"] - dispatched)
            last = it + 1 == self.iterations
            if not last and (not self.asynchronous or (it + 1) % k.sync_interval == 0):
                t = self._publish(it + 1, t, local)
            yield env.timeout(t - env.now)
            self.m.mark_iterations(t)

    def _learn(self, t: float, work: PartTime) -> float:
        """Learner work from t: the device part on the learner's device, a GPU's dispatch
        on a CPU core (the learner process's); returns when it is done."""
        end = t + work.wall_s
        if work.device_s > 0:
            end = max(end, self.m.book(self.learner_dev, t, work.device_s, "learn", "learner"))
        if work.host_s > 0:
            end = max(end, self.m.book(self.cpu, t, work.host_s, "dispatch", "learner"))
            self.learner_t["dispatch"] += work.host_s
        return end

    def _actors(self):
        env = self.m.env
        prev_end = 0.0
        for j in range(self.iterations):
            while self.version < j - self.lag:
                yield self.published
            self.used.append(self.version)
            r = np.maximum(self.release, prev_end)
            self.wait["wait:learner"] += float(np.sum(r - prev_end)) if j else 0.0
            start = float(r.min())
            if start > env.now:
                yield env.timeout(start - env.now)
            if self.central:
                end = yield env.process(self._central_wave(r))
            else:
                end = self._local_wave(r)
                yield env.timeout(end - env.now)
            self.parts["rollout_s"] += end - start
            prev_end = end
            self.ready[j].succeed()

    def _local_wave(self, r: np.ndarray) -> float:
        """One iteration's collection with local inference: one event (program docstring)."""
        T, N, C = self.T, self.N, self.C
        env_s = np.array([c.take(T) for c in self.env_c])
        acts = [c.take(T + 1) for c in self.act_c]
        act_s = np.array([a.wall_s for a in acts])
        reset = T * self.reset_per_vstep
        # on the actor's core: env steps, and the whole act (CPU) or its dispatch (GPU)
        cpu_part = env_s + reset + np.array([a.host_s for a in acts])
        if N > C:  # rollouts beyond the cores share them, event by event (rldse.sim.
            # sharing): n runnable get CpuSpec.core_throughput(n, C) core-equivalents (an
            # extra SMT thread adds smt_gain of a core; beyond the hardware threads the OS
            # time-slices at the measured shared-core slowdown). The closed form's lower
            # bound it replaces was 1.0-1.4 % short on unequal rollouts (issue 25).
            spec = self.m.host.model.spec
            end = float(np.max(shared_ends(r, cpu_part,
                                           lambda n: spec.core_throughput(n, C))))
        else:
            end = float(np.max(r + cpu_part))
        if self.act_r.kernels:  # each actor's kernels, queued on the first part as one block
            g = float(sum(a.device_s for a in acts))
            end = max(end, float(np.max(r + env_s + reset + act_s)),
                      self.m.book(self.act_r.device, float(r.min()), g, "act", "actors",
                                  items=N * (T + 1)))
        busy = float(cpu_part.sum())
        self.busy["env_step"] += float(env_s.sum())
        self.busy["env_reset"] += reset * N
        self.busy["act"] += float(act_s.sum())
        self.act_dispatch += float(sum(a.host_s for a in acts)) if self.act_r.kernels else 0.0
        self.act_count += N * (T + 1)
        own = float(np.sum(env_s + reset + act_s))
        self.wait["wait:cores"] += max(0.0, float(np.sum(end - r)) - own)
        if self.m.timeline is not None:  # the cores' merged load, for the Chrome trace
            per = busy / min(N, C)
            for lane in range(min(N, C)):
                self.m.timeline.append((self.cpu.name, lane, "rollout", float(r.min()), per,
                                        "actors", None))
        return end

    def _central_wave(self, r: np.ndarray):
        """One iteration's collection with central inference: a server process per
        inference device; returns when the last actor's rollout is done."""
        env = self.m.env
        self.free = [float(r.min())] * self.C  # the actors' cores: FIFO lanes
        self.lanes = [(float(r.min()), k) for k in range(self.C)]  # the same, with a timeline
        G = len(self.servers)
        self.actor_names = [f"actor {a}" for a in range(self.N)]
        procs = [env.process(self._serve(g, list(range(g, self.N, G)), r)) for g in range(G)]
        ends = yield env.all_of(procs)
        return max(ends.values())

    def _serve(self, g: int, actors: list[int], r: np.ndarray):
        """Greedy dynamic batching: each batch takes every actor waiting (heap by ready time)."""
        env = self.m.env
        dev = self.servers[g]
        on_cpu = dev is None
        fwd, free, T = self.fwd, self.free, self.T
        tl, lanes = self.m.timeline, self.lanes
        server = f"inference server {g}"  # timeline tracks
        if tl is not None:  # per-step records, written in bulk (TimelineStream.columns)
            acts = tl.columns(self.cpu.name, "act", server, "batch")
            steps_tl = tl.columns(self.cpu.name, "env_step", self.actor_names)
            act_lane, act_start, act_dur = acts.lane.append, acts.start_s.append, \
                acts.dur_s.append
            act_b = acts.value.append
            step_lane, step_start, step_dur, step_who = steps_tl.lane.append, \
                steps_tl.start_s.append, steps_tl.dur_s.append, steps_tl.who.append
        heap = [(float(r[a]), a) for a in actors]
        heapq.heapify(heap)
        left = self.left
        for a in actors:
            left[a] = T + 1
        # per-step costs: the actors' cycles as a list and positions (Cycle.take(1) per
        # step would be a third of the run time)
        costs, pos = self.step_list, self.step_pos
        n_costs = len(costs)
        reset = self.reset_per_vstep
        heappop, heappush, heapreplace = heapq.heappop, heapq.heappush, heapq.heapreplace
        wait_inf = wait_cores = act_t = env_busy = infer = 0.0
        fwd_device, fwd_host = (self.fwd_device, self.fwd_host) if not on_cpu else ((), ())
        steps = batches = 0
        last = float(r.min())
        while heap:
            now = env.now
            t_ready = heap[0][0]
            if t_ready > now:
                yield env.timeout(t_ready - now)
                now = t_ready
            batch = []
            while heap and heap[0][0] <= now:
                t_r, a = heappop(heap)
                wait_inf += now - t_r
                batch.append(a)
            b = len(batch)
            dur = fwd[b]
            if on_cpu:
                if tl is None:
                    f = free[0]
                    start = now if now > f else f
                    end = start + dur
                    heapreplace(free, end)
                else:
                    f, lane = lanes[0]
                    start = now if now > f else f
                    end = start + dur
                    heapreplace(lanes, (end, lane))
                    act_lane(lane)
                    act_start(start)
                    act_dur(dur)
                    act_b(b)
            else:  # kernels and copies on dev; the server's dispatch on a CPU core,
                # queued with the learner's dispatch and the other CPU bookings
                end = max(now + dur, self.m.book(dev, now, fwd_device[b], "act", server,
                                                 batch=b))
                if fwd_host[b] > 0:
                    end = max(end, self.m.book(self.cpu, now, fwd_host[b], "dispatch",
                                               server, batch=b))
            infer += dur
            act_t += (end - now) * b
            batches += 1
            yield env.timeout(end - now)
            now = end
            for a in batch:
                n = left[a] - 1
                left[a] = n
                if n:
                    p = pos[a]
                    d = costs[p]
                    p += 1
                    pos[a] = p if p < n_costs else 0
                    if tl is None:
                        f = free[0]
                        start = now if now > f else f
                        fin = start + d
                        heapreplace(free, fin)
                    else:  # the same FIFO, with lane numbers for the Chrome trace
                        f, lane = lanes[0]
                        start = now if now > f else f
                        fin = start + d
                        heapreplace(lanes, (fin, lane))
                        step_lane(lane)
                        step_start(start)
                        step_dur(d)
                        step_who(a)
                    wait_cores += start - now
                    env_busy += d
                    steps += 1
                    heappush(heap, (fin, a))
                elif now > last:
                    last = now
        if tl is not None:  # bounded memory: written once they fill the stream's buffer
            tl.spill(acts)
            tl.spill(steps_tl)
        reset_s = steps * reset
        self.busy["env_step"] += env_busy - reset_s
        self.busy["env_reset"] += reset_s
        self.busy["act"] += act_t
        self.act_count += len(actors) * (T + 1)
        self.wait["wait:inference"] += wait_inf
        self.wait["wait:cores"] += wait_cores
        self.parts["inference_s"] += infer
        self.batches += batches
        if on_cpu:
            self.cpu.account("act", infer, batches)
        return last

    # ---- result -------------------------------------------------------------------------
    def _outcome(self) -> Outcome:
        m, clock = self.m, self.m.clock
        N, T, it = self.N, self.T, self.iterations
        clock.instances.update(actor=N, learner=1)
        steps = it * self.S
        vsteps = it * N * T
        # actor work on the cores, accounted on the cpu Device (the lanes were the
        # program's own; Device.book would pick any of the CPU's lanes)
        self.cpu.account("env_step", self.busy["env_step"], vsteps)
        if self.busy["env_reset"]:
            self.cpu.account("env_reset", self.busy["env_reset"], 0)
        act_dev = self.act_r.label
        if not self.central and not self.act_r.kernels:
            self.cpu.account("act", self.busy["act"], self.act_count)
        if self.act_dispatch:  # GPU inference: its dispatch kept the issuing cores busy
            self.cpu.account("dispatch", self.act_dispatch, 0)
        host = self.cpu.kind
        clock.spend("actor", "env_step", host, self.busy["env_step"], vsteps)
        if self.busy["env_reset"]:
            clock.spend("actor", "env_reset", host, self.busy["env_reset"], 0)
        clock.spend("actor", "act", act_dev, self.busy["act"], self.act_count)
        for name, t in self.wait.items():
            if t > 0:
                clock.spend("actor", name, "any", t, 0)
        learner_dev = self.learn_r.label
        for phase, t in self.learner_t.items():
            if t > 0:
                dev = "any" if phase.startswith("wait:") else (
                    learner_dev if phase == "learn" else host)
                count = it * self.n_mb if phase == "learn" else 0 if phase == "dispatch" else it
                clock.spend("learner", phase, dev, t, count)
        parts = {k: v for k, v in self.parts.items() if v > 0 or k in (
            "rollout_s", "sync_s", "learn_s")}
        parts["iter_s"] = (m.env.now - self.parts["startup_s"]) / it
        mem = self.memory
        return Outcome(env_steps=steps, updates=it * self.n_mb, breakdown_s=parts,
                       gpu_memory_peak_bytes=int(mem.peak), swapped_bytes=int(mem.swapped),
                       host_memory_bytes=host_memory(self),
                       checks=m.memory_checks(self.kernels, mem.ok),
                       # the learner learns on rollout j after j updates (versions count them)
                       staleness_updates=[j - v for j, v in enumerate(self.used)])


@dataclass(frozen=True)
class GpuMemory:
    """What the most loaded GPU holds, buffer by buffer, before any swapping."""

    buffers: dict[str, int]
    capacity: int
    swapped: int = 0

    @property
    def need(self) -> int:
        return sum(self.buffers.values())

    @property
    def peak(self) -> int:
        """Bytes resident on the GPU (what is swapped lives in host memory)."""
        return self.need - self.swapped

    @property
    def ok(self) -> bool:
        return self.capacity == 0 or self.peak <= self.capacity


def gpu_memory(m: Machine) -> GpuMemory:
    """The GPU buffers program(m) would hold, by name (for studies and reports)."""
    return _Sim(m).memory


@dataclass(frozen=True)
class UnitCosts:
    """Mean seconds of program(m)'s units of work on its parts (for analytic rate models:
    the same costs the simulation books)."""

    actors: int
    envs_per_actor: int
    rollout_len: int
    cores: int  # CPU cores the actors get
    env_step_s: float  # one vector step of an actor's envs on a core, resets included
    act_s: list[float]  # central: one inference batch of b actors (index b); local: [0, one act]
    act_device_s: list[float]  # the same, the GPU's share (0 on a CPU)
    learn_step_s: float  # one minibatch step on the learner's device (wall)
    learn_step_device_s: float  # the same, the device's share (a GPU's kernels; the wall
    # on a CPU), the rest being the learner core's dispatch
    minibatch: int
    epochs: int
    handoff_s: float  # the learner receiving one rollout (on its CPU core)
    sync_s: float  # one parameter send
    inference_on_learner_gpu: bool  # inference batches queue with the learner's steps


def unit_costs(m: Machine) -> UnitCosts:
    """Mean costs of program(m)'s work units on machine m (see UnitCosts)."""
    s = _Sim(m)
    if s.central:
        act = s.fwd
        act_device = s.fwd_device if s.act_r.kernels else [0.0] * len(s.fwd)
    else:
        act = [0.0, float(np.mean([c.mean_s for c in s.act_c]))]
        act_device = [0.0, float(np.mean([c.device.mean_s for c in s.act_c]))]
    on_gpu0 = s.learn_r.kernels and s.act_r.kernels  # gpu0 serves inference too
    return UnitCosts(
        actors=s.N, envs_per_actor=s.E, rollout_len=s.T, cores=s.C,
        env_step_s=float(np.mean(s.env_per_vstep)) + s.reset_per_vstep,
        act_s=[float(a) for a in act], act_device_s=[float(a) for a in act_device],
        learn_step_s=s.learn_c.mean_s, learn_step_device_s=s.learn_c.device.mean_s,
        minibatch=s.mb,
        epochs=s.epochs, handoff_s=s.recv_c.mean_s, sync_s=s.send_c.mean_s,
        inference_on_learner_gpu=on_gpu0)


def _gpu_memory(s: _Sim) -> GpuMemory:
    """Buffers per GPU (program docstring); the learner's GPU is gpu0."""
    if s.gpu is None:
        return GpuMemory({}, 0)
    cap = int(s.gpu.spec.mem_bytes)
    act_bytes = s.nets.activation_bytes  # per sample, every network
    gpu0: dict[str, int] = {}
    if s.learn_r.kernels:
        gpu0 = {
            "parameters, gradients, Adam m and v": 4 * F32 * s.params,
            "rollout observations": s.S_res * s.obs_bytes,
            "bootstrap observations": s.N * s.E * s.obs_bytes,
            "rollout scalars": s.S_res * _PER_TRANSITION_SCALARS * F32,
            "minibatch copy": s.mb * (s.obs_bytes + _MINIBATCH_SCALARS * F32),
            "minibatch activations and their gradients": 2 * s.mb * act_bytes,
        }
    if s.act_r.kernels:  # inference: parameters and the largest batch
        per_gpu = math.ceil(s.N / len(s.act_r.devices)) if s.central else 1
        batch = per_gpu * s.E
        inference = {
            "inference parameters": F32 * s.params,
            "inference batch": batch * (s.obs_bytes + _ANSWER_BYTES + act_bytes),
        }
        for key, value in inference.items():
            gpu0[key] = gpu0.get(key, 0) + value
    if not gpu0:
        return GpuMemory({}, cap)
    mem = GpuMemory({k: int(v) for k, v in gpu0.items()}, cap)
    if not mem.ok and s.k.gpu_swap and s.learn_r.kernels:
        streamed = ("rollout observations", "bootstrap observations", "rollout scalars",
                    "minibatch copy")
        mem = GpuMemory(mem.buffers, cap, sum(mem.buffers[k] for k in streamed))
    return mem


def host_memory(s: _Sim) -> int:
    """Bytes program(m) keeps in host DRAM at its peak (the ``host_memory`` check): every
    actor process's rollout buffer (E envs × T steps of observation and 5 scalars, and the
    bootstrap observations), kept for the run; and the learner's side. A CPU learner holds
    parameters, gradients and Adam state, the whole rollout with 7 scalars per transition,
    the bootstrap observations, a minibatch copy and its activations; a GPU learner holds
    the received rollouts until they are copied, or, with ``gpu_swap``, the buffers it
    streams from host memory (the larger of the two), and a host copy of the parameters
    for the broadcast."""
    actors = s.N * (s.payload + s.E * s.obs_bytes)
    if not s.learn_r.kernels:
        learner = (4 * F32 * s.params + s.S * (s.obs_bytes + _PER_TRANSITION_SCALARS * F32)
                   + s.N * s.E * s.obs_bytes + s.mb * (s.obs_bytes + _MINIBATCH_SCALARS * F32)
                   + 2 * s.mb * s.nets.activation_bytes)
    else:
        learner = max(actors, s.memory.swapped) + F32 * s.params
    return int(actors + learner)
