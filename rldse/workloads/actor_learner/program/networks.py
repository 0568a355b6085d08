"""The networks a PPO step runs (rldse.kernels.network_work) and the work of acting and
learning on them, at any batch size."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.errors import RldseError
from rldse.kernels.mlp import F32, Work, adam_work, cold, network
from rldse.kernels.network_work import NetworkWork
from rldse.kernels.trace_network import read_network
from rldse.sim.machine import Machine
from rldse.workloads.actor_learner.info import ActorLearnerInfo
from rldse.workloads.actor_learner.ppo_work import ppo_loss_work


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
    info: ActorLearnerInfo = m.system.info
    k = m.knobs
    t_pi, t_v = info.policy_sizes, info.value_sizes
    net = read_network(info.network, f"trace {m.trace.digest}")
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


def act_work(nets: Nets, batch: int) -> Work:
    """One forward of every network at ``batch`` observations."""
    work = Work(0, 0)
    for net in nets.all:
        work += net.forward(batch)
    return work


def learn_work(nets: Nets, batch: int) -> Work:
    """One minibatch step of ppo.ppo_grads and Adam (with its clip norm)."""
    work = act_work(nets, batch)
    for net in nets.all:
        work += net.backward(batch)
    return (work + ppo_loss_work(batch, nets.n_actions) + cold(nets.params, 1)
            + adam_work(nets.params, sum(n.n_tensors for n in nets.all), clip=True))
