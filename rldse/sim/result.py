"""Result: what a simulated run did. A plain value: JSON in, JSON out, digest-stamped."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from rldse.errors import RldseError
from rldse.models.platform import CostItem
from rldse.sim.device import Device

if TYPE_CHECKING:  # on use: `rldse metrics` reads the model's fields, not frames
    import pandas as pd


#: quantities no real run can have negative or non-finite: the run's, then each device's
_PHYSICAL = ("sim_time_s", "energy_j", "avg_power_w", "env_steps", "updates",
             "gpu_memory_peak_bytes", "swapped_bytes", "host_memory_peak_bytes")
_DEVICE_PHYSICAL = ("busy_s", "energy_j", "background_j", "avg_power_w")


def _unphysical(obj: BaseModel, names: tuple[str, ...]) -> tuple[str, float] | None:
    for name in names:
        value = getattr(obj, name)
        if not math.isfinite(value) or value < 0:
            return name, value
    return None


class DeviceStats(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str
    preset: str
    lanes: int
    busy_s: float = Field(description="lane-seconds of work booked")
    phase_busy_s: dict[str, float] = Field(default_factory=dict, description="busy_s by "
                                           "phase, overlapped with other work or not")
    utilisation: float = Field(description="busy_s / (lanes * sim_time_s)")
    energy_j: float
    background_j: float
    action_j: dict[str, float]
    avg_power_w: float
    estimator: str
    claimed_accuracy: str
    cost_usd: float


class PhaseStats(BaseModel):
    """Time one kind of worker spent in one phase, waits on other workers included."""

    model_config = ConfigDict(extra="forbid")

    worker: str = Field(description="worker kind: actor, learner, host, agent, rank")
    phase: str = Field(description="trace phase, or 'wait:<what>' for blocking on others")
    device: str
    count: int
    time_s: float = Field(description="summed over the workers of this kind")
    share: float = Field(description="fraction of this worker kind's total time")


class OperatorStats(BaseModel):
    """One operator kind a phase ran on a part that prices operators (a GPU): its calls in
    the run and one call's cost, as ``rldse parts cost`` gives it (``simulate --ops``)."""

    model_config = ConfigDict(extra="forbid")

    phase: str
    op: str = Field(description="operator (rldse.models.gpu_ops.GPU_OPS)")
    shape: str = Field(description="its dimensions, as `rldse parts cost --shape` takes them")
    dtype: str
    part: str = Field(description="KIND/PRESET")
    count: float = Field(description="calls in the run: the phase's operations × the mean "
                         "calls per operation over the trace rows priced")
    host_s: float = Field(description="host time of one call on the issuing core, as booked "
                          "(its dispatch, scaled to a captured or framework-ratio host time)")
    device_s: float = Field(description="device time of one call")
    bound: str = Field(description="the model term that bound the call")
    share: float = Field(description="count × max(host_s, device_s) over the phase's sum")


#: Metric names of feasibility checks: `checks.gpu_memory`.
CHECK_PREFIX = "checks."


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sim_time_s: float = Field(description="simulated wall-clock time of the run")
    env_steps: int = Field(description="environment steps simulated (all actors)")
    env_steps_per_s: float = Field(description="env_steps / sim_time_s")
    updates: int = Field(description="learner updates (gradient steps, Q-table passes)")
    updates_per_s: float = Field(description="updates / sim_time_s")
    energy_j: float = Field(description="energy of every device: idle power for the whole "
                            "run plus dynamic power while busy")
    avg_power_w: float = Field(description="energy_j / sim_time_s")
    steps_per_joule: float = Field(description="env_steps / energy_j, steps per joule")
    cost_usd: float = Field(description="purchase price of the parts the run uses, and of "
                            "its share of the platform (the spec's platform:), US dollars")
    # what a buyer pays (rldse.models.platform); the run's share with runs_per_machine > 1
    runs_per_machine: int = Field(default=1, description="identical runs sharing the "
                                  "machine; every figure not named machine_* is one run's")
    machine_env_steps_per_s: float | None = Field(default=None, description="env steps/s "
                                                  "of every run on the machine")
    wall_power_w: float | None = Field(default=None, description="the run's power at the "
                                       "wall: (avg_power_w + its share of the platform's) / "
                                       "the supplies' efficiency (None: rented)")
    machine_wall_power_w: float | None = Field(default=None, description="the machine's "
                                               "power at the wall, every run on it "
                                               "(None: rented)")
    machine_cost_usd: float | None = Field(default=None, description="purchase price of "
                                           "the whole machine, parts and platform of every "
                                           "node (None: rented)")
    owned_usd_per_hour: float | None = Field(default=None, description="the run's share of "
                                             "the purchase over cost.life_years plus its wall "
                                             "energy at cost.usd_per_kwh, per hour")
    steps_per_usd: float | None = Field(default=None, description="env steps per dollar of "
                                        "owning the machine (owned_usd_per_hour; None: rented)")
    rental_usd_per_hour: float | None = Field(default=None, description="the run's share of "
                                              "the machine's hourly rental price (None: none "
                                              "given)")
    steps_per_usd_hour: float | None = Field(default=None, description="env steps per dollar "
                                             "of renting the machine (rental_usd_per_hour)")
    node_cost: list[CostItem] = Field(default_factory=list, description="one node's price "
                                      "item by item: its parts (a kind on several presets, "
                                      "one line each at its mean count per node), then its "
                                      "platform's")
    bottleneck: str
    critical_share: float = Field(description="share of the pacing worker's time in the "
                                  "bottleneck phase")
    gpu_memory_peak_bytes: int = Field(default=0, description="bytes the program keeps on "
                                       "one GPU at its peak (checks.gpu_memory)")
    swapped_bytes: int = Field(default=0, description="bytes swapped from GPU to host memory "
                               "(workload.gpu_swap)")
    host_memory_peak_bytes: int = Field(default=0, description="bytes the program keeps in "
                                        "host DRAM at its peak (checks.host_memory)")
    checks: dict[str, bool] = Field(default_factory=dict, description="feasibility checks the "
                                    "system's part kinds declare, by name (True: feasible)")
    breakdown_s: dict[str, float] = Field(default_factory=dict,
                                          description="program-specific time split")
    warnings: list[str] = Field(default_factory=list,
                                description="things in the spec that did not do what it implies")
    devices: list[DeviceStats]
    phases: list[PhaseStats]
    operators: list[OperatorStats] = Field(default_factory=list, description="per phase, "
                                           "each operator priced on a GPU (simulate --ops)")

    def checked_physical(self, where: str) -> Result:
        """This result, refused in one line if a time, energy, power or memory is negative
        or not finite (counts past the models' range, rather than a number printed wrong)."""
        bad = _unphysical(self, _PHYSICAL)
        for d in self.devices:
            if bad is None and (found := _unphysical(d, _DEVICE_PHYSICAL)) is not None:
                bad = (f"{d.name}.{found[0]}", found[1])
        if bad is not None:
            raise RldseError(f"the simulation gave {bad[0]} = {bad[1]:.4g} (allowed: finite, "
                             "at least 0): the trace's counts are outside what the models "
                             "cover", where=where)
        return self
    trace_digest: str
    spec_digest: str
    seed: int
    # policy lag (None: the program does not model it); rldse.sim.machine.Outcome
    staleness_mean_updates: float | None = Field(
        default=None, description="parameter updates (learner iterations) the policy that "
        "collected a rollout is behind the learner when it learns on it; mean")
    staleness_p95_updates: float | None = Field(default=None, description="policy lag as "
                                                "staleness_mean_updates; 95th percentile")
    # learning-aware metrics (rldse.sim.target), set by a target return; None: no target
    target_return: float | None = Field(default=None, description="the return the run goes "
                                        "to (--target-return)")
    target_smoothing_episodes: int | None = Field(default=None, description="trailing-mean "
                                                  "window of the learning curve, episodes")
    steps_to_target: int | None = Field(default=None, description="env steps at which the "
                                        "captured learning curve first reaches the target")
    time_to_target_s: float | None = Field(default=None, description="simulated time to "
                                           "steps_to_target")
    energy_to_target_j: float | None = Field(default=None, description="energy to "
                                             "steps_to_target")
    cost_to_target_usd: float | None = Field(
        default=None, description="rental cost to steps_to_target at "
        "rental_usd_per_hour (only when the system gives an hourly price)")
    # over seeds (a trace captured with --seeds N > 1); steps_to_target is then the median
    target_seeds: int | None = Field(default=None, description="learning curves (seeds) "
                                     "the steps to target come from")
    target_seeds_reached: int | None = Field(default=None, description="seeds whose curve "
                                             "reaches the target")
    steps_to_target_low: int | None = Field(default=None, description="fewest env steps to "
                                            "the target over seeds")
    steps_to_target_high: int | None = Field(default=None, description="most env steps to "
                                             "the target over seeds (None: a seed never "
                                             "reaches it)")
    time_to_target_s_low: float | None = Field(default=None, description="time to "
                                               "steps_to_target_low at the run's rate")
    time_to_target_s_high: float | None = Field(default=None, description="time to "
                                                "steps_to_target_high at the run's rate")

    def metrics(self) -> dict[str, float]:
        """Scalar metrics by name (what objectives and constraints refer to); optional
        ones are left out when unset, never given a stand-in value."""
        skip = {"devices", "phases", "breakdown_s", "bottleneck", "trace_digest", "spec_digest",
                "warnings", "checks", "node_cost"}
        out = {k: v for k, v in self.model_dump().items() if k not in skip and v is not None}
        out.update({f"{CHECK_PREFIX}{k}": v for k, v in self.checks.items()})
        out.update({f"breakdown.{k}": v for k, v in self.breakdown_s.items()})
        for d in self.devices:
            out[f"util.{d.name}"] = d.utilisation
        return out

    @property
    def feasible(self) -> bool:
        return all(self.checks.values())

    def devices_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([d.model_dump() for d in self.devices])

    def phases_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([p.model_dump() for p in self.phases])

    def to_json(self) -> str:
        return self.model_dump_json(indent=1)


class WorkerClock:
    """Per worker kind, the time spent in each (phase, device): where the critical path goes.

    Programs set `instances[kind]` (e.g. 64 actors) so the bottleneck compares busy time
    per worker, not summed over workers.
    """

    def __init__(self) -> None:
        self._t: dict[tuple[str, str, str], list] = defaultdict(lambda: [0, 0.0])
        self.instances: dict[str, int] = {}

    def spend(self, worker: str, phase: str, device: str, dt_s: float, count: int = 1) -> None:
        cell = self._t[(worker, phase, device)]
        cell[0] += count
        cell[1] += dt_s

    def stats(self) -> list[PhaseStats]:
        totals: dict[str, float] = defaultdict(float)
        for (worker, _, _), (_, t) in self._t.items():
            totals[worker] += t
        return [PhaseStats(worker=w, phase=p, device=d, count=c, time_s=t,
                           share=t / totals[w] if totals[w] > 0 else 0.0)
                for (w, p, d), (c, t) in sorted(self._t.items())]


#: Breakdown entries of time before the steady state, by name: start-up (processes,
#: loading data) and warm-up (an off-policy loop's random steps before its first update)
RAMP_KEYS = {"startup_s": "start-up", "load_s": "loading", "warmup_s": "warm-up"}
#: Above this share of the run, rates describe the ramp more than the steady state
RAMP_SHARE = 0.25


def ramp_warnings(breakdown_s: dict[str, float], sim_time_s: float) -> list[str]:
    """A note for each start-up or warm-up longer than RAMP_SHARE of the run: then steps/s
    and steps/J say more about the ramp than the loop (a one-iteration Pong run, mostly its
    processes' start-up, looks slower than a long one)."""
    return [f"{label} takes {breakdown_s[key]:.3g} s, {breakdown_s[key] / sim_time_s:.0%} of "
            f"the {sim_time_s:.3g} s run: rates describe the {label} more than the steady "
            "loop (simulate more env steps to see it)"
            for key, label in RAMP_KEYS.items()
            if sim_time_s > 0 and breakdown_s.get(key, 0.0) > RAMP_SHARE * sim_time_s]


def operator_stats(rows: list[dict], phases: list[PhaseStats]) -> list[OperatorStats]:
    """``rows`` (a part model's ``operator_rows``: calls per operation) with each phase's
    operation count on that kind of part, sorted by phase and share."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for p in phases:
        counts[(p.phase, p.device)] += p.count
    out = []
    for r in rows:
        kind = r["part"].partition("/")[0]
        count = r["calls_per_operation"] * counts.get((r["phase"], kind), 0)
        fields = {k: v for k, v in r.items() if k != "calls_per_operation"}
        out.append(OperatorStats(**fields, count=count, share=0.0))
    totals: dict[str, float] = defaultdict(float)
    for o in out:
        totals[o.phase] += o.count * max(o.host_s, o.device_s)
    for o in out:
        t = totals[o.phase]
        o.share = o.count * max(o.host_s, o.device_s) / t if t > 0 else 0.0
    return sorted(out, key=lambda o: (o.phase, -o.share, o.op, o.shape))


def bottleneck(phases: list[PhaseStats], instances: dict[str, int]) -> tuple[str, float]:
    """The pacing worker kind is the one busiest per instance (least idle or waiting); its
    largest phase is the bottleneck, with that phase's share of the worker's time."""
    if not phases:
        return "none", 0.0
    busy: dict[str, float] = defaultdict(float)
    for p in phases:
        if not p.phase.startswith("wait:"):
            busy[p.worker] += p.time_s / instances.get(p.worker, 1)
    pacing = max(sorted(busy), key=lambda w: busy[w])
    own = [p for p in phases if p.worker == pacing and not p.phase.startswith("wait:")]
    top = max(own, key=lambda p: (p.share, p.phase))
    return f"{pacing}: {top.phase} on {top.device}", top.share


def device_stats(devices: list[Device], horizon_s: float) -> list[DeviceStats]:
    out = []
    for d in devices:
        e = d.energy_j(horizon_s)
        out.append(DeviceStats(
            name=d.name, kind=d.kind, preset=d.preset, lanes=d.lanes, busy_s=d.busy_s,
            phase_busy_s={p: u.busy_s for p, u in sorted(d.phases.items())},
            utilisation=d.utilisation(horizon_s), energy_j=e, background_j=d.background_j(horizon_s),
            action_j=dict(sorted(d.action_j.items())),
            avg_power_w=e / horizon_s if horizon_s > 0 else 0.0, estimator=d.estimator,
            claimed_accuracy=d.claimed_accuracy, cost_usd=d.cost_usd))
    return out
