"""Host memory as a feasibility check, and runnable processes beyond the cores."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.sim import simulate
from rldse.sim.machine import Machine
from rldse.system import load_spec, parse_spec
from rldse.trace import load_trace
from rldse.workloads.actor_learner.program.memory import host_memory
from rldse.workloads.actor_learner.program.state import prepare
from tests.sim.steady import steady

ROOT = Path(__file__).resolve().parents[2]
DQN = ROOT / "traces" / "dqn_cartpole_uniform.parquet"
PPO = ROOT / "traces" / "actor_learner_cartpole_2.parquet"
DGX = ROOT / "examples" / "dgx1_like.yaml"
F32 = 4


def test_replay_buffer_beyond_host_memory_is_infeasible():
    trace = load_trace(DQN)
    short = {"workload.env_steps": 5000}
    ok = simulate(trace, load_spec(DGX, short))
    assert ok.checks["host_memory"] and ok.host_memory_peak_bytes > 0
    m = Machine(trace, load_spec(DGX, short))
    # replay on the CPU: capacity × 41 B transitions; the GPU learner's host copy of its
    # 4,610 parameters and each actor's copy
    k, params = m.knobs, m.system.info.n_params
    expected = (k.replay_capacity * m.system.info.transition_bytes
                + params * F32 * (1 + k.actors))
    assert ok.host_memory_peak_bytes == expected
    tight = load_spec(DGX, {**short, "cpu.mem_bytes": ok.host_memory_peak_bytes // 2 - 1})
    bad = simulate(trace, tight)  # two sockets: capacity is twice mem_bytes
    assert not bad.checks["host_memory"] and not bad.feasible
    assert bad.host_memory_peak_bytes == ok.host_memory_peak_bytes
    just = load_spec(DGX, {**short, "cpu.mem_bytes": -(-ok.host_memory_peak_bytes // 2)})
    assert simulate(trace, just).checks["host_memory"]


def _ppo_spec(side: int, swap: bool, **cpu) -> dict:
    return {"name": "timerl-like", "cpu": {"preset": "epyc-7402p", **cpu},
            "gpu": {"preset": "rtx-a6000"}, "placement": {"act": "gpu", "learn": "gpu"},
            "workload": {"actors": 16, "envs_per_actor": 16, "rollout_len": 1000,
                         "obs_bytes": 3 * side * side * F32, "batch_size": 256_000,
                         "epochs": 1, "env_steps": 256_000, "gpu_swap": swap}}


def test_actor_learner_host_memory_by_hand():
    """Actors keep E·T steps of observation + 5 scalars and E bootstrap observations each;
    a GPU learner holds the received rollouts (the same bytes) or, swapped, its streamed
    buffers, whichever is larger, plus a host copy of the parameters."""
    trace = load_trace(PPO)
    side = 64
    s = prepare(Machine(trace, parse_spec(_ppo_spec(side, swap=False))))
    obs = 3 * side * side * F32
    actors = 16 * (16 * 1000 * (obs + 5 * F32) + 16 * obs)
    assert s.memory.swapped == 0
    assert host_memory(s.shape, s.roles, s.memory) == actors + actors + F32 * s.shape.params


def test_timerl_swap_beyond_384_gb_of_host_memory_is_infeasible():
    """3×256×256: 201 GB of rollout observations in the actors, and the learner's swapped
    buffers (rollout + whole-rollout minibatch copy, about 403 GB) in host memory too:
    beyond the 384 GiB of TimeRL's host. 3×64×64 fits."""
    trace = load_trace(PPO)
    big = Machine(trace, parse_spec(_ppo_spec(256, swap=True)))
    s = prepare(big)
    assert s.memory.swapped > 400e9
    assert host_memory(s.shape, s.roles, s.memory) > big.host_memory_capacity == 384 * 2**30
    small = Machine(trace, parse_spec(_ppo_spec(64, swap=True)))
    s = prepare(small)
    assert host_memory(s.shape, s.roles, s.memory) < small.host_memory_capacity
    # more host memory makes it feasible again
    roomy = Machine(trace, parse_spec(_ppo_spec(256, swap=True, mem_bytes=1024 * 2**30)))
    s = prepare(roomy)
    assert host_memory(s.shape, s.roles, s.memory) < roomy.host_memory_capacity


def _rollout_s(slowdown: float) -> float:
    trace = steady(load_trace(PPO), instant_broadcast=True)
    spec = parse_spec({"name": "shared", "cpu": {"preset": "host",
                                                 "shared_core_slowdown": slowdown},
                       "placement": {"act": "cpu", "learn": "cpu"},
                       "workload": {"actors": 8, "cores": 2, "env_steps": 8 * 500}})
    return simulate(trace, spec).breakdown_s["rollout_s"]


def test_rollouts_beyond_the_cores_are_stretched_by_the_shared_core_slowdown():
    """8 equal rollouts released at once on 2 cores (the host preset: one thread per
    logical CPU; a steady trace: tests/sim/steady.py): the cores' work bound Σd / C
    becomes Σd / (C / slowdown)."""
    base, slow = _rollout_s(1.0), _rollout_s(1.5)
    assert slow / base == pytest.approx(1.5, rel=1e-6)
