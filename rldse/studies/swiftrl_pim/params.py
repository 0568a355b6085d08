"""The study's parameters (study.yaml) and the names its parts share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rldse.workloads.tabular.train import TABULAR_ENVS

#: Behaviour streams generated side by side; stream i fills rows [i·n/STREAMS, (i+1)·n/STREAMS)
#: of the dataset, so every agent's contiguous chunk is in-order experience, as in a file
#: written by one sequential generator.
STREAMS = 100
SPLIT = ("cpu_to_dpu_s", "kernel_s", "inter_dpu_s", "dpu_to_cpu_s")
SPLIT_LABELS = ("CPU→DPU", "DPU kernel", "inter-DPU (via host)", "DPU→CPU")
#: The paper's program on PIM: SwiftRL's released kernel (kailashg26/SwiftRL,
#: Multiagent_version.zip, PIM_code/Qlearning.c: a uint8 table, FP64 arithmetic emulated on
#: the DPU, every tasklet runs the whole loop, one gather; ``workload.pim_kernel:
#: released``). It is Q-learning only and has no INT32 or FP32 variant.
PAPER_KERNEL = "released"
PAPER_ALGORITHM = "q_learning"
PAPER_DTYPE = "uint8/fp64"  # results.csv's dtype of the released kernel's rows
#: rldse's own kernel, the what-if: the chunk split over tasklets in INT32 fixed point or
#: FP32, tables averaged every round (``workload.pim_kernel: split``).
WHAT_IF_KERNEL = "split"


class Data(BaseModel):
    model_config = ConfigDict(extra="forbid")
    transitions: int = Field(ge=1000, description="generated transitions per env")
    seed: int = 0
    files: dict[str, str] = Field(default_factory=dict,
                                  description="env id -> SwiftRL-format file used instead")


class Hyper(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(gt=0, le=1)
    gamma: float = Field(ge=0, lt=1)
    epsilon: float = Field(ge=0, le=1, description="offline SARSA: the ε of a'")


class Scaling(BaseModel):
    model_config = ConfigDict(extra="forbid")
    transitions: int = Field(ge=1, description="simulated dataset size")
    dpus: list[int]
    passes: list[int] = Field(description="rounds: each a pass over every chunk, then the "
                                          "host's average")
    pim: str
    pim_host: dict
    cpu: str = Field(description="SwiftRL's CPU baseline: the compiled loop, one thread")
    gpu: str
    bands: int = Field(ge=1, description="Latin-hypercube draws over every assumed number")
    bands_seed: int = 0

    @model_validator(mode="after")
    def _sorted(self) -> Scaling:
        if self.dpus != sorted(set(self.dpus)) or len(self.dpus) < 2:
            raise ValueError("dpus must be at least two increasing DPU counts")
        return self


class Learning(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dpus: list[int] = Field(min_length=1, description="agents (one per DPU) of the learned "
                                                       "runs; the first one's runs are traced")
    passes: int = Field(ge=1)


class MultiAgent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    env: str
    transitions: int = Field(ge=1, description="generated transitions (or the file's)")
    file: str | None = Field(default=None, description="SwiftRL-format file used instead")
    agents: int
    passes: int
    passes_per_round: list[int] = Field(min_length=1)


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")
    near_linear_min: float = Field(description="kernel speedup, smallest to largest DPU "
                                               "count, that counts as near-linear")
    faster_min: float = Field(gt=1, description="time ratio that counts as 'faster' (the "
                                                "paper states no number: a gain beyond "
                                                "parity's ±25 % tolerance)")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    envs: list[str]
    algorithms: list[Literal["q_learning", "sarsa"]]
    dtypes: list[Literal["int32", "fp32"]]
    data: Data
    hyperparameters: Hyper
    learning: Learning
    scaling: Scaling
    multi_agent: MultiAgent
    published: Published

    @model_validator(mode="after")
    def _check(self) -> Params:
        for env in [*self.envs, self.multi_agent.env, *self.data.files]:
            if env not in TABULAR_ENVS:
                raise ValueError(f"'{env}' is not a tabular env ({', '.join(TABULAR_ENVS)})")
        if PAPER_ALGORITHM not in self.algorithms:
            raise ValueError(f"algorithms must include {PAPER_ALGORITHM}: SwiftRL's released "
                             "kernel, the paper's program, is Q-learning")
        if sorted(self.dtypes) != ["fp32", "int32"]:
            raise ValueError("dtypes must be [int32, fp32]: the study compares them")
        if self.multi_agent.passes not in self.multi_agent.passes_per_round:
            raise ValueError("multi_agent.passes_per_round must include multi_agent.passes: "
                             "the released kernel runs every pass in one launch and "
                             "averages once, the CPU baseline beside it likewise")
        for ppr in self.multi_agent.passes_per_round:
            if self.multi_agent.passes % ppr:
                raise ValueError(f"multi_agent.passes must be a multiple of {ppr}")
        return self

