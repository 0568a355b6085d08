"""The study's parameters (study.yaml) and the system they name."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from rldse.system import SystemSpec, parse_spec

GB = 1e9


class PpoPublished(BaseModel):
    model_config = ConfigDict(extra="forbid")
    obs_gb: dict[int, float]
    oom: dict[int, bool]


class Ppo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sides: list[int] = Field(min_length=1)
    published: PpoPublished


class ReinforcePublished(BaseModel):
    model_config = ConfigDict(extra="forbid")
    td_s: float = Field(gt=0)
    mc_s: float = Field(gt=0)
    ratio: float = Field(gt=0)


class Reinforce(BaseModel):
    model_config = ConfigDict(extra="forbid")
    side: int = Field(gt=0)
    td_steps: list[int] = Field(min_length=1)
    published: ReinforcePublished


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace: str
    cpu: str
    gpu: str
    published_link_gbs: float
    envs: int = Field(gt=0)
    steps: int = Field(gt=0)
    hidden: list[int] = Field(min_length=1)
    ppo: Ppo
    reinforce: Reinforce
    bands: int = Field(ge=2, le=1024, description="Latin-hypercube draws per band")
    seed: int = 0

    @field_validator("reinforce")
    @classmethod
    def _td_within_an_iteration(cls, rf: Reinforce, info: ValidationInfo) -> Reinforce:
        """n-step TD's loss at step t is known at t + n − 1: within the iteration."""
        steps = info.data.get("steps")
        bad = [n for n in rf.td_steps if steps is not None and not 1 <= n < steps]
        if bad:
            raise ValueError(f"td_steps {bad}: each must be 1 to {steps - 1} (fewer than "
                             f"steps, {steps})")
        return rf


def system_spec(p: Params) -> SystemSpec:
    """TimeRL's machine: the study's CPU and GPU, both roles' kernels on the GPU."""
    return parse_spec({"name": "timerl", "cpu": {"preset": p.cpu}, "gpu": {"preset": p.gpu},
                       "placement": {"act": "gpu", "learn": "gpu"}}, where="timerl_memory")
