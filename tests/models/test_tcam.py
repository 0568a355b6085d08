"""TCAM model against Eva-CAM (Liu et al., DATE 2022) and CAMASim (arXiv 2403.03442) numbers,
and the array organisation (H-tree broadcast, merge tree, RNG, candidate reads) computed by
hand from the formulas (docs/architecture.md, "The TCAM part") and the preset defaults
(tcam.yaml)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from rldse.models import TcamModel, load_part
from rldse.models.kinds import PartTime, ReplayJob

# tcam.yaml defaults: 2FeFET cell 300 F² at 45 nm, half the array is cells, 100 ps/mm,
# 0.12 pJ/bit/mm, merge 0.244 ns / 0.029 pJ, RNG and candidate read 0.488 ns / 0.144 pJ
CELL_UM2, EFFICIENCY = 300 * 0.045**2, 0.5
WIRE_NS_PER_MM, WIRE_PJ_PER_BIT_MM = 0.1, 0.12
MERGE_NS, MERGE_PJ, RNG_NS, RNG_PJ, READ_NS, READ_PJ = 0.244, 0.029, 0.488, 0.144, 0.488, 0.144
PITCH_64_MM = math.sqrt(64 * 64 * CELL_UM2 / EFFICIENCY) * 1e-3  # ≈ 70.5 µm


def model(name: str, **overrides) -> TcamModel:
    return TcamModel(load_part("tcam", name, **overrides))


def job(**kw) -> ReplayJob:
    return ReplayJob(**{"batch": 64, "capacity": 4096, "transition_bytes": 100,
                        "prioritized": True, **kw})


def test_64x64_fefet_search_costs_0_38_ns_and_2_34_pj():
    tcam = model("fefet-tcam-64")  # one array: no H-tree, no merge
    assert tcam.levels == 0 and tcam.path_mm == 0 and tcam.tree_mm == 0
    assert tcam.sample_seconds(1, 0, 0) == pytest.approx(0.38e-9)
    assert tcam.search_joules(1) == pytest.approx(2.34e-12)


def test_256_arrays_add_an_8_level_htree_and_merge():
    tcam = model("fefet-tcam-64", arrays=256)
    assert tcam.spec.capacity_rows == 256 * 64
    assert tcam.levels == 8
    p = PITCH_64_MM
    path = p / 2 * 2 * (1 + 2 + 4 + 8)  # ℓ_j = p/2 · 2^floor((j-1)/2), j = 1..8
    tree = p / 2 * 256 * (1 + .5 + .5 + .25 + .25 + .125 + .125 + .0625)  # Σ N/2^(j-1) ℓ_j
    assert tcam.path_mm == pytest.approx(path) and path == pytest.approx(15 * p)
    assert tcam.tree_mm == pytest.approx(tree) and tree == pytest.approx(360 * p)
    ns = path * WIRE_NS_PER_MM + 0.38 + 8 * MERGE_NS + path * WIRE_NS_PER_MM
    assert tcam.sample_seconds(1, 0, 0) == pytest.approx(ns * 1e-9)
    result_bits = 1 + 14  # hit + log2(16,384 rows)
    pj = (64 * tree * WIRE_PJ_PER_BIT_MM + 256 * 2.34 + 255 * MERGE_PJ
          + result_bits * tree * WIRE_PJ_PER_BIT_MM)
    assert tcam.search_joules(1) == pytest.approx(pj * 1e-12)
    assert [tcam.sample_seconds(n, 0, 0) for n in (0, 32)] == pytest.approx([0, 32 * ns * 1e-9])


def test_16384_arrays_have_14_levels_exact_latency_and_energy():
    tcam = model("fefet-tcam-64", arrays=16_384)
    assert tcam.levels == 14 and tcam.result_bits == 21  # hit + log2(2^20 rows)
    p = PITCH_64_MM
    path = 127 * p  # p/2 · 2 · (1 + 2 + … + 64) ≈ 8.96 mm
    tree = 24_384 * p  # p/2 · 16,384 · 2.9765625 ≈ 1,720 mm
    assert tcam.path_mm == pytest.approx(path) and tcam.tree_mm == pytest.approx(tree)
    ns = tcam.search_parts_ns()
    assert ns["htree"] == pytest.approx(path * WIRE_NS_PER_MM)  # ≈ 0.90 ns
    assert ns["search"] == pytest.approx(0.38)
    assert ns["merge"] == pytest.approx(14 * MERGE_NS + path * WIRE_NS_PER_MM)  # ≈ 4.31 ns
    assert tcam.sample_seconds(1, 0, 0) == pytest.approx(
        (2 * path * 0.1 + 0.38 + 14 * 0.244) * 1e-9)
    assert tcam.sample_seconds(1, 0, 0) == pytest.approx(5.588e-9, rel=1e-3)
    pj = tcam.search_parts_pj()
    assert pj["htree"] == pytest.approx(64 * tree * WIRE_PJ_PER_BIT_MM)  # ≈ 13.2 nJ
    assert pj["search"] == pytest.approx(16_384 * 2.34)  # ≈ 38.3 nJ
    assert pj["merge"] == pytest.approx(16_383 * MERGE_PJ + 21 * tree * WIRE_PJ_PER_BIT_MM)
    assert tcam.search_joules(1) == pytest.approx(sum(pj.values()) * 1e-12)
    assert tcam.search_joules(1) == pytest.approx(56.36e-9, rel=1e-3)


def test_search_latency_and_energy_grow_with_arrays():
    ns = [model("fefet-tcam-64", arrays=n).sample_seconds(1, 0, 0)
          for n in (1, 2, 3, 4, 5, 64, 1000, 4096, 16_384, 2**20)]
    pj = [model("fefet-tcam-64", arrays=n).search_joules(1) for n in (1, 2, 3, 4, 5, 64, 1000,
                                                                      4096, 16_384, 2**20)]
    # latency steps with the levels (3 and 4 arrays: both 2); energy with every array
    assert all(b >= a for a, b in zip(ns, ns[1:], strict=False))
    assert ns[2] == ns[3] and ns[3] < ns[4]
    assert all(b > a for a, b in zip(pj, pj[1:], strict=False))
    powers = [model("fefet-tcam-64", arrays=2**k).sample_seconds(1, 0, 0) for k in range(0, 21, 2)]
    assert all(b > a for a, b in zip(powers, powers[1:], strict=False))


def test_non_power_of_two_counts_branches_by_ceiling():
    tcam = model("fefet-tcam-64", arrays=3)  # 2 levels: 3 leaf branches, 2 above
    p = PITCH_64_MM
    assert tcam.levels == 2
    assert tcam.path_mm == pytest.approx(p)
    assert tcam.tree_mm == pytest.approx(3 * p / 2 + 2 * p / 2)
    result_bits = 1 + 8  # hit + ⌈log2(192 rows)⌉
    assert tcam.search_parts_pj()["merge"] == pytest.approx(
        2 * MERGE_PJ + result_bits * (5 * p / 2) * WIRE_PJ_PER_BIT_MM)


def test_writes_one_row_at_a_time():
    tcam = model("fefet-tcam-128")
    assert tcam.write_seconds(10) == pytest.approx(10 * 10.2e-9)
    assert tcam.write_joules(10) == pytest.approx(10 * 6.3e-12)
    big = model("fefet-tcam-64", arrays=16_384)  # each row's data goes down one path
    path = 127 * PITCH_64_MM
    assert big.write_seconds(1) == pytest.approx((10.2 + path * WIRE_NS_PER_MM) * 1e-9)
    assert big.write_joules(1) == pytest.approx((1.68 + 64 * path * WIRE_PJ_PER_BIT_MM) * 1e-12)


@pytest.mark.parametrize(("name", "sub_ps", "icnt_ps", "sub_pj", "icnt_pj", "write_pj"), [
    ("camasim-fefet-64", 2600, 175, 1.28, 0.225, 23.5),
    ("camasim-fefet-128", 4200, 277, 2.56, 0.367, 47.0),
])
def test_camasim_books_its_table_peripherals_and_interconnect(name, sub_ps, icnt_ps, sub_pj,
                                                              icnt_pj, write_pj):
    """CAMASim/performance/cost_config.json (TCAM_64, TCAM_128): subarray, interconnect,
    peripheral 1,466.67 ps / 1.60 pJ, write 20 ns; interconnect on every array access."""
    tcam = model(name)
    assert tcam.sample_seconds(1, 0, 0) == pytest.approx(
        (sub_ps + icnt_ps + 1466.7) * 1e-12, rel=1e-4)
    assert tcam.search_joules(1) == pytest.approx((sub_pj + icnt_pj + 1.6) * 1e-12)
    assert tcam.write_seconds(3) == pytest.approx(3 * (20_000 + icnt_ps) * 1e-12)
    assert tcam.write_joules(3) == pytest.approx(3 * (write_pj + icnt_pj) * 1e-12)


def test_larger_arrays_cost_less_per_bit_but_search_slower():
    specs = [load_part("tcam", f"fefet-tcam-{n}") for n in (64, 128, 256)]
    per_bit = [s.search_pj / (s.rows * s.bits_per_row) for s in specs]
    assert per_bit == sorted(per_bit, reverse=True)
    assert [s.search_ns for s in specs] == sorted(s.search_ns for s in specs)
    assert per_bit[0] == pytest.approx(0.57e-3, rel=0.01)  # 0.57 fJ/bit


def test_sample_is_device_work_then_the_host_gather():
    tcam = model("fefet-tcam-64")  # one array: searches cost the array alone
    j = job(host_gather_s=2e-6, searches_per_item=1.5)
    t = tcam.replay_seconds(j, "sample", 3)
    assert isinstance(t, PartTime)
    items = 3 * 64
    # 1.5 searches, one read of the drawn entry, two random numbers (target, pick) per item
    device = items * (1.5 * 0.38 + 1 * READ_NS + 2 * RNG_NS) * 1e-9
    assert t.device_s == pytest.approx(device)
    assert t.host_s == pytest.approx(3 * 2e-6)
    assert t.wall_s == pytest.approx(device + 6e-6)
    assert tcam.replay_seconds(j, "sample", 0) == PartTime(0.0, 0.0, 0.0)


def test_sample_reads_the_candidates_a_job_reports():
    """A job's candidates_per_item (AMPER's candidate-set entries) adds one read each; with
    none, one read per item (the drawn entry)."""
    tcam = model("fefet-tcam-64", arrays=64)
    base = job()
    # 64 arrays: 6 levels, a path of p/2 · 2 · (1 + 2 + 4) = 7p down and up; per item one
    # search, one read of the drawn entry, two random numbers
    search_ns = 2 * 7 * PITCH_64_MM * WIRE_NS_PER_MM + 0.38 + 6 * MERGE_NS
    assert tcam.replay_seconds(base, "sample", 1).device_s == pytest.approx(
        64 * (search_ns + READ_NS + 2 * RNG_NS) * 1e-9)
    with_csp = dataclasses.replace(base, candidates_per_item=4.0)
    d0 = tcam.replay_seconds(base, "sample", 1).device_s
    d4 = tcam.replay_seconds(with_csp, "sample", 1).device_s
    assert d4 - d0 == pytest.approx(64 * 4 * READ_NS * 1e-9)


def test_updates_and_inserts_are_device_writes():
    tcam = model("fefet-tcam-128")
    j = job(writes_per_update_item=2.0, host_gather_s=1e-3)
    up = tcam.replay_seconds(j, "update", 2)
    assert up.host_s == 0.0 and up.device_s == up.wall_s == pytest.approx(2 * 64 * 2 * 10.2e-9)
    ins = tcam.replay_seconds(j, "insert", 10)
    assert ins == PartTime(0.0, ins.device_s, ins.device_s)
    assert ins.device_s == pytest.approx(10 * 10.2e-9)
    with pytest.raises(ValueError, match="replay op"):
        tcam.replay_seconds(j, "gather", 1)


def test_replay_joules_by_label():
    tcam = model("fefet-tcam-64", arrays=16_384)
    j = job(searches_per_item=1.0)
    e = tcam.replay_joules(j, "sample", 2)
    assert set(e) == {"search", "htree", "merge", "rng", "candidate_read"}
    items = 2 * 64
    tree = 24_384 * PITCH_64_MM  # 16,384 arrays' H-tree (test_16384_arrays_…)
    assert e["search"] == pytest.approx(items * 16_384 * 2.34e-12)
    assert e["htree"] == pytest.approx(items * 64 * tree * WIRE_PJ_PER_BIT_MM * 1e-12)
    assert e["merge"] == pytest.approx(
        items * (16_383 * MERGE_PJ + 21 * tree * WIRE_PJ_PER_BIT_MM) * 1e-12)
    assert e["rng"] == pytest.approx(2 * items * RNG_PJ * 1e-12)
    assert e["candidate_read"] == pytest.approx(items * READ_PJ * 1e-12)
    w = tcam.replay_joules(j, "update", 1)
    assert set(w) == {"write", "htree"}
    assert w["write"] == pytest.approx(64 * 1.68e-12)
    assert w["htree"] == pytest.approx(
        64 * 64 * 127 * PITCH_64_MM * WIRE_PJ_PER_BIT_MM * 1e-12)
    assert set(tcam.replay_joules(j, "insert", 5)) == {"write", "htree"}


def test_capacity_check_unchanged():
    tcam = model("fefet-tcam-64", arrays=64)
    assert tcam.replay_checks(job(capacity=4096)) == {"tcam_capacity": True}
    assert tcam.replay_checks(job(capacity=4097)) == {"tcam_capacity": False}


def test_energy_actions_plus_leakage():
    tcam = model("fefet-tcam-64", arrays=256)
    assert tcam.idle_w == tcam.max_w == pytest.approx(256 * 0.42e-3)
    e = tcam.energy(n_searches=1000, rows_written=100, wall_s=1e-3)
    # 256 arrays (test_256_arrays_…): a path of 15 pitches, a tree of 360; a search
    # broadcasts 64 bits over the tree, searches every array, merges 255 times and
    # returns 15 result bits; a write sends its 64 bits down one path
    path, tree = 15 * PITCH_64_MM, 360 * PITCH_64_MM
    search_pj = (64 * tree * WIRE_PJ_PER_BIT_MM + 256 * 2.34 + 255 * MERGE_PJ
                 + 15 * tree * WIRE_PJ_PER_BIT_MM)
    write_pj = 1.68 + 64 * path * WIRE_PJ_PER_BIT_MM
    expected = (1000 * search_pj + 100 * write_pj) * 1e-12 + 256 * 0.42e-3 * 1e-3
    assert float(e.joules) == pytest.approx(expected)
    assert float(tcam.search_joules(1)) > 256 * 2.34e-12  # broadcast and merge on top
    assert "per action" in e.method and "Eva-CAM" in e.claimed_accuracy


def test_price_scales_with_arrays():
    assert load_part("tcam", "fefet-tcam-64", arrays=1000).price_usd == pytest.approx(50.0)
