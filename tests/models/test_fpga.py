"""FPGA model: PEARL's sum-tree replay manager (HeteroRL SysConfig/FPGA_perfmodel.py)."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.models.fpga import FpgaModel, FpgaSpec, tree_depth
from rldse.models.kinds import PART_KINDS, ReplayJob, kinds_for
from rldse.models.presets import list_presets, load_part, make_model

PRESET = "alveo-u250"
F, DDR = 250e6, 77e9  # Hz, B/s


@pytest.fixture
def u250() -> FpgaModel:
    return make_model(load_part("fpga", PRESET))


def test_pearl_sample_hand_check(u250):
    # PEARL's RM_perf(4, 16, 128): 2·16·(128 + 4) = 4,224 cycles at 250 MHz = 16.896 µs,
    # plus 128 × 24 B over 77 GB/s = 0.040 µs. Capacity 8192 (PEARL's alg_hp.json) is depth 4.
    t = u250.sample_seconds(128, 8192)
    assert t == pytest.approx(16.9e-6, rel=0.02)
    assert t == pytest.approx(4224 / F + 3072 / DDR)
    assert t == pytest.approx(16.9359e-6, rel=1e-4)


@pytest.mark.parametrize(("capacity", "depth"), [
    (1, 1), (16, 1), (17, 2), (256, 2), (4096, 3), (4097, 4), (8192, 4), (65536, 4),
    (65537, 5), (10**6, 5), (10**7, 6)])
def test_depth_is_ceil_log_fanout_of_capacity(u250, capacity, depth):
    assert u250.depth(capacity) == depth


def test_depth_is_exact_where_float_logs_are_not():
    assert tree_depth(125, 5) == 3 and tree_depth(126, 5) == 4
    assert tree_depth(2**29, 2) == 29
    with pytest.raises(RldseError, match="capacity must be at least 1"):
        tree_depth(0, 16)


def test_update_pipelines_pearls_levels_over_the_batch(u250):
    # 2·(128 + 4) = 264 cycles = 1.056 µs, plus the same 3,072 B as a sample
    assert u250.update_seconds(128, 8192) == pytest.approx(264 / F + 3072 / DDR)
    assert u250.update_seconds(128, 8192) == pytest.approx(1.0959e-6, rel=1e-4)
    # PEARL's own u-latency (2·depth cycles) is the batch-0 case of the cycle term
    assert u250.update_seconds(0, 8192) == pytest.approx(2 * 4 / F)


def test_insert_is_an_update_plus_transitions_on_the_card(u250):
    assert u250.insert_seconds(64, 8192) == pytest.approx(u250.update_seconds(64, 8192))
    assert u250.insert_seconds(64, 8192, 100) == pytest.approx(
        2 * (64 + 4) / F + 64 * (24 + 100) / DDR)
    assert u250.insert_seconds(0, 8192, 100) == 0.0


def test_times_grow_with_batch_and_capacity(u250):
    for f in (u250.sample_seconds, u250.update_seconds, u250.insert_seconds):
        by_batch = [f(b, 8192) for b in (1, 32, 128, 512)]
        assert by_batch == sorted(by_batch) and len(set(by_batch)) == 4
        by_capacity = [f(64, c) for c in (16, 256, 8192, 65537, 10**7)]
        assert by_capacity == sorted(by_capacity) and len(set(by_capacity)) == 5
    # one more level costs one more pipeline slot of K children
    assert (u250.sample_seconds(128, 65537) - u250.sample_seconds(128, 65536)
            == pytest.approx(2 * 16 / F))


def test_tree_on_chip(u250):
    assert u250.tree_bytes(8192) == 8 * (16 + 256 + 4096 + 65536)
    assert u250.tree_fits(10**6)  # depth 5: 8 × 1,118,480 B ≈ 8.9 MB
    assert not u250.tree_fits(10**7)  # depth 6: ≈ 143 MB > 54 MB


def test_preset_loads_and_is_listed(u250):
    presets = list_presets()
    row = presets[(presets.kind == "fpga") & (presets.name == PRESET)]
    assert len(row) == 1 and row.price_usd.iloc[0] == 12995
    spec = load_part("fpga", PRESET)
    assert isinstance(spec, FpgaSpec)
    assert (spec.clock_mhz, spec.tree_fanout, spec.ddr_bw_gbs) == (250, 16, 77)
    assert isinstance(u250, FpgaModel)
    assert u250.link.name == "pcie3-x16" and u250.link.bandwidth_gbs == 15.7


def test_registered_as_a_replay_kind():
    kind = PART_KINDS["fpga"]
    assert kind.roles == frozenset({"replay"}) and kind.spec is FpgaSpec
    assert kind.preset_refs == {"host_link": "link"}
    assert "fpga" in kinds_for("replay") and "fpga" not in kinds_for("learn")


def _link(m: FpgaModel, nbytes: float) -> float:
    return 2 * m.link.latency_s + nbytes / (m.link.bandwidth_gbs * 1e9)


def test_replay_role_with_transitions_on_the_host(u250):
    job = ReplayJob(batch=128, capacity=8192, transition_bytes=100, prioritized=True,
                    host_gather_s=5e-6)
    sample = u250.sample_seconds(128, 8192) + _link(u250, 128 * 24) + 5e-6
    assert u250.replay_seconds(job, "sample", 3).wall_s == pytest.approx(3 * sample)
    update = u250.update_seconds(128, 8192) + _link(u250, 128 * 24)
    assert u250.replay_seconds(job, "update", 2).wall_s == pytest.approx(2 * update)
    insert = u250.insert_seconds(10, 8192) + _link(u250, 10 * 24)
    assert u250.replay_seconds(job, "insert", 10).wall_s == pytest.approx(insert)
    assert u250.replay_seconds(job, "sample", 0).wall_s == 0.0
    assert u250.replay_joules(job, "sample", 3) == {}
    with pytest.raises(RldseError, match="unknown replay operation 'gather'"):
        u250.replay_seconds(job, "gather", 1)


def test_replay_role_with_transitions_on_the_card():
    m = make_model(load_part("fpga", PRESET, data_on_card=True))
    job = ReplayJob(batch=128, capacity=8192, transition_bytes=100, prioritized=True,
                    host_gather_s=5e-6)  # the host gathers nothing: the card ships the batch
    sample = m.sample_seconds(128, 8192, 100) + _link(m, 128 * (24 + 100))
    assert m.replay_seconds(job, "sample", 1).wall_s == pytest.approx(sample)
    insert = m.insert_seconds(10, 8192, 100) + _link(m, 10 * (24 + 100))
    assert m.replay_seconds(job, "insert", 10).wall_s == pytest.approx(insert)


def test_uniform_replay_needs_no_tree(u250):
    job = ReplayJob(batch=128, capacity=8192, transition_bytes=100, prioritized=False)
    assert u250.replay_seconds(job, "update", 5).wall_s == 0.0
    sample = 128 / F + 128 * 24 / DDR + _link(u250, 128 * 24)
    assert u250.replay_seconds(job, "sample", 1).wall_s == pytest.approx(sample)


def test_energy_and_power_view(u250):
    assert (u250.lanes, u250.idle_w, u250.max_w) == (1, 45, 225)
    e = u250.energy(busy_s=2.0, wall_s=10.0)
    assert float(e.joules) == pytest.approx(45 * 10 + (225 - 45) * 2)
    assert e.claimed_accuracy == u250.claimed_accuracy


@pytest.mark.parametrize(("override", "message"), [
    ({"clock_mhz": -1}, r"^fpga\.clock_mhz: -1 is out of range \(allowed: 0 < clock_mhz ≤ 2000\)$"),
    ({"tree_fanout": 1}, r"^fpga\.tree_fanout: 1 is out of range \(allowed: 2 ≤ tree_fanout"),
    ({"idle_w": 300}, r"^fpga\.idle_w: idle_w must not exceed max_w \(225 W\)"),
    ({"clock_hz": 250}, r"^fpga\.clock_hz: unknown field; did you mean 'clock_mhz'\?"),
    ({"host_link": "pcie9"}, r"^fpga\.host_link: unknown link preset 'pcie9'"),
])
def test_bad_fields_are_one_line_errors_naming_the_field(override, message):
    with pytest.raises(RldseError, match=message) as err:
        load_part("fpga", PRESET, **override)
    assert "\n" not in str(err.value)
