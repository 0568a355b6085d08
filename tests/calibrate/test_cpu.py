"""`rldse calibrate cpu`: this host as a cpu preset that simulate loads with --presets."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rldse.calibrate.cpu import calibrate_cpu
from rldse.cli import main

ROOT = Path(__file__).resolve().parents[2]
DQN = str(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
DGX = str(ROOT / "examples" / "dgx1_like.yaml")


def test_calibrate_cpu_then_simulate_with_it(tmp_path, capsys):
    out = tmp_path / "presets"
    assert main(["calibrate", "cpu", "--name", "h", "-o", str(out), "--quick"]) == 0
    text = capsys.readouterr().out
    assert "copy bandwidth" in text and "GEMM rate" in text and f"wrote {out / 'h.yaml'}" in text
    doc = yaml.safe_load((out / "h.yaml").read_text())
    assert doc["kind"] == "cpu" and doc["provenance"]["method"] == "measured"
    assert doc["presets"]["h"]["clock_mhz"]["source"].startswith("measured: rldse calibrate cpu, ")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [out / "h.yaml"]  # no temp left
    argv = ["simulate", DQN, "--system", DGX, "--presets", str(out), "--set", "cpu.preset=h",
            "--set", "workload.env_steps=2000", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    cpu = next(d for d in result["devices"] if d["kind"] == "cpu")
    assert cpu["preset"] == "h" and result["env_steps"] == 2000


def test_measured_fields_carry_provenance_assumptions_keep_ranges(tmp_path, host_fp):
    cal = calibrate_cpu("h2", tmp_path, quick=True, fingerprint=host_fp)
    entry = cal.document["presets"]["h2"]
    assert "Test CPU" in entry["cores"]["source"] and "method measured" in entry["cores"]["source"]
    ranged = [f for f, p in entry.items() if isinstance(p, dict) and "range" in p]
    assert ranged, "the host's power and price assumptions keep their ranges"
    for f in ranged:
        assert not entry[f]["source"].startswith("measured")


def test_name_taken_by_a_packaged_preset_is_refused(tmp_path, capsys):
    code = main(["calibrate", "cpu", "--name", "epyc-7742", "-o", str(tmp_path), "--quick"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "already a cpu preset" in err
    assert not list(tmp_path.iterdir())


def test_curves_time_each_size_asked_for():
    """The curves are timed by the fingerprint's own copy and matmul timings
    (rldse.host.copy_gbs, matmul_gflops), one point per size."""
    from rldse.calibrate.cpu import copy_curve, gemm_curve

    copies = copy_curve((4 << 10, 64 << 10), quick=False)
    gemms = gemm_curve((8, 16), quick=False)
    assert [n for n, _ in copies] == [4 << 10, 64 << 10]
    assert [f for f, _ in gemms] == [2.0 * 8**3, 2.0 * 16**3]
    assert all(rate > 0 for _, rate in copies + gemms)
