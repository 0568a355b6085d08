"""Data-parallel learners and actors over nodes in the actor-learner program: one learner
is today's single-box run, L learners book one all-reduce per minibatch step priced by
NCCL's choice on the fabric, remote actors' rollouts and parameters cross the network."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from rldse.models import load_part
from rldse.models.collectives import Cluster, choose
from rldse.sim import simulate
from rldse.sim.machine import Machine
from rldse.system import load_spec, resolve
from rldse.trace import load_trace
from rldse.workloads.actor_learner.program.state import prepare

ROOT = Path(__file__).resolve().parents[4]
PPO = ROOT / "traces" / "actor_learner_cartpole_2.parquet"
DGX1 = ROOT / "examples" / "dgx1_like.yaml"
#: cartpole_2 on the one-V100 form of examples/dgx1_like.yaml, seed 0, as the single box
#: gives it (rldse at 71c6587, before clusters: 6.682216155771767 s, 1293.283470089165 J;
#: since the GPU learner's host side is the CPU capture's framework share + kernels x
#: dispatch_s, not framework_host_ratio x the share: GpuModel.moved_host_s)
MAIN_SIM_TIME_S, MAIN_ENERGY_J = 8.31054896456354, 1588.6244615195465


@pytest.fixture(scope="module")
def trace():
    return load_trace(PPO)


def _phase(result, worker, phase):
    return next((p for p in result.phases if p.worker == worker and p.phase == phase), None)


def test_one_learner_is_the_single_box_result(trace):
    r = simulate(trace, load_spec(DGX1, {"workload.learner_gpus": 1, "gpu.count": 1}))
    assert r.sim_time_s == pytest.approx(MAIN_SIM_TIME_S, rel=1e-12)
    assert r.energy_j == pytest.approx(MAIN_ENERGY_J, rel=1e-12)
    assert _phase(r, "learner", "allreduce") is None
    # the whole DGX-1 with one learner: the same run, its seven other V100s idle
    whole = simulate(trace, load_spec(DGX1, {"workload.learner_gpus": 1}))
    assert whole.sim_time_s == pytest.approx(MAIN_SIM_TIME_S, rel=1e-12)
    idle = [d for d in whole.devices if d.kind == "gpu" and d.busy_s == 0]
    assert len(idle) == 7
    assert whole.energy_j == pytest.approx(MAIN_ENERGY_J + sum(d.energy_j for d in idle),
                                           rel=1e-12)


def test_eight_learners_all_reduce_once_per_update_on_nvlink(trace):
    sets = {"workload.learner_gpus": 8, "workload.env_steps": 8192}
    r = simulate(trace, load_spec(DGX1, sets))
    info = trace.meta.workload_info
    cluster = Cluster(load_part("fabric", "dgx1-v100"))  # 8 V100s, one node
    per_update_s = float(choose(cluster, "all_reduce", 4 * info["n_params"]).seconds)
    ar = _phase(r, "learner", "allreduce")
    assert ar.count == r.updates
    assert r.breakdown_s["allreduce_s"] == pytest.approx(r.updates * per_update_s, rel=1e-9)
    # every learner GPU ran the all-reduce
    assert all(d.busy_s > 0 for d in r.devices if d.kind == "gpu")


def test_actors_on_two_nodes_cross_the_network(trace):
    sets = {"workload.learner_gpus": 8, "workload.actors": 4, "workload.env_steps": 8192,
            "nodes": 2, "network.preset": "ib-hdr"}
    r = simulate(trace, load_spec(DGX1, sets))
    assert r.breakdown_s["network_s"] > 0
    assert _phase(r, "actor", "net:rollout").time_s > 0
    far = next(d for d in r.devices if d.name == "node1/cpu")
    assert far.busy_s > 0  # its actors' env steps ran on its own cores
    one = simulate(trace, load_spec(DGX1, {k: v for k, v in sets.items()
                                           if k not in ("nodes", "network.preset")}))
    assert "network_s" not in one.breakdown_s


def test_rollouts_that_meet_at_node0_share_its_receive_link(trace, monkeypatch):
    """Two other nodes' rollouts ready at once: the second waits for the first's bytes on
    node 0's receive link, so the wave takes two transfers' bytes after the rollouts, not
    one (rldse.sim.lanes); a lone node's takes one."""
    actors = importlib.import_module("rldse.workloads.actor_learner.program.actors")
    monkeypatch.setattr(actors, "_node_wave", lambda run, r, node, ids: 1.0)

    def wave(nodes):
        spec = load_spec(ROOT / "examples" / "pong_fleet.yaml",
                         {"nodes": nodes, "workload.actors": 4 * nodes})
        run = prepare(Machine(trace, resolve(spec, trace), seed=0))
        net = run.costs.net
        return actors.local_wave(run, np.zeros(4 * nodes)) - 1.0, net

    alone, net = wave(2)
    both, _ = wave(3)
    wire, latency = net.rollout_wire_s[1], net.rollout_s[1] - net.rollout_wire_s[1]
    assert wire > 0 and latency > 0
    assert alone == pytest.approx(wire + latency, rel=1e-12)
    assert both == pytest.approx(2 * wire + latency, rel=1e-12)
