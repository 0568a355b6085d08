"""DQN's simulated twin: the shared off-policy program (program/) with DQN's shapes, and
its network's work counted as the real loop counts it (dqn.py's ``net_learn_work``)."""

from __future__ import annotations

from typing import Any

from rldse.errors import RldseError
from rldse.kernels.mlp import F32, copy_work, network
from rldse.kernels.trace_network import read_network
from rldse.sim.machine import Machine, Outcome
from rldse.workloads.offpolicy import DQNInfo
from rldse.workloads.offpolicy.dqn import net_learn_work
from rldse.workloads.offpolicy.program import program as run_program
from rldse.workloads.offpolicy.program.costs import Shape, refuse_ignored_knobs


def program(m: Machine) -> Outcome:
    """DQN on a simulated machine: the shared off-policy loop with DQN's shapes. Work is
    the trace's network's (``workload_info['network']``, network_work.py), or for an MLP
    trace mlp.py's, whose hidden widths the knob ``hidden`` sets."""
    info: DQNInfo = m.system.info
    t_sizes = info.layer_sizes
    refuse_ignored_knobs(m, hidden=t_sizes[1:-1])
    t_net = read_network(info.network, f"trace {m.trace.digest}")
    if t_net is None:
        t_net, net = network(t_sizes), network([t_sizes[0], *m.knobs.hidden, t_sizes[-1]])
        obs_bytes = F32 * info.obs_dim
    elif list(m.knobs.hidden) != list(t_sizes[1:-1]):
        raise RldseError(f"the trace's Q-network is a '{t_net.kind}' network, described by "
                         "its layers, whose widths this knob cannot set", where="workload.hidden")
    else:
        net, obs_bytes = t_net, t_net.obs_bytes
    double, weighted = info.double, info.replay != "uniform"
    batch0 = info.batch_size
    act = {"act": net.forward(1), "sync": copy_work(net.n_params)}
    shape = Shape(
        batch=batch0, learn_every=info.learn_every,
        capacity=info.replay_capacity, transition_bytes=info.transition_bytes,
        obs_bytes=obs_bytes, act_layers=len(net.layers), learn_layers=len(net.layers),
        act_params=net.n_params, learn_params=net.n_params,
        target_sync_steps=info.target_sync,
        prioritized=weighted, learning_starts=info.learning_starts,
        learn_work=lambda batch: net_learn_work(net, batch, double, weighted),
        trace_works={"learn": net_learn_work(t_net, batch0, double, weighted),
                     "act": t_net.forward(1), "sync": copy_work(t_net.n_params)},
        works=act, trace_batch=batch0, trace_capacity=info.replay_capacity,
        **_am_work(info.amper))
    return run_program(m, shape)


def _am_work(amper: dict[str, Any] | None) -> dict[str, float]:
    """AMPER traces: measured TCAM searches per sampled item, candidate-set entries read
    per item and rows written per updated item, for the program's associative-memory
    branch (others keep its defaults: one search, no candidate set, one row)."""
    if not amper:
        return {}
    if "candidates_per_item" not in amper:
        raise RldseError("trace: workload_info.amper has no 'candidates_per_item' (an AMPER "
                         "trace from an older rldse; capture it again)")
    return {"tcam_searches_per_item": float(amper["searches_per_item"]),
            "tcam_writes_per_update_item": float(amper["writes_per_update_item"]),
            "tcam_candidates_per_item": float(amper["candidates_per_item"])}
