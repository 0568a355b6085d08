"""Energy estimators: the utilisation model and energy per action (Fan et al.; Accelergy).

- Utilisation model (Fan, Weber, Barroso, ISCA 2007): P(u) = P_idle + u·(P_max − P_idle).
  Integrated exactly over a run, E = P_idle·wall + (P_max − P_idle)·busy, where busy is
  the time at full utilisation (the sum of u·Δt over state changes, never sampled on a
  tick). Used for CPU, GPU and DIMM background power.
- Energy per action (Accelergy's energy reference table; Wu, Emer, Sze, ICCAD 2019):
  E = Σ count × energy per action. Used for CAM searches and writes, DRAM bits and DPU instructions.

Every estimate carries the method that produced it and the accuracy its source claims
(Accelergy's convention), so a Result can say how far to trust each device's joules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rldse.models.ops import ArrayLike

#: The engine's view of a part's power, the same on every cost model: ``lanes`` (units that
#: run one operation each), ``idle_w`` and ``max_w`` of the whole part for the utilisation
#: model, ``method`` and ``claimed_accuracy`` for the Result, plus per-action joules from
#: the model's own functions (search_joules, instruction_joules, dram_energy).
UTILISATION = "utilisation model P = P_idle + u·(P_max − P_idle) (Fan et al., ISCA 2007)"
#: A GPU's: each kernel second draws a share of P_max − P_idle set by the SMs it occupies.
OCCUPANCY = ("occupancy model P = P_idle + (static + (1 − static)·SMs occupied)·(P_max − "
             "P_idle) (AccelWattch's structure, Kandiah et al., MICRO 2021)")
PER_ACTION = "energy per action: Σ count × energy per action (Accelergy energy reference table)"
IDLE_PLUS_ACTIONS = "idle power × time plus energy per action (Accelergy)"


@dataclass(frozen=True)
class EnergyEstimate:
    """Joules (a scalar or an array matching the inputs), how they were estimated, and how
    accurate the estimator's source says it is."""

    joules: float | np.ndarray
    method: str
    claimed_accuracy: str


def utilisation_power_w(idle_w: float, max_w: float, utilisation: ArrayLike) -> np.ndarray:
    """P(u) = P_idle + u·(P_max − P_idle), u clipped to [0, 1]."""
    u = np.clip(np.asarray(utilisation, dtype=np.float64), 0.0, 1.0)
    return idle_w + u * (max_w - idle_w)


def utilisation_joules(idle_w: float, max_w: float, busy_s: ArrayLike,
                       wall_s: ArrayLike) -> np.ndarray:
    """∫P(u)dt = P_idle·wall + (P_max − P_idle)·busy, for busy time at full load ≤ wall."""
    wall = np.asarray(wall_s, dtype=np.float64)
    busy = np.minimum(np.asarray(busy_s, dtype=np.float64), wall)
    return idle_w * wall + (max_w - idle_w) * busy


def action_joules(count: ArrayLike, pj_per_action: float) -> np.ndarray:
    """Σ count × energy per action, from picojoules."""
    return np.asarray(count, dtype=np.float64) * pj_per_action * 1e-12


def dram_joules(bytes_: ArrayLike, pj_per_bit: float) -> np.ndarray:
    """DRAM access energy: 8 bits per byte × energy per bit (Accelergy's CACTI table)."""
    return action_joules(8.0 * np.asarray(bytes_, dtype=np.float64), pj_per_bit)


class UtilisationPower:
    """The engine's power view of a part whose spec has `idle_w`, `max_w` and
    `energy_accuracy` and whose energy follows the utilisation model (GPUs, table parts).
    A model mixes this in and sets `spec`; `lanes` defaults to one."""

    spec: Any
    method = UTILISATION
    lanes = 1
    warnings: tuple[str, ...] = ()

    @property
    def idle_w(self) -> float:
        return self.spec.idle_w

    @property
    def max_w(self) -> float:
        return self.spec.max_w

    @property
    def claimed_accuracy(self) -> str:
        return self.spec.energy_accuracy

    def energy(self, busy_s: ArrayLike, wall_s: ArrayLike) -> EnergyEstimate:
        return EnergyEstimate(utilisation_joules(self.spec.idle_w, self.spec.max_w, busy_s,
                                                 wall_s), self.method, self.spec.energy_accuracy)


class IdlePlusActionsPower:
    """The engine's power view of a part whose dynamic energy is charged per action (CAM
    searches and writes, DPU instructions), not per busy second, so ``max_w`` equals
    ``idle_w``. A model mixes this in, sets `spec` (with `energy_accuracy`) and gives
    `idle_w`; ``idle_plus`` adds idle power over the run to its action joules."""

    spec: Any
    idle_w: float  # the model's own property
    method = IDLE_PLUS_ACTIONS
    lanes = 1
    warnings: tuple[str, ...] = ()

    @property
    def max_w(self) -> float:
        """Equal to idle_w: the dynamic part is charged per action, not per busy time."""
        return self.idle_w

    @property
    def claimed_accuracy(self) -> str:
        return self.spec.energy_accuracy

    def idle_plus(self, action_j: ArrayLike, wall_s: ArrayLike) -> EnergyEstimate:
        """Action joules plus idle power × the run's wall time."""
        joules = action_j + self.idle_w * np.asarray(wall_s, dtype=np.float64)
        return EnergyEstimate(joules, IDLE_PLUS_ACTIONS, self.spec.energy_accuracy)
