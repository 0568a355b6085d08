"""What a simulated run costs a buyer: the machine's price item by item, and a run's share
when several share it (rldse.models.platform, rldse.models.packing via the Machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.sim import simulate
from rldse.system import load_spec
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
BOX = ROOT / "examples" / "4xl4.yaml"
SMALL = {"workload.env_steps": 20000}


@pytest.fixture(scope="module")
def dqn():
    return load_trace(ROOT / "traces" / "dqn_cartpole_uniform.parquet")


@pytest.fixture(scope="module")
def by_runs(dqn):
    return {n: simulate(dqn, load_spec(BOX, {**SMALL, "runs_per_machine": n}))
            for n in (1, 4)}


def test_the_itemised_node_is_the_machine_and_the_runs_share_it(by_runs):
    for n, r in by_runs.items():
        assert r.runs_per_machine == n
        assert sum(i.usd for i in r.node_cost) == pytest.approx(r.machine_cost_usd)
        assert n * r.cost_usd == pytest.approx(r.machine_cost_usd)
        assert {"baseboard", "DRAM (GiB)", "NIC", "chassis", "power supply"} <= \
            {i.item for i in r.node_cost}
    assert by_runs[1].machine_cost_usd == pytest.approx(by_runs[4].machine_cost_usd)


def test_four_runs_on_four_gpus_contend_for_the_clock_and_quadruple_the_machines_rate(by_runs):
    """A run alone leaves three L4s idle; four runs each get one L4 and 8 of the 32 cores,
    and run slower than one alone (twelve busy cores hold a lower turbo clock than three)."""
    one, four = by_runs[1], by_runs[4]
    assert [d.lanes for d in four.devices] == [8, 1]
    assert four.env_steps_per_s < one.env_steps_per_s
    assert four.machine_env_steps_per_s == pytest.approx(4 * four.env_steps_per_s)
    assert four.machine_env_steps_per_s > 3 * one.env_steps_per_s
    assert four.steps_per_usd > 3 * one.steps_per_usd
    assert four.machine_wall_power_w > one.wall_power_w  # the idle L4s were drawing idle power


def test_without_a_platform_only_the_parts_are_priced(dqn):
    r = simulate(dqn, load_spec(ROOT / "examples" / "dgx1_like.yaml",
                                {"workload.env_steps": 5000}))
    assert [i.item for i in r.node_cost] == ["cpu", "gpu"]
    assert r.machine_cost_usd == pytest.approx(r.cost_usd)
    assert r.wall_power_w == pytest.approx(r.avg_power_w)  # no supplies to lose power in
    assert r.steps_per_usd_hour is None


def test_a_rented_platform_prices_the_rate_per_hour(dqn):
    r = simulate(dqn, load_spec(BOX, {**SMALL, "platform.preset": "aws-g6-12xlarge"}))
    assert r.steps_per_usd is None and r.machine_cost_usd is None
    assert r.rental_usd_per_hour == pytest.approx(4.6016 / 4)
    assert r.steps_per_usd_hour == pytest.approx(r.env_steps_per_s * 3600 / (4.6016 / 4))
