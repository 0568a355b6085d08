"""What one simulated run is: the loop's sizes (the knobs, else the trace's) and what
serves each role, read once before any cost is taken."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rldse.errors import RldseError
from rldse.kernels.mlp import F32
from rldse.models.kinds import KernelModel
from rldse.sim.device import Device
from rldse.sim.machine import Machine, Runner
from rldse.workloads.actor_learner.info import ActorLearnerInfo
from rldse.workloads.actor_learner.ppo_work import ROLLOUT_FIELDS
from rldse.workloads.actor_learner.program.networks import Nets, networks

#: Per transition besides the observation, a PPO learner holds action, logp, reward, done,
#: value, advantage and return (float32/int32 each): what CleanRL's storage keeps.
PER_TRANSITION_SCALARS = 7
#: The fields of a rollout the actors send (obs aside): action, logp, reward, done, value.
SENT_SCALARS = len(ROLLOUT_FIELDS) - 1
#: Fields of a gathered minibatch besides the observation: action, logp, advantage, return.
MINIBATCH_SCALARS = 4
#: Bytes one inference answers per observation: action, logp, value.
ANSWER_BYTES = 3 * F32


@dataclass(frozen=True)
class Shape:
    """The simulated loop's sizes (docs/architecture.md); ``t_*`` are the trace's. Per
    iteration N actors × E envs × T vector steps; the learner holds W of the T steps on
    its GPU at once and runs ``n_mb`` minibatches of ``mb``."""

    t_actors: int
    t_envs: int
    t_T: int
    t_obs_bytes: int
    N: int
    E: int
    T: int
    epochs: int
    obs_bytes: int
    t_nets: Nets
    nets: Nets
    W: int
    mb: int
    n_mb: int
    iterations: int
    central: bool
    asynchronous: bool
    lag: int  # iterations actors may run ahead of the parameters (0: synchronous)
    learners: int = 1  # data-parallel learner GPUs (docs/architecture.md, "Clusters")
    nodes: int = 1  # the actors are spread over them in blocks, node 0's first

    @property
    def mb_learner(self) -> int:
        """Transitions of a minibatch one learner runs: its share of the split."""
        return math.ceil(self.mb / self.learners)

    @property
    def node_actors(self) -> list[range]:
        """The actors each node holds: contiguous blocks, as even as N allows."""
        return [range(k * self.N // self.nodes, (k + 1) * self.N // self.nodes)
                for k in range(self.nodes)]

    @property
    def S(self) -> int:
        """Transitions per iteration."""
        return self.N * self.E * self.T

    @property
    def S_res(self) -> int:
        """Transitions the learner holds on its GPU at once."""
        return self.N * self.E * self.W

    @property
    def params(self) -> int:
        return self.nets.params

    @property
    def layers(self) -> int:
        """Every network's layers."""
        return self.nets.layers

    @property
    def payload(self) -> int:
        """Bytes of one actor's rollout as it sends it (observations and SENT_SCALARS)."""
        return self.E * self.T * (self.obs_bytes + SENT_SCALARS * F32)

    @property
    def t_payload(self) -> int:
        """The same in the trace."""
        return self.t_envs * self.t_T * (self.t_obs_bytes + SENT_SCALARS * F32)


def shape_of(m: Machine) -> Shape:
    """The loop's sizes on machine ``m``: the knobs (each the trace's unless the spec sets
    it: ``Workload.resolve_knobs``) beside the trace's own (its typed info)."""
    info: ActorLearnerInfo = m.system.info
    k = m.knobs
    N, E, T, epochs, obs_bytes = k.actors, k.envs_per_actor, k.rollout_len, k.epochs, k.obs_bytes
    t_obs_bytes = F32 * info.obs_dim
    t_nets, nets = networks(m, max(1, math.ceil(obs_bytes / F32)))
    # steps of the rollout the learner holds on its GPU at once (docs/architecture.md)
    W = min(k.resident_steps or T, T)
    mb = min(k.batch_size, N * E * W)
    asynchronous = k.learner == "async"
    return Shape(
        t_actors=info.actors, t_envs=info.envs_per_actor, t_T=info.rollout_len,
        t_obs_bytes=t_obs_bytes,
        N=N, E=E, T=T, epochs=epochs, obs_bytes=obs_bytes, t_nets=t_nets, nets=nets, W=W,
        mb=mb, n_mb=epochs * math.ceil(N * E * T / mb),
        iterations=max(1, math.ceil(k.env_steps / (N * E * T))),
        central=k.inference == "central", asynchronous=asynchronous,
        lag=k.sync_interval if asynchronous else 0, learners=k.learner_gpus or 1,
        nodes=m.system.nodes.count)


@dataclass(frozen=True)
class Roles:
    """What serves act and learn: the host's cores, or kernels its cores issue."""

    act: Runner
    learn: Runner
    cpu: Device  # the host's cores
    cores: int  # C: the cores the actors get
    kernels: Runner | None  # the part issued kernels run on (the learner's first)
    learner_dev: Device
    # the learner GPUs each minibatch step is booked on: every data-parallel learner's
    # where inference servers share them (interleave), else the first (the others are
    # accounted in step with it: outcome.py)
    booked: tuple[Device, ...]
    servers: tuple[Device | None, ...]  # central inference: a server per device (None: a core)
    # async with inference on the learner's GPU: one learner booking per minibatch, so an
    # inference batch waits for at most one minibatch step, not a whole iteration
    interleave: bool

    @property
    def gpu(self) -> KernelModel | None:
        """The kernels' part model: copies, its memory check."""
        return self.kernels.model if self.kernels is not None else None


def roles_of(m: Machine, shape: Shape) -> Roles:
    """What serves each role on ``m``, and the cores the actors get (``cores``, default
    all; an async CPU learner keeps one to itself)."""
    act, learn = m.runner("act"), m.runner("learn")
    cpu = m.cpu.device
    lanes = cpu.lanes
    cores = min(m.knobs.cores or lanes, lanes)
    if shape.asynchronous and not learn.kernels:
        if lanes < 2:
            raise RldseError("workload.learner: 'async' with the learner on the CPU needs "
                             "at least 2 cores (the learner keeps one)")
        cores = min(cores, lanes - 1)
    servers: tuple[Device | None, ...] = ()
    if shape.central:
        servers = tuple(act.devices) if act.kernels else (None,)
    interleave = bool(shape.asynchronous and learn.kernels and act.kernels)
    learner_dev = learn.device if learn.kernels else cpu
    return Roles(act=act, learn=learn, cpu=cpu, cores=cores,
                 kernels=next((r for r in (learn, act) if r.kernels), None),
                 learner_dev=learner_dev,
                 booked=learn.devices[:shape.learners] if interleave else (learner_dev,),
                 servers=servers, interleave=interleave)


def refuse_ignored_knobs(m: Machine) -> None:
    """One-line errors for knobs this placement would accept but not use."""
    k, place = m.knobs, m.spec.placement
    if k.learner == "sync" and k.sync_interval != 1:
        raise RldseError("sync_interval needs learner 'async': the synchronous loop sends "
                         "parameters every iteration", where="workload.sync_interval")
    if m.system.nodes.count > 1 and k.inference == "central":
        raise RldseError("central inference over several nodes is not modelled (its "
                         "servers would serve actors across the network): use local "
                         "inference or one node", where="workload.inference")
    for name in ("resident_steps", "gpu_swap"):
        if getattr(k, name) and not m.runner("learn").kernels:
            raise RldseError(f"{name} concerns a GPU learner's memory, but learn runs on "
                             f"'{place.learn}'", where=f"workload.{name}")
