"""Tabular family: Q-learning and SARSA, online on toy-text environments and offline on
an experience dataset split over agents as SwiftRL runs it (``train.py``), the SwiftRL
dataset format (``swiftrl_format.py``), and the simulated twin on CPU cores, a GPU or
UPMEM DPUs (``program.py``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from rldse.kernels.network_work import F32
from rldse.models import PART_KINDS
from rldse.models.kinds import Runs
from rldse.workloads import SIDES, Count, Info, Knobs, Recordable, Workload, learning_knob, register


class TabularKnobs(Knobs):
    transitions: int | None = learning_knob(default=None, ge=1, le=10**10,
                                    description="offline: dataset size to train on")
    agents: int | None = learning_knob(default=None, ge=1, le=10**7,
                               description="offline: agents, one dataset chunk each (the "
                                           "trace's; on PIM one per DPU)")
    passes: int | None = learning_knob(default=None, ge=1, le=10**6,
                               description="offline: total passes over each agent's chunk")
    dtype: Literal["fp32", "int32"] | None = learning_knob(default=None,
                                                   description="Q-value number format")
    tasklets: int | None = Field(default=None, ge=1, le=24,
                                 description="PIM: tasklets per DPU (unset: the part's)")
    pim_kernel: Literal["split", "released"] | None = Field(
        default=None, description="PIM: 'split' (rldse's kernel: the chunk split over "
        "tasklets in the run's dtype, tables averaged every round) or 'released' "
        "(SwiftRL's released Qlearning.c: uint8 table, FP64 arithmetic, every tasklet runs "
        "the whole loop, one gather); unset: split")


class TabularInfo(Info):
    mode: Literal["online", "offline"]
    n_states: Count
    n_actions: Count
    dtype: str
    agents: Count
    passes: Count | None = None
    passes_per_round: Count | None = None
    workers: Count | None = None
    dataset_transitions: Count | None = None
    q_table_bytes: Count

    @model_validator(mode="after")
    def _offline_shape(self) -> TabularInfo:
        """An offline run's loop is its dataset, passes and rounds: none may be missing."""
        if self.mode == "offline":
            for name in ("passes", "passes_per_round", "dataset_transitions"):
                if getattr(self, name) is None:
                    raise ValueError(f"{name} is missing or null: an offline run needs it "
                                     "(a whole number, at least 1)")
        return self


def _trace_knobs(info: Any, trace: Any, parts: dict, placement: dict) -> dict[str, Any]:
    if info.mode == "online":
        return {"env_steps": trace.env_steps,
                "agents": 1, "dtype": info.dtype}
    return {"transitions": info.dataset_transitions, "passes": info.passes, "dtype": info.dtype}


def _busy_processes(system: Any) -> int:
    """Processes on CPU cores at once: online, the one loop; offline with ``q_update`` on
    the cores, the worker processes (``workload.cores``, else the trace's workers, at most
    the agents: the host waits while they run); offline on a GPU or DPUs, the host process
    that drives them."""
    info, k = system.info, system.knobs
    kind = system.placement.get("q_update", "cpu")
    if info.mode == "online" or PART_KINDS[kind].runs("q_update") is not Runs.CORES:
        return 1
    return min(k.cores or info.workers or 1, k.agents or info.agents)


def _recorded(nets: dict[str, Any], hp: dict[str, Any]) -> dict[str, Any]:
    cells = int(hp.get("n_states", 0)) * int(hp.get("n_actions", 0))
    return {"mode": "online", "agents": 1, "dtype": "fp32", "q_table_bytes": F32 * cells}


def _work(k: Any) -> tuple[float, str]:
    """An offline run's work is its updates: every transition once per pass (the agents
    split the dataset); an online run's, its env steps."""
    if k.transitions is None or k.passes is None:
        return float(k.env_steps or 0), "env steps"
    return (float(k.transitions) * k.passes,
            f"updates ({k.transitions:,} transitions x {k.passes:,} passes)")


register(Workload(
    name="tabular", family="tabular", description="tabular Q-learning and SARSA (online, "
    "or offline SwiftRL-style over agents)", knobs=TabularKnobs, info=TabularInfo,
    placements={"q_update": (Runs.CORES, Runs.KERNELS, Runs.DPUS)}, trace_knobs=_trace_knobs,
    capture_module="rldse.workloads.tabular.train",
    program_module="rldse.workloads.tabular.program",
    capture_options={
        "algorithm": (str | None, Field(default=None, description="q_learning or sarsa")),
        "dataset": (str | None, Field(default=None, description="offline: SwiftRL-format "
                                      "experience file")),
        "agents": (int, Field(default=1, ge=1, description="offline: agents (dataset chunks)")),
        "dtype": (Literal["fp32", "int32"], Field(default="fp32", description="Q-value type"))},
    sides={p: SIDES[p] for p in ("env_step", "env_reset", "act", "q_update")},
    worker_knob="agents", busy_processes=_busy_processes, work=_work,
    host_knobs=("agents", "passes", "dtype", "transitions"),
    recording=Recordable(loop="tabular", networks=(), required=("env_step", "q_update"),
                         info=_recorded)))
