"""Associative-memory (TCAM) part: arrays of rows searched all at once.

- A search compares one key with every row of every array in parallel: it takes one
  array's search latency (plus peripheral latency, where the source lists it apart)
  and costs every array's search energy.
- Writes (priority updates) program one row at a time: rows × write latency and energy.
- Leakage flows for the whole run in every array.

Larger arrays cost less energy per bit but search slower (Eva-CAM's 64/128/256 tables:
Liu et al., DATE 2022; CAMASim's FeFET cost table: Li et al., arXiv 2403.03442).
"""

from __future__ import annotations

import numpy as np

from rldse.models.kinds import Check, PartKind, ReplayJob, register
from rldse.models.ops import ArrayLike
from rldse.models.power import IDLE_PLUS_ACTIONS, EnergyEstimate, action_joules
from rldse.models.spec import PartSpec, quantity


class AmSpec(PartSpec):
    arrays: int = quantity("count", "TCAM arrays searched in parallel", ge=1, le=10**7)
    rows: int = quantity("count", "rows (stored words) per array", ge=1, le=65_536)
    bits_per_row: int = quantity("bit", "key width", ge=1, le=65_536)
    search_ns: float = quantity("ns", "one array's search latency", gt=0, le=1e6)
    search_pj: float = quantity("pJ", "one array's search energy", ge=0, le=1e9)
    periph_ns: float = quantity("ns", "peripheral latency per search, where listed apart",
                                ge=0, le=1e6)
    periph_pj: float = quantity("pJ", "peripheral energy per array search, where listed apart",
                                ge=0, le=1e9)
    write_ns: float = quantity("ns", "latency to write one row", gt=0, le=1e9)
    write_pj: float = quantity("pJ", "energy to write one row", ge=0, le=1e9)
    leakage_w: float = quantity("W", "leakage power per array", ge=0, le=1e3)
    array_price_usd: float = quantity("USD", "price of one array", ge=0, le=1e6)
    energy_accuracy: str = quantity("", "accuracy the energy numbers' sources claim")

    @property
    def capacity_rows(self) -> int:
        """Rows in all arrays: how many entries (e.g. quantized priorities) fit."""
        return self.arrays * self.rows

    @property
    def price_usd(self) -> float:
        return self.array_price_usd * self.arrays


class AmModel:
    """All arrays of one associative-memory part."""

    def __init__(self, spec: AmSpec) -> None:
        self.spec = spec

    def search_seconds(self, n_searches: ArrayLike) -> np.ndarray:
        """``n_searches`` keys one after another, each against all arrays at once."""
        s = self.spec
        return np.asarray(n_searches, dtype=np.float64) * (s.search_ns + s.periph_ns) * 1e-9

    def search_joules(self, n_searches: ArrayLike) -> np.ndarray:
        """Every array spends its search energy on every key."""
        s = self.spec
        return action_joules(np.asarray(n_searches, dtype=np.float64) * s.arrays,
                             s.search_pj + s.periph_pj)

    def write_seconds(self, rows: ArrayLike) -> np.ndarray:
        """``rows`` row writes, one after another."""
        return np.asarray(rows, dtype=np.float64) * self.spec.write_ns * 1e-9

    def write_joules(self, rows: ArrayLike) -> np.ndarray:
        return action_joules(rows, self.spec.write_pj)

    # ---- the replay role: priorities in the arrays, transitions in host memory ----------
    def replay_seconds(self, job: ReplayJob, op: str, n: int) -> float:
        """A sample is searches_per_item nearest-priority searches per item plus the host's
        gather of the batch; an update rewrites rows; an insert writes one row each."""
        if op == "sample":
            return n * (float(self.search_seconds(job.batch * job.searches_per_item))
                        + job.host_gather_s)
        rows = n * job.batch * job.writes_per_update_item if op == "update" else n
        return float(self.write_seconds(rows))

    def replay_joules(self, job: ReplayJob, op: str, n: int) -> dict[str, float]:
        if op == "sample":
            return {"search": float(self.search_joules(n * job.batch * job.searches_per_item))}
        rows = n * job.batch * job.writes_per_update_item if op == "update" else n
        return {"write": float(self.write_joules(rows))}

    def replay_checks(self, job: ReplayJob) -> dict[str, bool]:
        """One row per buffered priority."""
        return {"am_capacity": job.capacity <= self.spec.capacity_rows}

    # ---- power (see rldse.models.power) -------------------------------------------------
    method = IDLE_PLUS_ACTIONS
    lanes = 1  # a search occupies every array at once

    @property
    def idle_w(self) -> float:
        """Leakage of all arrays."""
        return self.spec.leakage_w * self.spec.arrays

    @property
    def max_w(self) -> float:
        """Equal to idle_w: searches and writes are charged per action."""
        return self.idle_w

    @property
    def claimed_accuracy(self) -> str:
        return self.spec.energy_accuracy

    def energy(self, n_searches: ArrayLike, rows_written: ArrayLike,
               wall_s: ArrayLike) -> EnergyEstimate:
        """Searches and writes per action, plus leakage over the run."""
        joules = (self.search_joules(n_searches) + self.write_joules(rows_written)
                  + self.idle_w * np.asarray(wall_s, dtype=np.float64))
        return EnergyEstimate(joules, IDLE_PLUS_ACTIONS, self.spec.energy_accuracy)


register(PartKind(
    name="am", spec=AmSpec, model=lambda spec, ctx: AmModel(spec),
    description="associative-memory (TCAM) arrays", roles=frozenset({"replay"}),
    checks=(Check("am_capacity", "the replay buffer's entries fit the arrays' rows"),)))
