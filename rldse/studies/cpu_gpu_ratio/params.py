"""The study's parameters (study.yaml) and the names its parts share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rldse.paths import StudyOutput

#: the search's outputs, under the study's out/
SEARCH_OUT = "search"


class Environment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace: str | None = Field(default=None, description="its capture, relative to the "
                              "study folder; unset: the search file's trace")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    search: StudyOutput  # its outputs go to the study's out/search; kept inside the study
    ratios: list[int] = Field(min_length=3, description="actors per GPU, one core each")
    env_steps: int = Field(gt=0, description="env steps per sweep simulation")
    environments: dict[str, Environment] = Field(min_length=1)
    atari: str = Field(description="the environment the steps/J claim is judged on")
    bands: int = Field(ge=2, le=256, description="Latin-hypercube draws per ratio "
                       "(rldse.sim.bands) behind the optimal ratio's band")
    band_window: float = Field(gt=1, le=64, description="bands are drawn at the ratios "
                               "within this factor of each environment's nominal optimum")
