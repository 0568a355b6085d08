"""An offline (SwiftRL-style) trace's loop as the twin runs it: the dataset split over
agents, ``passes_per_round`` passes per round, then the host's average."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.errors import RldseError
from rldse.sim.machine import Machine
from rldse.workloads.tabular.sizes import Q_BYTES


@dataclass(frozen=True)
class Offline:
    """An offline trace's loop as the twin runs it: the trace's numbers and the knobs."""

    algorithm: str
    n_states: int
    n_actions: int
    dtype: str  # the run's number format (knob, else the trace's)
    transitions: int  # dataset size N
    agents: int
    passes: int
    passes_per_round: int
    flops_per: float  # per transition, from the trace's q_update rows
    touches_per: float
    bytes_per: float

    @property
    def rounds(self) -> int:
        return self.passes // self.passes_per_round

    @property
    def updates(self) -> int:
        return self.transitions * self.passes

    @property
    def q_bytes(self) -> int:
        return Q_BYTES * self.n_states * self.n_actions

    @property
    def compares_per(self) -> float:
        """Compares of the max over actions per update (the flops beyond the 5 of the TD
        arithmetic, see train.py's module docstring)."""
        return max(self.flops_per - 5.0, 0.0)


def offline_loop(m: Machine, default_agents: int) -> Offline:
    """The offline loop's shape: the knobs, else the trace's numbers; ``default_agents``
    is the device's (one per DPU on PIM, the trace's elsewhere)."""
    info, k = m.system.info, m.knobs
    n = k.transitions or info.dataset_transitions
    ppr = info.passes_per_round
    passes = k.passes or info.passes
    if passes % ppr:
        raise RldseError(f"workload.passes: {passes} is not a multiple of the trace's "
                         f"passes_per_round ({ppr})")
    agents = k.agents or min(default_agents, n)
    if agents > n:
        raise RldseError(f"workload.agents: {agents} agents need at least as many "
                         f"transitions (workload.transitions is {n})")
    upd = m.trace.ops[m.trace.ops["phase"] == "q_update"]
    items = float(upd["items"].sum())
    if items <= 0:  # the per-transition work is read off these rows
        raise RldseError("an offline tabular trace needs q_update rows with transitions "
                         "(items); this one has none", where=m.trace.source)
    return Offline(
        algorithm=m.trace.meta.algorithm, n_states=info.n_states,
        n_actions=info.n_actions, dtype=k.dtype or info.dtype,
        transitions=n, agents=agents, passes=passes, passes_per_round=ppr,
        flops_per=float(upd["flops"].sum()) / items,
        touches_per=float(upd["touches"].sum()) / items,
        bytes_per=float(upd["bytes"].sum()) / items)


def split(n: int, parts: int, i: int) -> int:
    """Start of part i when n items are cut into `parts` contiguous parts (train_offline)."""
    return n * i // parts


@dataclass(frozen=True)
class DpuLayout:
    """Agents on DPUs in contiguous blocks (as train_offline splits them): D DPUs used,
    the busiest DPU's transitions and the most agents one DPU runs."""

    dpus: int
    busiest: int
    agents_per_dpu: int


def dpu_layout(sh: Offline, available: int) -> DpuLayout:
    """D = min(agents, available DPUs); transitions and agents of each DPU."""
    dpus = min(sh.agents, available)
    first_agent = np.array([split(sh.agents, dpus, j) for j in range(dpus + 1)], np.int64)
    starts = sh.transitions * first_agent // sh.agents
    return DpuLayout(dpus, int(np.diff(starts).max()), int(np.diff(first_agent).max()))
