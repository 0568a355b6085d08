"""Off-policy family: DQN (uniform, prioritized and AMPER-style replay) and DDPG.

The real loops share one skeleton (``loop.py``); ``dqn.py`` and ``ddpg.py`` hold each
agent. The simulated twins, ``program/dqn.py`` and ``program/ddpg.py``, give each its
shapes and replay through the ``program`` package (costs, memory, event loop, merged
and max-plus paths, timeline: one module each).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator

from rldse.kernels.network_work import F32, float32_bytes, network_info
from rldse.models.kinds import Runs
from rldse.workloads import (
    SIDES,
    Count,
    Count0,
    Info,
    Knobs,
    Layers,
    Recordable,
    Workload,
    learning_knob,
    register,
)


class OffPolicyKnobs(Knobs):
    actors: int | None = learning_knob(default=None, ge=1, le=65_536,
                               description="actors stepping environments (the trace: 1)")
    batch_size: int | None = learning_knob(default=None, ge=1, le=2**20,
                                   description="transitions per learner update")
    replay_capacity: int | None = learning_knob(default=None, ge=1, le=2**32,
                                        description="transitions the replay buffer holds")
    learn_every: int | None = learning_knob(default=None, ge=1, le=10**6,
                                    description="env steps per learner update")
    learner: Literal["sync", "async"] | None = learning_knob(
        default=None, description="sync: the real loop's order; async: PEARL's replay "
                                  "manager/learner overlap, actors run freely")
    sync_interval: int | None = learning_knob(default=None, ge=1, le=10**6,
                                      description="learner updates between parameter sends")
    gpu_swap: bool | None = Field(default=None, description="keep a replay buffer larger than "
                                  "GPU memory in host memory and copy each batch in")
    hidden: list[int] | None = learning_knob(
        default=None, min_length=1, max_length=64,
        description="widths of the hidden layers of every network (the trace's unless set); "
                    "work follows mlp.py's layer formulas and the host's GEMM curve")
    learner_gpus: int | None = Field(
        default=None, ge=1, le=65_536,
        description="data-parallel learners on one node's GPUs: each update's batch split "
                    "over them, gradients all-reduced before the optimizer step")

    @field_validator("hidden")
    @classmethod
    def _widths(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and not all(1 <= w <= 2**16 for w in v):
            raise ValueError("every width must be 1-65536")
        return v


class DQNInfo(Info):
    obs_dim: Count
    layer_sizes: Layers
    n_params: Count
    batch_size: Count
    replay: str
    replay_capacity: Count
    learning_starts: Count0
    learn_every: Count
    target_sync: Count
    double: bool
    transition_bytes: Count
    amper: dict[str, Any] | None = None  # AMPER replay's design and measured TCAM work
    network: dict[str, Any] | None = None  # a non-MLP network's layers (network_work.py)


class DDPGInfo(Info):
    obs_dim: Count
    actor_sizes: Layers
    critic_sizes: Layers
    actor_n_params: Count
    critic_n_params: Count
    batch_size: Count
    replay_capacity: Count
    learning_starts: Count0 = Field(
        validation_alias=AliasChoices("learning_starts", "warmup_steps"))
    learn_every: Count
    transition_bytes: Count


def _trace_knobs(info: Any, trace: Any, parts: dict, placement: dict) -> dict[str, Any]:
    return {"env_steps": trace.env_steps,
            "actors": 1, "batch_size": info.batch_size, "replay_capacity": info.replay_capacity,
            "learn_every": info.learn_every, "learner": "sync", "sync_interval": 1,
            "gpu_swap": False, "learner_gpus": 1,
            "hidden": list((getattr(info, "layer_sizes", None) or info.actor_sizes)[1:-1])}


#: Per transition besides the observations (replay.py's layout): int64 action, float32
#: reward, bool done.
_REPLAY_EXTRA_BYTES = 8 + 4 + 1


def _recorded_dqn(nets: dict[str, Any], hp: dict[str, Any]) -> dict[str, Any]:
    q = nets["q"]
    sizes = q.stand_in_sizes()
    # several trained networks (SAC's critics and actor): their work described as one
    return {**network_info(nets, always=len(nets) > 1), "obs_dim": sizes[0],
            "n_actions": sizes[-1],
            "layer_sizes": sizes,
            "n_params": q.n_params, "replay": "uniform", "double": False,
            "transition_bytes": 2 * float32_bytes(q.obs_shape) + _REPLAY_EXTRA_BYTES}


def _recorded_ddpg(nets: dict[str, Any], hp: dict[str, Any]) -> dict[str, Any]:
    actor, critic = nets["actor"], nets["critic"]
    a = actor.layer_sizes()
    return {"obs_dim": a[0], "act_dim": a[-1], "actor_sizes": a,
            "critic_sizes": critic.layer_sizes(), "actor_n_params": actor.n_params,
            "critic_n_params": critic.n_params,
            "transition_bytes": 2 * float32_bytes(actor.obs_shape) + F32 * a[-1] + F32 + 1,
            # the ddpg program reads the warm-up under DDPG's own name
            "warmup_steps": hp.get("learning_starts", hp.get("warmup_steps"))}


def _busy_processes(system: Any) -> int:
    """Processes on CPU cores at once: the actors (on at most ``cores`` cores); ``async``
    adds the learner and the replay manager, each on a core of its own, whatever part they
    drive (a GPU's dispatch runs on that core); ``sync`` runs the learner while the actors
    wait (the real loop's one process for one actor), so the actors are the busiest."""
    k = system.knobs
    actors = min(k.actors, k.cores) if k.cores else k.actors
    return actors + 2 if k.learner == "async" else actors


PLACEMENTS = {"act": (Runs.CORES, Runs.KERNELS),
              "learn": (Runs.CORES, Runs.KERNELS, Runs.LOOKUP), "replay": ("*",)}
#: Phases of the off-policy loop: acting and env steps on the actor, replay and learning
#: on the learner's side.
_SIDES = {p: SIDES[p] for p in ("env_step", "env_reset", "act", "learn", "replay_add",
                                "replay_sample", "replay_update")}
_REQUIRED = ("env_step", "act", "replay_add", "replay_sample", "learn")
#: `rldse capture dqn --replay`: the replay the real loop runs
_REPLAY = (Literal["uniform", "per", "amper_k", "amper_fr"],
           Field(default="uniform", description="replay: uniform, proportional PER, or "
                 "AMPER-style TCAM sampling"))

for _name, _info, _text, _options, _recorded, _nets in (
        ("dqn", DQNInfo, "DQN with uniform, prioritized or AMPER replay", {"replay": _REPLAY},
         _recorded_dqn, ("q",)),
        ("ddpg", DDPGInfo, "DDPG on continuous control", {}, _recorded_ddpg,
         ("actor", "critic"))):
    register(Workload(
        name=_name, family="offpolicy", description=_text, knobs=OffPolicyKnobs, info=_info,
        placements=PLACEMENTS, trace_knobs=_trace_knobs,
        capture_module=f"rldse.workloads.offpolicy.{_name}",
        program_module=f"rldse.workloads.offpolicy.program.{_name}",
        capture_options=_options, sides=_SIDES, worker_knob="actors",
        busy_processes=_busy_processes,
        recording=Recordable(loop="off_policy", networks=_nets, required=_REQUIRED,
                             info=_recorded)))
