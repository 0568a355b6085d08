"""What a buyer pays for a node besides its CPUs and GPUs, and what a run costs per hour.

A node's **platform** is its baseboard, DRAM (priced per GiB of the CPU's ``mem_bytes``
over its sockets), NICs, chassis (with fans, risers and backplane) and power supplies, each
from a preset's cited list price, plus the power those draw busy or idle (board, BMC, fans,
NICs, DIMM background) and the supplies' efficiency: the node's wall power is (the
devices' power + the platform's) / ``psu_efficiency``. A *rented* platform (a cloud
instance) has an hourly price instead of items.

A run's costs (``Ownership.figures``):

- owned, per hour: the purchase price of what the run uses (its parts and its share of
  the platform), straight-line over ``life_years``, plus its wall energy at
  ``usd_per_kwh``; ``steps_per_usd`` is its env steps per dollar of that. It assumes the
  machine is busy for its whole life (a machine busy half the time gets half the steps
  per dollar of purchase) and buys nothing else (rack space, cooling, staff: fold them
  into ``usd_per_kwh`` as a PUE multiple or into the platform's prices).
- rented, per hour: the run's share of the hourly price (``price_usd_per_hour`` in the
  spec, else a rented platform's); ``steps_per_usd_hour`` is its env steps per dollar.

With ``runs_per_machine`` N (rldse.models.packing) the machine holds N identical runs;
each run's figures are its share, the machine's are N times them, so steps per dollar are
the same per run and per machine and only rates, power and prices per hour scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from rldse.models.kinds import PartKind, register
from rldse.models.spec import PartSpec, quantity
from rldse.strict import UserModel

#: hours in a year of 365.25 days
HOURS_PER_YEAR = 8766.0
#: straight-line life of a bought machine, years: Alphabet and Microsoft depreciate servers
#: over 6 years (Alphabet 10-K 2022, from 4 years in 2023; Microsoft 10-K FY2022, from 4),
#: Amazon over 5 from 2025 (10-K 2024, down from 6), Meta 5.5 (10-K 2024); 3 is the IT
#: refresh cycle many buyers of GPU servers plan for (assumption). Range 3-6.
LIFE_YEARS = 5.0
LIFE_YEARS_RANGE = (3.0, 6.0)
#: electricity, USD per kWh at the wall: U.S. commercial-sector average revenue per kWh in
#: 2023, 12.74 cents (EIA Electric Power Annual 2023, released 17 Oct 2024, 'Average
#: revenue per kilowatthour' table; recalled, UNVERIFIED); the same table's contiguous-state
#: commercial averages run from 7.38 (North Dakota) to 23.91 cents (California)
USD_PER_KWH = 0.1274
USD_PER_KWH_RANGE = (0.0738, 0.2391)


class CostKnobs(UserModel):
    """``cost: {life_years: 5, usd_per_kwh: 0.1274}``: how a bought machine is paid for
    (each default and its source: rldse.models.platform)."""

    model_config = ConfigDict(extra="forbid")

    life_years: float = Field(default=LIFE_YEARS, gt=0, le=30, allow_inf_nan=False,
                              description="years the purchase price is spread over "
                              f"(default {LIFE_YEARS:g}, plausible {LIFE_YEARS_RANGE[0]:g}-"
                              f"{LIFE_YEARS_RANGE[1]:g}: hyperscalers' server lives)")
    usd_per_kwh: float = Field(default=USD_PER_KWH, ge=0, le=5, allow_inf_nan=False,
                               description="price of energy at the wall, USD/kWh (default "
                               f"{USD_PER_KWH:g}, U.S. commercial average, EIA 2023; states "
                               f"{USD_PER_KWH_RANGE[0]:g}-{USD_PER_KWH_RANGE[1]:g})")


class PlatformSpec(PartSpec):
    rented: bool = quantity("", "a cloud instance: priced per hour, not bought item by item")
    cloud_usd_per_hour: float | None = quantity(
        "USD/h", "hourly price of the whole node when rented (None: not offered)",
        default=None, gt=0, le=10_000, plausible=(0.01, 1000))
    baseboard_usd: float = quantity("USD", "the baseboard (motherboard, BMC)", ge=0, le=1e6,
                                    plausible=(0, 100_000))
    dram_usd_per_gib: float = quantity("USD/GiB", "DRAM per GiB of DIMM capacity (a DIMM "
                                       "sold as 64 GB holds 64 GiB)", ge=0, le=1000,
                                       plausible=(0, 200))
    nics: int = quantity("count", "NICs the node has (a network section's nics_per_node "
                         "wins)", ge=0, le=64)
    nic_usd: float = quantity("USD", "one NIC", ge=0, le=1e5, plausible=(0, 20_000))
    chassis_usd: float = quantity("USD", "chassis with fans, risers and backplane", ge=0,
                                  le=1e6, plausible=(0, 100_000))
    psus: int = quantity("count", "power supplies (redundant ones included)", ge=0, le=16)
    psu_usd: float = quantity("USD", "one power supply", ge=0, le=1e5, plausible=(0, 10_000))
    base_w: float = quantity("W", "board, BMC, fans and drives, busy or idle", ge=0,
                             le=10_000, plausible=(0, 5000))
    nic_w: float = quantity("W", "one NIC", ge=0, le=1000, plausible=(0, 200))
    dram_w_per_gib: float = quantity("W/GiB", "DIMM background power per GiB (refresh, "
                                     "register, PMIC; accesses are the CPU model's)", ge=0,
                                     le=10, plausible=(0, 2))
    psu_efficiency: float = quantity("fraction", "DC power out / AC power in of the "
                                     "supplies at the node's load", gt=0, le=1)


class CostItem(BaseModel):
    """One line of a node's itemised cost (``simulate`` prints them, Result.node_cost)."""

    model_config = ConfigDict(extra="forbid")

    item: str
    preset: str = Field(description="the preset it is priced from")
    count: float = Field(description="how many (GiB for DRAM)")
    unit_usd: float = Field(description="price of one, USD (per hour when rented)")
    usd: float = Field(description="count × unit_usd")


@dataclass(frozen=True)
class Ownership:
    """A resolved system's buying terms: the whole machine's itemised cost (every node),
    its platform, the cost knobs and the runs sharing it."""

    items: tuple[CostItem, ...] = ()
    platform: PlatformSpec | None = None
    knobs: CostKnobs = field(default_factory=CostKnobs)
    runs_per_machine: int = 1
    nodes: int = 1
    dram_gib: float = 0.0  # per node
    nics: int = 0  # per node
    rental_usd_per_hour: float | None = None  # the whole machine's (every node)

    @property
    def platform_usd(self) -> float:
        """The platform items of every node, USD (0 without a platform, or rented)."""
        if self.platform is None or self.platform.rented:
            return 0.0
        return self.nodes * sum(i.usd for i in self.items if i.item in PLATFORM_ITEMS)

    @property
    def platform_w(self) -> float:
        """DC power of every node's platform, busy or idle, W."""
        p = self.platform
        if p is None or p.rented:
            return 0.0
        return self.nodes * (p.base_w + self.nics * p.nic_w + self.dram_gib * p.dram_w_per_gib)

    @property
    def terms_set(self) -> bool:
        """Whether any buying term differs from a spec without platform, cost, rental or
        packing (those specs keep the digests they had before pricing existed)."""
        return (self.platform is not None or self.knobs != CostKnobs()
                or self.runs_per_machine != 1 or self.rental_usd_per_hour is not None)

    def as_dict(self) -> dict:
        return {"items": [i.model_dump() for i in self.items],
                "platform": None if self.platform is None
                else self.platform.model_dump(mode="json"),
                "knobs": self.knobs.model_dump(), "runs_per_machine": self.runs_per_machine,
                "rental_usd_per_hour": self.rental_usd_per_hour}

    def run_usd(self, parts_usd: float) -> float:
        """Purchase price of what a run uses: its parts' and its share of the platform."""
        return parts_usd + self.platform_usd / self.runs_per_machine

    def bill(self, devices) -> list[CostItem]:
        """The node's items, a part kind whose run's ``devices`` (kind, preset, cost_usd)
        are on other presets than the spec's (Machine.repart: llm_rl's rollout GPUs on
        workload.rollout_gpu) split by preset at its mean count per node, so the lines
        price what the run counts."""
        out = []
        for item in self.items:
            mine = [d for d in devices if d.kind == item.item]
            if all(d.preset == item.preset for d in mine):
                out.append(item)
                continue
            per_node = self.runs_per_machine / self.nodes
            for preset in dict.fromkeys(d.preset for d in mine):
                same = [d for d in mine if d.preset == preset]
                count, unit = len(same) * per_node, same[0].cost_usd
                out.append(CostItem(item=item.item, preset=preset, count=count,
                                    unit_usd=unit, usd=count * unit))
        return out

    def figures(self, parts_usd: float, power_w: float, env_steps_per_s: float,
                devices=()) -> dict:
        """A run's cost figures (Result fields) from its parts' price, its devices' mean
        power and its rate; the machine's are runs_per_machine times the rates, power and
        prices per hour (module docstring); the bill is ``bill(devices)``."""
        n = self.runs_per_machine
        p = self.platform
        out: dict = {"runs_per_machine": n, "node_cost": self.bill(devices),
                     "machine_env_steps_per_s": n * env_steps_per_s}
        steps_h = env_steps_per_s * 3600.0
        if p is None or not p.rented:  # a renter's wall energy is in the hourly price
            wall_w = (power_w + self.platform_w / n) / (p.psu_efficiency if p else 1.0)
            out.update(wall_power_w=wall_w, machine_wall_power_w=n * wall_w)
            run_usd = self.run_usd(parts_usd)
            owned_h = (run_usd / (self.knobs.life_years * HOURS_PER_YEAR)
                       + wall_w / 1000.0 * self.knobs.usd_per_kwh)
            out.update(cost_usd=run_usd, machine_cost_usd=n * run_usd,
                       owned_usd_per_hour=owned_h,
                       steps_per_usd=steps_h / owned_h if owned_h > 0 else None)
        if self.rental_usd_per_hour is not None:
            rent_h = self.rental_usd_per_hour / n
            out.update(rental_usd_per_hour=rent_h, steps_per_usd_hour=steps_h / rent_h)
        return out


#: CostItem names of a platform's own items (the rest are the system's parts)
PLATFORM_ITEMS = ("baseboard", "DRAM (GiB)", "NIC", "chassis", "power supply")
#: the one CostItem of a rented platform
RENTED_ITEM = "cloud instance (per hour)"


def node_items(parts_usd: list[tuple[str, str, int, float]], platform: PlatformSpec | None,
               dram_gib: float, nics: int) -> tuple[CostItem, ...]:
    """One node's items: its parts (``(item, preset, count, unit_usd)`` each) and then its
    platform's (none without one; a rented platform is one line per hour)."""
    rows = list(parts_usd)
    if platform is not None and platform.rented:
        rows = [(RENTED_ITEM, platform.name, 1,
                 platform.cloud_usd_per_hour or 0.0)]
    elif platform is not None:
        rows += [("baseboard", platform.name, 1, platform.baseboard_usd),
                 ("DRAM (GiB)", platform.name, dram_gib, platform.dram_usd_per_gib),
                 ("NIC", platform.name, nics, platform.nic_usd),
                 ("chassis", platform.name, 1, platform.chassis_usd),
                 ("power supply", platform.name, platform.psus, platform.psu_usd)]
    return tuple(CostItem(item=i, preset=p, count=c, unit_usd=u, usd=c * u)
                 for i, p, c, u in rows if c)


register(PartKind(name="platform", spec=PlatformSpec, model=lambda spec, ctx: spec,
                  description="a node's baseboard, DRAM, NICs, chassis and power supplies "
                              "(or its cloud price per hour)",
                  in_system=False))
