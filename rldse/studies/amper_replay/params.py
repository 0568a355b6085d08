"""The study's parameters (study.yaml) and the names its parts share."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rldse.models import renamed
from rldse.paths import StudyInput

#: the AMPER variants the latency part measures: AMPER-k (k nearest rows per search) and
#: AMPER-fr (every row within a fixed radius)
VARIANTS = ("k", "fr")
#: the TCAM presets from AMPER's group's tool (Eva-CAM), against which the paper's ratio is
#: judged
EVA_CAM = ("fefet-tcam-64", "fefet-tcam-128", "fefet-tcam-256")
#: where the end-to-end part places replay (one simulation each)
END_TO_END_REPLAYS = ("cpu", "gpu", "tcam")


class Design(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bits: int
    k: int
    radius: int
    max_per_search: int
    target: Literal["proportional", "uniform"]
    targets_per_item: float


class Latency(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gpus: list[str]
    tcams: list[str]
    buffer_log2: list[int]
    batches: list[int]
    batches_per_point: int
    figure_gpu: str
    figure_batch: int
    bands: int = Field(ge=1, description="Latin-hypercube draws over the presets' ranges")
    bands_seed: int = 0

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, raw: Any) -> Any:
        return renamed.keys(raw, {"ams": "tcams"}, "latency")

    @model_validator(mode="after")
    def _figure_in_sweep(self) -> Latency:
        if self.figure_gpu not in self.gpus or self.figure_batch not in self.batches:
            raise ValueError("figure_gpu must be one of gpus and figure_batch one of batches")
        return self


class Learning(BaseModel):
    model_config = ConfigDict(extra="forbid")
    env_id: str
    steps: int
    seeds: list[int]
    replays: list[Literal["uniform", "per", "amper_k", "amper_fr"]]
    last_episodes: int


class EndToEnd(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace: StudyInput = Field(description="the shipped capture of the AMPER-k DQN run the "
                              "engine replays, relative to the study folder: its op "
                              "durations were timed once, so the study times nothing live")
    cpu: str
    gpu: str
    tcam: str
    env_steps: int

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, raw: Any) -> Any:
        return renamed.keys(raw, {"am": "tcam"}, "end_to_end")


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ratio_low: float
    ratio_high: float


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amper: Design
    latency: Latency
    learning: Learning
    end_to_end: EndToEnd
    published: Published
