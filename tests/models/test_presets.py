"""Presets: every one loads with sourced numbers; bad names and overrides fail in one line."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.models import (
    CpuModel,
    GpuModel,
    LinkModel,
    PimModel,
    TcamModel,
    get_preset,
    list_presets,
    load_part,
    make_model,
    show_preset,
)
from rldse.models.kinds import PART_KINDS
from rldse.models.presets import _param
from rldse.models.spec import unit_of

REQUIRED = {
    "cpu": {"xeon-silver-4110", "xeon-silver-4215", "xeon-gold-6326", "epyc-7402p",
            "epyc-7742", "host"},
    "gpu": {"v100-sxm2", "a100-40g", "a100-80g", "rtx-3090", "rtx-a6000", "h100-sxm",
            "h100-pcie"},
    "pim": {"upmem-p21", "upmem-e19"},
    "tcam": {"fefet-tcam-64", "fefet-tcam-128", "fefet-tcam-256", "camasim-fefet-64",
           "camasim-fefet-128", "rram-tcam-64", "sram-tcam-64"},
    "link": {"pcie3-x16", "pcie4-x16", "pcie5-x16", "nvlink-a100", "nvlink-h100",
             "ddr4-2400-channel", "ddr4-3200-channel", "upmem-rank"},
}


def all_presets():
    df = list_presets()
    return [(k, n) for k, n in zip(df["kind"], df["name"], strict=True) if n != "host"]


def test_list_has_every_required_preset_once():
    df = list_presets()
    assert list(df.columns) == ["kind", "name", "description", "price_usd", "file"]
    assert df["name"].is_unique
    for kind, names in REQUIRED.items():
        assert names <= set(df.loc[df["kind"] == kind, "name"])
    priced = df[df["kind"].isin(["cpu", "gpu", "pim", "tcam"]) & (df["name"] != "host")]
    assert (priced["price_usd"] > 0).all()


@pytest.mark.parametrize(("kind", "name"), all_presets())
def test_every_number_has_unit_source_and_a_range_when_uncertain(kind, name):
    preset = get_preset(kind, name)
    assert preset.description
    model = PART_KINDS[kind].spec
    assert set(preset.params) == set(model.model_fields) - {"name", "hypothetical"}  # a flag, not a number
    for field, p in preset.params.items():
        assert p.unit == unit_of(model, field) and p.source, field
        numeric = isinstance(p.value, int | float) and not isinstance(p.value, bool)
        if numeric and any(w in p.source for w in ("UNVERIFIED", "assumption")):
            assert p.range is not None, f"{name}.{field} is uncertain but has no range"
    for field, (lo, hi) in preset.ranges().items():
        assert lo <= preset.params[field].value <= hi
        load_part(kind, name, **{field: type(preset.params[field].value)(lo)})
        load_part(kind, name, **{field: type(preset.params[field].value)(hi)})


def test_show_prints_every_number_with_unit_and_source():
    text = show_preset("a100-40g")
    assert text.splitlines()[0].startswith("a100-40g (gpu):")
    for field, p in get_preset("gpu", "a100-40g").params.items():
        line = next(ln for ln in text.splitlines() if ln.startswith(field + " "))
        assert p.unit in line and p.source in line
    assert "35 – 70" in text  # the UNVERIFIED idle power's sweep range


def test_show_host_from_a_fingerprint(host_fp):
    text = show_preset("host", host=host_fp)
    assert "fingerprint: measured matmul 100 GFLOP/s" in text


def test_unknown_preset_lists_close_names():
    with pytest.raises(RldseError, match="did you mean 'a100-40g'"):
        load_part("gpu", "a100-40")
    with pytest.raises(RldseError, match="is a gpu preset, not a cpu preset"):
        load_part("cpu", "a100-40g")
    with pytest.raises(RldseError, match="unknown preset 'h100'; did you mean"):
        show_preset("h100")
    with pytest.raises(RldseError, match="unknown part kind 'tpu'"):
        load_part("tpu", "v4")


def test_unknown_field_names_the_path_and_allowed_fields():
    with pytest.raises(RldseError) as err:
        load_part("gpu", "a100-40g", mem_bw_gb=1000)
    msg = str(err.value)
    assert msg.startswith("gpu.mem_bw_gb: unknown field; did you mean 'mem_bw_gbs'?")
    assert "allowed: fp32_tflops," in msg and "\n" not in msg
    with pytest.raises(RldseError, match=r"^system\.gpu\.flux: unknown field"):
        load_part("gpu", "a100-40g", where="system.gpu", flux=1)


@pytest.mark.parametrize(("kind", "name", "override", "message"), [
    ("link", "pcie3-x16", {"bandwidth_gbs": -5.0},
     "link.bandwidth_gbs: -5.0 is out of range (allowed: 0.001 ≤ bandwidth_gbs ≤ 100000)"),
    ("pim", "upmem-p21", {"dpus_per_rank": 0},
     "pim.dpus_per_rank: 0 is out of range (allowed: 1 ≤ dpus_per_rank ≤ 64)"),
    ("pim", "upmem-p21", {"dimms": 0}, "pim.dimms: 0 is out of range (allowed: 1 ≤ dimms ≤ 256)"),
    ("pim", "upmem-p21", {"tasklets": 25},
     "pim.tasklets: 25 is out of range (allowed: 1 ≤ tasklets ≤ 24)"),
    ("cpu", "epyc-7742", {"core_idle_w": 3.0},
     "cpu.core_idle_w: core_idle_w must not exceed core_active_w (2.46094 W) (got 3.0)"),
    ("gpu", "h100-sxm", {"mem_bw_gbs": float("nan")},
     "gpu.mem_bw_gbs: nan is not a finite number (allowed: 0.001 ≤ mem_bw_gbs ≤ 100000)"),
    ("gpu", "h100-sxm", {"kernels_per_layer": {"learn": -1}},
     "gpu.kernels_per_layer.learn: -1 is out of range (allowed: 0 ≤ learn)"),
])
def test_bad_specs_fail_in_one_line(kind, name, override, message):
    with pytest.raises(RldseError) as err:
        load_part(kind, name, **override)
    assert str(err.value) == message


def test_dict_overrides_merge_into_the_preset():
    spec = load_part("gpu", "a100-40g", kernels_per_layer={"learn": 4})
    assert spec.kernels_per_layer["learn"] == 4 and spec.kernels_per_layer["act"] == 2


def test_preset_units_must_match_the_field():
    with pytest.raises(RldseError, match="unit 'MB/s' differs from the field's unit 'GB/s'"):
        _param(PART_KINDS["gpu"].spec, "mem_bw_gbs", {"value": 1, "unit": "MB/s", "source": "x"}, "t")
    with pytest.raises(RldseError, match="outside its range"):
        _param(PART_KINDS["gpu"].spec, "mem_bw_gbs",
               {"value": 1, "unit": "GB/s", "source": "x", "range": [2, 3]}, "t")


def test_make_model_builds_each_kind(host_fp):
    assert isinstance(make_model(load_part("cpu", "epyc-7402p"), capture_host=host_fp), CpuModel)
    assert isinstance(make_model(load_part("gpu", "rtx-3090")), GpuModel)
    assert isinstance(make_model(load_part("pim", "upmem-e19")), PimModel)
    assert isinstance(make_model(load_part("tcam", "sram-tcam-64")), TcamModel)
    assert isinstance(make_model(load_part("link", "ddr4-3200-channel")), LinkModel)


def test_prices_total_the_counted_units():
    assert load_part("cpu", "xeon-silver-4215").price_usd == pytest.approx(2 * 794)
    assert load_part("pim", "upmem-p21", dimms=4).price_usd == pytest.approx(4 * 500)
    assert load_part("gpu", "rtx-3090").price_usd == 1499


# ---- user preset directories ------------------------------------------------------------

import yaml  # noqa: E402

from rldse.models import presets  # noqa: E402

USER_GPU = {"kind": "gpu", "provenance": {"method": "measured"}, "presets": {"my-gpu": {
    "description": "a V100 with a faster host dispatch",
    **{f: {"value": p.value, "unit": p.unit, "source": p.source}
       for f, p in get_preset("gpu", "v100-sxm2").params.items()},
    "host_link": {"value": "my-link", "unit": "", "source": "the link in the other file"},
}}}
USER_LINK = {"kind": "link", "presets": {"my-link": {
    "description": "test link", "bandwidth_gbs": {"value": 20, "unit": "GB/s", "source": "t"}}}}


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """A user preset directory holding a gpu file and a link file it names."""
    monkeypatch.delenv(presets.PRESETS_ENV, raising=False)
    (tmp_path / "my-gpu.yaml").write_text(yaml.safe_dump(USER_GPU))
    (tmp_path / "links.yaml").write_text(yaml.safe_dump(USER_LINK))
    previous = presets.use_preset_dirs([])
    yield tmp_path
    presets.use_preset_dirs(previous)


def test_user_presets_add_to_the_packaged_ones(user_dir):
    assert "my-gpu" not in list_presets()["name"].tolist()
    presets.use_preset_dirs([user_dir])
    assert presets.preset_dirs() == (user_dir,)
    df = list_presets()
    row = df[df["name"] == "my-gpu"].iloc[0]
    assert row["kind"] == "gpu" and row["file"] == str(user_dir / "my-gpu.yaml")
    assert "v100-sxm2" in df["name"].tolist()
    spec = load_part("gpu", "my-gpu")
    assert spec.host_link == "my-link" and make_model(spec).link.bandwidth_gbs == 20
    assert f"from {user_dir / 'my-gpu.yaml'}" in show_preset("my-gpu")
    assert get_preset("gpu", "my-gpu").provenance == {"method": "measured"}
    presets.use_preset_dirs([])
    with pytest.raises(RldseError, match="unknown gpu preset 'my-gpu'"):
        load_part("gpu", "my-gpu")


def test_presets_env_variable(user_dir, monkeypatch):
    monkeypatch.setenv(presets.PRESETS_ENV, f"{user_dir}{__import__('os').pathsep}")
    assert presets.preset_dirs() == (user_dir,)
    assert load_part("link", "my-link").bandwidth_gbs == 20


def test_edits_to_a_user_file_are_seen(user_dir):
    presets.use_preset_dirs([user_dir])
    assert load_part("link", "my-link").bandwidth_gbs == 20
    changed = {**USER_LINK, "presets": {"my-link": {
        **USER_LINK["presets"]["my-link"], "bandwidth_gbs": {"value": 21.5, "unit": "GB/s",
                                                             "source": "t, with a longer note"}}}}
    (user_dir / "links.yaml").write_text(yaml.safe_dump(changed))
    assert load_part("link", "my-link").bandwidth_gbs == 21.5


def _one_line_error(match: str):
    return pytest.raises(RldseError, match=match)


@pytest.mark.parametrize(("doc", "message"), [
    ({"kind": "gpux", "presets": {}}, r"x\.yaml: kind: unknown part kind 'gpux'; did you mean 'gpu'"),
    ({"presets": {"a": {}}}, r"x\.yaml: kind: required \(one of: cpu,"),
    ({"kind": "link", "presets": {"a": {"bandwidth": {"value": 1, "unit": "GB/s", "source": "s"}}}},
     r"x\.yaml: a\.bandwidth: unknown field; did you mean 'bandwidth_gbs'"),
    ({"kind": "link", "presets": {"a": {"bandwidth_gbs": {"value": 1, "unit": "MB/s",
                                                          "source": "s"}}}},
     r"x\.yaml: a\.bandwidth_gbs: unit 'MB/s' differs"),
    ({"kind": "link", "presets": {"a": {"bandwidth_gbs": 5}}},
     r"x\.yaml: a\.bandwidth_gbs: expected \{value, unit, source, range\?\}"),
    ({"kind": "link", "presets": {"a": {}}}, r"x\.yaml: a\.bandwidth_gbs: required field"),
    ({"kind": "link", "presets": []}, r"x\.yaml: presets: expected a mapping"),
    ({"kind": "link", "preset": {}}, r"x\.yaml: preset: unknown key; did you mean 'presets'"),
])
def test_bad_user_files_fail_in_one_line_naming_file_and_field(tmp_path, doc, message):
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(doc))
    previous = presets.use_preset_dirs([tmp_path])
    try:
        with pytest.raises(RldseError, match=message) as err:
            list_presets()
        assert "\n" not in str(err.value) and str(tmp_path / "x.yaml") in str(err.value)
    finally:
        presets.use_preset_dirs(previous)


def test_a_clash_with_a_packaged_preset_names_both_files(user_dir):
    (user_dir / "clash.yaml").write_text(yaml.safe_dump({"kind": "link", "presets": {
        "pcie4-x16": USER_LINK["presets"]["my-link"]}}))
    presets.use_preset_dirs([user_dir])
    with pytest.raises(RldseError) as err:
        load_part("link", "pcie4-x16")
    msg = str(err.value)
    assert "\n" not in msg and str(user_dir / "clash.yaml") in msg
    assert msg.endswith("presets never override each other)") and "presets/link.yaml" in msg


def test_a_clash_between_two_user_files_names_both(user_dir, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    (other / "again.yaml").write_text(yaml.safe_dump(USER_LINK))
    presets.use_preset_dirs([user_dir, other])
    with pytest.raises(RldseError, match="preset 'my-link' is already defined in") as err:
        list_presets()
    assert str(user_dir / "links.yaml") in str(err.value)
    assert str(other / "again.yaml") in str(err.value)


def test_a_missing_directory_is_one_line(tmp_path):
    previous = presets.use_preset_dirs([tmp_path / "nope"])
    try:
        with pytest.raises(RldseError, match="nope: no such directory"):
            list_presets()
    finally:
        presets.use_preset_dirs(previous)


def test_digest_depends_on_numbers_not_on_sources(user_dir):
    from rldse.system import parse_spec, resolve
    from rldse.trace import load_trace

    trace = load_trace(str(__import__("pathlib").Path(__file__).resolve().parents[2]
                           / "traces" / "dqn_cartpole_uniform.parquet"))
    presets.use_preset_dirs([user_dir])
    spec = parse_spec({"cpu": {"preset": "xeon-silver-4215"},
                       "gpu": {"preset": "my-gpu"}, "placement": {"learn": "gpu"}})
    before = resolve(spec, trace).digest
    doc = yaml.safe_load((user_dir / "my-gpu.yaml").read_text())
    doc["presets"]["my-gpu"]["max_w"]["source"] = "a reworded source"
    (user_dir / "my-gpu.yaml").write_text(yaml.safe_dump(doc))
    assert resolve(spec, trace).digest == before
    doc["presets"]["my-gpu"]["max_w"]["value"] = 301
    (user_dir / "my-gpu.yaml").write_text(yaml.safe_dump(doc))
    assert resolve(spec, trace).digest != before


# ---- presets a user writes: inheritance, plain numbers, every problem at once ------------

MY_H100 = {"kind": "gpu", "presets": {"my-h100": {"base": "h100-sxm", "mem_bw_gbs": 4000,
                                                  "max_w": 600}}}


def test_a_base_and_plain_numbers_make_a_preset(user_dir):
    (user_dir / "mine.yaml").write_text(yaml.safe_dump(MY_H100))
    presets.use_preset_dirs([user_dir])
    spec, base = load_part("gpu", "my-h100"), load_part("gpu", "h100-sxm")
    assert spec.mem_bw_gbs == 4000 and spec.max_w == 600
    assert {k: v for k, v in spec.model_dump().items() if k not in ("name", "mem_bw_gbs",
                                                                     "max_w")} \
        == {k: v for k, v in base.model_dump().items() if k not in ("name", "mem_bw_gbs",
                                                                    "max_w")}
    preset = get_preset("gpu", "my-h100")
    assert preset.params["mem_bw_gbs"].unit == "GB/s"
    assert preset.params["mem_bw_gbs"].range is None  # the user's number, not an assumption
    lines = show_preset("my-h100").splitlines()
    assert lines[2].split() == ["field", "value", "unit", "sweep", "range", "from", "source"]
    row = {ln.split()[0]: ln for ln in lines[3:]}
    assert "this preset" in row["mem_bw_gbs"] and "base h100-sxm" in row["sm_count"]


def test_a_chain_of_bases_shows_the_first_preset_a_value_comes_from(user_dir):
    (user_dir / "mine.yaml").write_text(yaml.safe_dump({"kind": "gpu", "presets": {
        **MY_H100["presets"], "my-h100-cheap": {"base": "my-h100", "price_usd": 20000}}}))
    presets.use_preset_dirs([user_dir])
    assert load_part("gpu", "my-h100-cheap").mem_bw_gbs == 4000
    came = get_preset("gpu", "my-h100-cheap").inherited
    assert came["mem_bw_gbs"] == "base my-h100" and came["sm_count"] == "base h100-sxm"
    assert "price_usd" not in came


def test_every_problem_of_a_user_file_at_once(tmp_path):
    (tmp_path / "x.yaml").write_text(yaml.safe_dump({"kind": "gpu", "presets": {
        "a": {"base": "h100-sxm", "mem_bw_gbs": -5, "max_ww": 600},
        "b": {"base": "h100-sxmm"},
        "c": {"fp32_tflops": {"value": 10, "unit": "TFLOP/s", "source": "me"}}}}))
    previous = presets.use_preset_dirs([tmp_path])
    try:
        with pytest.raises(RldseError) as err:
            list_presets()
    finally:
        presets.use_preset_dirs(previous)
    text, where = str(err.value), str(tmp_path / "x.yaml")
    assert "\n" not in text
    for field in ("a.max_ww: unknown field", "b.base: unknown gpu preset 'h100-sxmm'",
                  "a.mem_bw_gbs: -5 is out of range", "c.mem_bw_gbs: required field is missing",
                  "c.price_usd: required field is missing"):
        assert f"{where}: {field}" in text, text
