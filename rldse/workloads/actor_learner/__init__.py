"""Actor-learner family: synchronous multi-actor PPO (``ppo.py``: real actor processes and
a learner) and its simulated twin (the ``program`` package) with local or central batched
inference, an async learner, and GPU memory with swapping (``program/memory.py``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rldse.kernels.network_work import F32, float32_bytes, network_info
from rldse.models.kinds import Runs
from rldse.workloads import (
    SIDES,
    Knobs,
    Recordable,
    Workload,
    learning_knob,
    register,
)
from rldse.workloads.actor_learner.info import CPU_FIELDS, ActorLearnerInfo


class ActorLearnerKnobs(Knobs):
    actors: int | None = learning_knob(default=None, ge=1, le=65_536, description="actor processes")
    envs_per_actor: int | None = learning_knob(default=None, ge=1, le=65_536,
                                       description="environments each actor steps")
    inference: Literal["local", "central"] | None = Field(
        default=None, description="actors run their own policy, or a batched server does")
    batch_size: int | None = learning_knob(default=None, ge=1, le=2**20,
                                   description="transitions per learner minibatch")
    learner: Literal["sync", "async"] | None = learning_knob(
        default=None, description="sync: actors wait for parameters; async: they run ahead")
    sync_interval: int | None = learning_knob(default=None, ge=1, le=10**6,
                                      description="iterations between parameter broadcasts")
    rollout_len: int | None = learning_knob(default=None, ge=1, le=10**7,
                                    description="vector steps per actor per iteration")
    epochs: int | None = learning_knob(default=None, ge=1, le=10_000,
                               description="passes over each rollout")
    obs_bytes: int | None = Field(default=None, ge=1, le=2**40,
                                  description="bytes per observation (TimeRL-style what-ifs)")
    resident_steps: int | None = Field(
        default=None, ge=1, le=10**7,
        description="rollout steps the learner must hold on its GPU at once (unset: the "
                    "whole rollout, as Monte-Carlo returns need; an n-step TD objective "
                    "needs n + 1)")
    gpu_swap: bool | None = Field(default=None,
                                  description="swap GPU buffers to host memory instead of OOM")
    hidden: list[int] | None = learning_knob(
        default=None, min_length=1, max_length=64,
        description="widths of the hidden layers of both networks (the trace's unless set); "
                    "learn work follows mlp.py's layer formulas and the host's GEMM curve")
    learner_gpus: int | None = Field(
        default=None, ge=1, le=65_536,
        description="data-parallel learners, one per GPU in node order: each minibatch "
                    "split over them, gradients all-reduced before the optimizer step")


def _busy_processes(system: Any) -> int:
    """Processes on CPU cores at once: the actors (on at most ``cores`` cores), plus with
    ``central`` inference one server per GPU (or one on a core when ``act`` is on the
    CPU), each issuing from a core; ``async`` adds the learner, which learns while actors
    collect; ``sync``'s learner runs while the actors wait, so they are the busiest."""
    k = system.knobs
    per_node = -(-k.actors // system.nodes.count)  # actors are spread over the nodes
    actors = min(per_node, k.cores) if k.cores else per_node
    if k.inference == "central":
        on = system.placement.get("act", "cpu")
        actors += len(system.parts.get(on, ())) if on != "cpu" else 1
    return actors + 1 if k.learner == "async" else actors


def _trace_knobs(info: ActorLearnerInfo, trace: Any, parts: dict, placement: dict) -> dict[str, Any]:
    return {"env_steps": trace.env_steps,
            "actors": info.actors, "envs_per_actor": info.envs_per_actor,
            "inference": "local", "batch_size": info.batch_size, "learner": "sync",
            "sync_interval": 1, "rollout_len": info.rollout_len, "epochs": info.epochs,
            "obs_bytes": 4 * info.obs_dim, "gpu_swap": False, "learner_gpus": 1}


#: Per on-policy transition besides the observation: action, logp, reward, done, value.
_ROLLOUT_SCALARS = 5


def _recorded(nets: dict[str, Any], hp: dict[str, Any]) -> dict[str, Any]:
    """A policy and a value network, or any other set (a policy alone, REINFORCE's; a
    shared actor-critic body; parts) described as one network, whose per-layer work the
    program reads (its ``value_sizes`` then empty: there is no separate value network)."""
    pi = nets["policy"]
    pair = set(nets) == {"policy", "value"}
    sizes = pi.stand_in_sizes()
    return {**network_info(nets, always=not pair), "actors": 1, "envs_per_actor": 1,
            "obs_dim": sizes[0], "n_actions": sizes[-1], "policy_sizes": sizes,
            "value_sizes": nets["value"].stand_in_sizes() if pair else [],
            "n_params": sum(n.n_params for n in nets.values()),
            "transition_bytes": float32_bytes(pi.obs_shape) + _ROLLOUT_SCALARS * F32}


def _work(k: Any) -> tuple[float, str]:
    """One iteration (every actor's rollout) is the least the program simulates."""
    per_iteration = float(k.actors) * k.envs_per_actor * k.rollout_len
    return (max(per_iteration, float(k.env_steps or 0)),
            f"env steps (one iteration: {k.actors:,} actors x {k.envs_per_actor:,} envs "
            f"x {k.rollout_len:,} steps)")


register(Workload(
    name="actor_learner", family="actor_learner",
    description="multi-process PPO: actor processes and a learner",
    knobs=ActorLearnerKnobs, info=ActorLearnerInfo,
    placements={"act": (Runs.CORES, Runs.KERNELS),
                "learn": (Runs.CORES, Runs.KERNELS)}, trace_knobs=_trace_knobs,
    capture_module="rldse.workloads.actor_learner.ppo",
    program_module="rldse.workloads.actor_learner.program",
    capture_options={"actors": (int, Field(default=1, ge=1, le=256,
                                           description="actor processes"))},
    sides={p: SIDES[p] for p in ("env_step", "env_reset", "act", "learn")},
    worker_knob="actors", busy_processes=_busy_processes, host_knobs=("actors", "envs_per_actor", "rollout_len"),
    recording=Recordable(loop="on_policy", networks=("policy", "value"), one_network="policy",
                         required=("env_step", "act", "rollout_add", "learn", "sync"),
                         learner_phases=frozenset({"learn", "sync"}), info=_recorded),
    wait_phases=frozenset({"rollout_add", "sync"}),  # pipes between processes
    cpu_info=CPU_FIELDS, work=_work))
