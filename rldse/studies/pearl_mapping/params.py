"""The study's parameters (study.yaml) and how it reads PEARL's tables' device names."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rldse.paths import StudyData


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rm: str
    learner: str
    data_storage: str
    peak_samples_per_s: float


class PearlTables(BaseModel):
    model_config = ConfigDict(extra="forbid")
    latency_csv: StudyData  # in the study's folder, as a spec's tables (rldse.paths)
    link_csv: StudyData
    train_batch_size: int
    insert_batch_size: int
    state_size: int
    action_size: int
    published: Published


class FpgaPlatform(BaseModel):
    model_config = ConfigDict(extra="forbid")
    traces: dict[str, str]
    cpu: str
    gpu: str
    fpga: str
    env_steps: int = Field(ge=1)
    actors: int = Field(ge=1)
    replays: list[str] = Field(min_length=1, description="replay devices PEARL's mapping "
                                                         "searches")
    learners: list[str] = Field(min_length=1, description="learner devices it searches")
    bands: int = Field(ge=1, description="Latin-hypercube draws over every assumed number")
    seed: int = 0
    published_throughput: float = Field(gt=0)
    published_perf_per_w: float = Field(gt=0)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pearl_tables: PearlTables
    fpga_platform: FpgaPlatform


def devices(latency_csv: Path) -> list[str]:
    """The devices of PEARL's latency table (PT.csv): its rows' first column."""
    lines = latency_csv.read_text().strip().splitlines()[1:]
    return [line.split(",")[0].strip() for line in lines]
