"""Device: one part instance inside a Machine: FIFO lanes, phase accounting, energy.

Energy follows Fan, Weber, Barroso (ISCA 2007) and Accelergy (Wu et al., ICCAD 2019): background power by the utilisation model
P(u) = P_idle + u·(P_max − P_idle), integrated exactly over the run as
P_idle·T + (P_max − P_idle)·busy_lane_s / lanes (busy time changes only at bookings,
so no sampling; a part whose running work draws less than P_max, a GPU kernel on a few
SMs, weights each phase's busy time by its ``dynamic_share``), plus per-action energy (CAM searches, DPU instructions, DRAM bits)
added by the programs with the estimator that produced it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rldse.models.power import UTILISATION
from rldse.sim.lanes import Lanes
from rldse.sim.timeline import TimelineStream


@dataclass
class PhaseUse:
    count: int = 0
    busy_s: float = 0.0


@dataclass
class Device:
    """A named device with `lanes` identical FIFO lanes (cores, SM partitions, DPUs, arrays)."""

    name: str
    kind: str
    preset: str
    lanes: int
    idle_w: float
    max_w: float
    estimator: str = UTILISATION  # the part model's ``method`` (machine.py passes it)
    claimed_accuracy: str = "unstated; first-order"
    cost_usd: float = 0.0
    timeline: TimelineStream | None = None  # where bookings go with ``--timeline``
    phases: dict[str, PhaseUse] = field(default_factory=dict)
    action_j: dict[str, float] = field(default_factory=dict)
    busy_s: float = 0.0
    #: phase -> share of max_w − idle_w its busy seconds draw (a GPU's kernel occupancy,
    #: rldse.models.gpu); None: all of it
    dynamic_share: Callable[[str], float] | None = None
    #: the SimPy environment whose clock lets the lanes forget past bookings
    clock: Any = None

    def __post_init__(self) -> None:
        if self.lanes < 1:
            raise ValueError(f"{self.name}: lanes must be >= 1")
        self._lanes = Lanes(self.lanes, clock=self.clock)

    def book(self, now_s: float, dur_s: float, phase: str) -> float:
        """Run `dur_s` of `phase` on the earliest-free lane from `now_s`; return the end time."""
        start, end, lane = self._lanes.reserve(now_s, dur_s)
        self.account(phase, dur_s, 1)
        if self.timeline is not None:
            self.timeline.append((self.name, lane, phase, start, dur_s))
        return end

    def book_on(self, subset: Lanes, now_s: float, dur_s: float, phase: str) -> float:
        """Like `book`, on a subset of this device's lanes that a program reserved for one
        role (e.g. the cores actors may use); returns the end time."""
        start, end, lane = subset.reserve(now_s, dur_s)
        self.account(phase, dur_s, 1)
        if self.timeline is not None:
            self.timeline.append((self.name, lane, phase, start, dur_s))
        return end

    def book_parts(self, subset: Lanes, now_s: float,
                   parts: tuple[tuple[str, float], ...]) -> float:
        """Like `book_on`, one booking whose seconds are consecutive parts (phase,
        seconds), each accounted and shown under its own phase, as bookings of each part
        would be (an actor's chunk of env steps, inserts and acts on its core);
        zero-second parts are left out. Returns the end time."""
        start, end, lane = subset.reserve(now_s, sum(s for _, s in parts))
        for phase, dur_s in parts:
            if dur_s > 0:
                self.account(phase, dur_s, 1)
                if self.timeline is not None:
                    self.timeline.append((self.name, lane, phase, start, dur_s))
                start += dur_s
        return end

    def book_all(self, now_s: float, dur_s: float, phase: str) -> float:
        """Run `dur_s` of `phase` on every lane at once (a whole-device kernel)."""
        start, end = self._lanes.reserve_all(now_s, dur_s)
        self.account(phase, dur_s * self.lanes, 1)
        if self.timeline is not None:
            self.timeline.append((self.name, -1, phase, start, dur_s))
        return end

    def account(self, phase: str, lane_s: float, count: int) -> None:
        """Add lane-seconds of `phase` that a program scheduled on its own lanes model
        (e.g. actors time-sharing cores analytically) to this device's busy time."""
        use = self.phases.get(phase)
        if use is None:
            use = self.phases[phase] = PhaseUse()
        use.count += count
        use.busy_s += lane_s
        self.busy_s += lane_s

    def add_action_energy(self, label: str, joules: float) -> None:
        self.action_j[label] = self.action_j.get(label, 0.0) + joules

    def utilisation(self, horizon_s: float) -> float:
        return min(1.0, self.busy_s / (self.lanes * horizon_s)) if horizon_s > 0 else 0.0

    def dynamic_s(self) -> float:
        """Busy lane-seconds weighted by the share of dynamic power each phase draws."""
        share = self.dynamic_share
        if share is None:
            return self.busy_s
        return sum(u.busy_s * share(p) for p, u in sorted(self.phases.items()))

    def background_j(self, horizon_s: float) -> float:
        return self.idle_w * horizon_s + (self.max_w - self.idle_w) * self.dynamic_s() / self.lanes

    def energy_j(self, horizon_s: float) -> float:
        return self.background_j(horizon_s) + sum(self.action_j.values())
