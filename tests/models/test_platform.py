"""A node's itemised price and a run's cost figures (rldse.models.platform)."""

from __future__ import annotations

import pytest

from rldse.models import load_part
from rldse.models.platform import (
    HOURS_PER_YEAR,
    PLATFORM_ITEMS,
    CostKnobs,
    Ownership,
    node_items,
)

PARTS = [("cpu", "epyc-9654", 1, 5000.0), ("gpu", "l4", 4, 2500.0)]


def test_items_are_the_parts_then_the_platform_priced_per_unit():
    platform = load_part("platform", "pcie-4gpu-1s")
    items = node_items(PARTS, platform, dram_gib=192.0, nics=1)
    assert [i.item for i in items] == ["cpu", "gpu", *PLATFORM_ITEMS]
    dram = next(i for i in items if i.item == "DRAM (GiB)")
    assert dram.count == 192 and dram.usd == pytest.approx(192 * platform.dram_usd_per_gib)
    supplies = next(i for i in items if i.item == "power supply")
    assert supplies.usd == platform.psus * platform.psu_usd
    assert [i.item for i in node_items(PARTS, None, 192.0, 0)] == ["cpu", "gpu"]


def test_owned_cost_per_hour_is_purchase_over_life_plus_wall_energy():
    platform = load_part("platform", "pcie-4gpu-1s")
    items = node_items(PARTS, platform, 192.0, 1)
    knobs = CostKnobs(life_years=4, usd_per_kwh=0.2)
    own = Ownership(items=items, platform=platform, knobs=knobs, dram_gib=192.0, nics=1)
    f = own.figures(parts_usd=15000.0, power_w=300.0, env_steps_per_s=1000.0)
    platform_usd = sum(i.usd for i in items[2:])
    assert f["cost_usd"] == pytest.approx(15000.0 + platform_usd)
    platform_w = platform.base_w + platform.nic_w + 192 * platform.dram_w_per_gib
    wall_w = (300.0 + platform_w) / platform.psu_efficiency
    assert f["wall_power_w"] == pytest.approx(wall_w)
    per_h = f["cost_usd"] / (4 * HOURS_PER_YEAR) + wall_w / 1000 * 0.2
    assert f["owned_usd_per_hour"] == pytest.approx(per_h)
    assert f["steps_per_usd"] == pytest.approx(1000.0 * 3600 / per_h)
    assert "steps_per_usd_hour" not in f  # no hourly price given: none made up


def test_runs_share_the_machine_and_keep_its_steps_per_dollar():
    """Four identical runs, each with a quarter of the machine: the run's price, power and
    rental are a quarter of the machine's, its steps per dollar the machine's."""
    platform = load_part("platform", "pcie-4gpu-1s")
    items = node_items(PARTS, platform, 192.0, 1)
    one = Ownership(items=items, platform=platform, dram_gib=192.0, nics=1,
                    rental_usd_per_hour=8.0)
    four = Ownership(items=items, platform=platform, dram_gib=192.0, nics=1,
                     runs_per_machine=4, rental_usd_per_hour=8.0)
    whole = one.figures(15000.0, 300.0, 1000.0)
    run = four.figures(15000.0 / 4, 300.0 / 4, 1000.0)  # each run: a quarter of the parts
    assert run["machine_cost_usd"] == pytest.approx(whole["machine_cost_usd"])
    assert run["machine_wall_power_w"] == pytest.approx(whole["wall_power_w"])
    assert run["machine_env_steps_per_s"] == 4000.0
    assert run["rental_usd_per_hour"] == 2.0
    assert run["steps_per_usd"] == pytest.approx(4 * whole["steps_per_usd"])
    assert run["steps_per_usd_hour"] == pytest.approx(4 * whole["steps_per_usd_hour"])


def test_a_rented_platform_is_priced_per_hour_only():
    cloud = load_part("platform", "aws-g6-12xlarge")
    items = node_items(PARTS, cloud, 192.0, 0)
    assert [(i.item, i.usd) for i in items] == [("cloud instance (per hour)",
                                                 cloud.cloud_usd_per_hour)]
    own = Ownership(items=items, platform=cloud, rental_usd_per_hour=cloud.cloud_usd_per_hour)
    f = own.figures(15000.0, 300.0, 1000.0)
    assert "steps_per_usd" not in f and "machine_cost_usd" not in f
    assert "wall_power_w" not in f  # the renter's energy is in the hourly price
    assert f["steps_per_usd_hour"] == pytest.approx(3.6e6 / cloud.cloud_usd_per_hour)
