"""Plausible ranges of part-spec numbers (unit slips refused with the likely slip), the SKU
limit and its override, and CPU presets written from a datasheet's TDP and list price."""

from __future__ import annotations

import pytest
import yaml

from rldse.cli import main
from rldse.errors import RldseError
from rldse.models import get_preset, load_part, presets
from rldse.models.cpu.host_preset import datasheet_split
from rldse.models.kinds import PART_KINDS
from rldse.models.presets import _preset_kinds, _presets_of, cpu_from_host
from rldse.models.spec import Param, implausible_message, plausible_range

TRACE = "traces/dqn_cartpole_uniform.parquet"


# ---- the must-show: three slips, one line each, exit 2 ---------------------------------

@pytest.mark.parametrize(("system", "field", "meant"), [
    ("{cpu: {preset: epyc-7742, clock_mhz: 3.4}}", "system.cpu.clock_mhz",
     "did you mean 3400 (3.4 GHz)?"),
    ("{cpu: {preset: epyc-7742, cores: 128}}", "system.cpu.cores",
     "did you mean sockets: 2 (2 × 64 cores)?"),
])
def test_a_unit_slip_in_a_system_file_is_one_line_naming_field_and_slip(
        tmp_path, capsys, system, field, meant):
    path = tmp_path / "s.yaml"
    path.write_text(system + "\n")
    assert main(["simulate", TRACE, "--system", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{field}: " in err and meant in err, err


def test_a_unit_slip_in_set_is_one_line_naming_field_and_slip(capsys):
    assert main(["simulate", TRACE, "--system", "examples/dgx1_like.yaml",
                 "--set", "gpu.mem_bw_gbs=0.9"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "gpu.mem_bw_gbs: 0.9 GB/s" in err
    assert "did you mean 900 (0.9 TB/s)?" in err


# ---- plausible ranges --------------------------------------------------------------------

def _numbers(kind: str):
    model = PART_KINDS[kind].spec
    for preset in _presets_of(kind).values():
        for field, p in preset.params.items():
            bounds = plausible_range(model, field)
            if bounds is not None and isinstance(p.value, int | float) and p.value != 0:
                yield preset.name, field, p, bounds


@pytest.mark.parametrize("kind", _preset_kinds())
def test_every_shipped_number_and_sweep_range_is_plausible(kind):
    """--bands draws inside each number's range: the range must lie inside the field's
    plausible range, or a band would be refused as a slip."""
    checked = 0
    for name, field, p, (lo, hi) in _numbers(kind):
        assert lo <= p.value <= hi, (name, field, p.value)
        if p.range is not None:
            assert lo <= p.range[0] and p.range[1] <= hi, (name, field, p.range)
        checked += 1
    assert checked > 0


def test_the_host_preset_and_its_ranges_are_plausible(host_fp):
    preset = get_preset("cpu", "host", host=host_fp)
    model = PART_KINDS["cpu"].spec
    swept = 0
    for field, p in preset.params.items():
        bounds = plausible_range(model, field)
        if bounds is not None and p.range is not None:
            assert bounds[0] <= p.range[0] and p.range[1] <= bounds[1], (field, p.range)
            swept += 1
    assert swept >= 5  # power, price and memory are assumed for a fingerprint
    assert cpu_from_host(host_fp).cores == host_fp.cores


@pytest.mark.parametrize(("value", "unit", "lo", "hi", "meant"), [
    (3.4, "MHz", 300, 7000, "3400 (3.4 GHz)"),
    (204800, "GB/s", 2, 5000, "204.8 (204800 MB/s)"),
    (5, "s", 1e-7, 1e-3, "5e-06 (5 µs)"),
    (80, "B", 2**28, 2**41, f"{80 * 2**30} (80 GiB)"),
    (0.7, "W", 5, 5000, "700 (0.7 kW)"),
])
def test_the_hint_names_the_unit_that_would_make_the_value_plausible(value, unit, lo, hi,
                                                                     meant):
    assert implausible_message(value, unit, lo, hi).endswith(f"did you mean {meant}?")


def test_no_slip_explains_it_the_message_names_the_override():
    msg = implausible_message(123456.0, "count", 1, 64)
    assert "did you mean" not in msg and "hypothetical: true" in msg


def test_zero_passes_where_the_bounds_allow_it_and_hypothetical_accepts_anything():
    assert load_part("gpu", "t4", idle_w=0).idle_w == 0  # ge=0: zero means none
    with pytest.raises(RldseError, match=r"^gpu\.mem_bw_gbs: 0\.9 GB/s is not plausible"):
        load_part("gpu", "t4", mem_bw_gbs=0.9)
    assert load_part("gpu", "t4", mem_bw_gbs=0.9, hypothetical=True).mem_bw_gbs == 0.9


# ---- the SKU limit -----------------------------------------------------------------------

def test_fewer_cores_are_a_smaller_sku_more_need_hypothetical():
    assert load_part("cpu", "epyc-7742", cores=32).cores == 32
    with pytest.raises(RldseError, match=r"^cpu\.cores: 65 exceeds the 64 cores"):
        load_part("cpu", "epyc-7742", cores=65)
    assert load_part("cpu", "epyc-7742", cores=128, hypothetical=True).cores == 128
    with pytest.raises(RldseError, match="128 is its hardware threads"):
        load_part("cpu", "epyc-7742", cores=128)


def test_the_host_names_no_sku(host_fp):
    assert cpu_from_host(host_fp, cores=8).cores == 8


# ---- CPU presets from a datasheet ---------------------------------------------------------

@pytest.mark.parametrize(("name", "cores", "tdp_w", "price_usd"), [
    ("xeon-silver-4110", 8, 85, 501), ("epyc-7742", 64, 225, 6950),
    ("xeon-e5-2698-v4", 20, 135, 3226),
])
def test_the_datasheet_split_gives_the_numbers_the_older_presets_state(name, cores, tdp_w,
                                                                       price_usd):
    """The older presets wrote the five fields by hand from the same rule (their sources
    say TDP and price); the split must give their values and sweep ranges."""
    split = datasheet_split(cores, Param(tdp_w, "W", "t"), Param(price_usd, "USD", "t"))
    written = get_preset("cpu", name).params
    for field, p in split.items():
        assert p.value == pytest.approx(written[field].value, rel=2e-3), field
        assert p.range == pytest.approx(written[field].range, rel=2e-3), field


def test_a_datasheet_preset_draws_its_tdp_at_full_load_and_costs_its_list_price():
    spec = load_part("cpu", "epyc-9654")  # 360 W, 11,805 USD (cpu.yaml)
    assert spec.max_w == pytest.approx(360) and spec.idle_w == pytest.approx(180)
    assert spec.price_usd == pytest.approx(11805)


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(presets.PRESETS_ENV, raising=False)
    previous = presets.use_preset_dirs([tmp_path])
    yield tmp_path
    presets.use_preset_dirs(previous)


def _write(user_dir, kind, entries):
    (user_dir / f"{kind}.yaml").write_text(yaml.safe_dump({"kind": kind, "presets": entries}))


def test_a_user_cpu_from_tdp_and_price_over_a_base(user_dir):
    _write(user_dir, "cpu", {"my-rome": {"base": "epyc-7742", "cores": 32, "tdp_w": 180,
                                         "list_price_usd": 3000}})
    spec = load_part("cpu", "my-rome")
    assert spec.uncore_w == pytest.approx(0.3 * 180)
    assert spec.core_active_w == pytest.approx(0.7 * 180 / 32)
    assert spec.max_w == pytest.approx(180) and spec.price_usd == pytest.approx(3000)


def test_tdp_and_the_fields_it_splits_into_are_not_both_written(user_dir):
    _write(user_dir, "cpu", {"x": {"base": "epyc-7742", "tdp_w": 180, "uncore_w": 50}})
    with pytest.raises(RldseError, match="x: uncore_w: write tdp_w or the fields it splits"):
        load_part("cpu", "x")


def test_a_plain_number_keeps_the_bases_relative_range_unless_range_is_written(user_dir):
    base = get_preset("cpu", "xeon-silver-4110").params["clock_mhz"]  # 2100, [2100, 3000]
    _write(user_dir, "cpu", {
        "plain": {"base": "xeon-silver-4110", "clock_mhz": 2500},
        "own": {"base": "xeon-silver-4110", "clock_mhz": {"value": 2500, "range": [2400, 2600]}},
        "exact": {"base": "xeon-silver-4110", "clock_mhz": {"value": 2500, "range": None}}})
    rng = get_preset("cpu", "plain").params["clock_mhz"].range
    assert rng == pytest.approx((2500, 2500 * base.range[1] / base.value))
    assert get_preset("cpu", "own").params["clock_mhz"].range == (2400, 2600)
    assert get_preset("cpu", "exact").params["clock_mhz"].range is None


def test_a_derived_preset_does_not_inherit_the_bases_checked_claim(user_dir):
    assert "checked on" in get_preset("gpu", "t4").description
    _write(user_dir, "gpu", {"my-t4": {"base": "t4", "max_w": 60}})
    description = get_preset("gpu", "my-t4").description
    assert "checked on" not in description and "t4" in description
