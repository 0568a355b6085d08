"""Off-policy family: DQN (uniform, prioritized and AMPER-style replay) and DDPG.

The real loops share one skeleton (``loop.py``); ``dqn.py`` and ``ddpg.py`` hold each
agent, and ``program.py`` the simulated twin both replay through.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator

from rldse.workloads import Count, Count0, Info, Knobs, Layers, Workload, learning_knob, register


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
    amper: dict[str, Any] | None = None


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
            "gpu_swap": False,
            "hidden": list((getattr(info, "layer_sizes", None) or info.actor_sizes)[1:-1])}


PLACEMENTS = {"act": ("cpu", "gpu"), "learn": ("cpu", "gpu", "table"), "replay": ("*",)}

for _name, _info, _text in (("dqn", DQNInfo, "DQN with uniform, prioritized or AMPER replay"),
                            ("ddpg", DDPGInfo, "DDPG on continuous control")):
    register(Workload(
        name=_name, family="offpolicy", description=_text, knobs=OffPolicyKnobs, info=_info,
        placements=PLACEMENTS, trace_knobs=_trace_knobs,
        capture_module=f"rldse.workloads.offpolicy.{_name}",
        program_module=f"rldse.workloads.offpolicy.{_name}"))
