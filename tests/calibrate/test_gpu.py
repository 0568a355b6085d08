"""`rldse calibrate gpu`: the whole code path on the CPU device (no GPU needed), and the
pieces that turn measurements into fields."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from rldse.calibrate import gpu
from rldse.cli import main
from rldse.models import presets
from rldse.models.gpu import GpuSpec

pytest.importorskip("torch")


def test_cpu_device_end_to_end_writes_a_preset_the_registry_loads(tmp_path, capsys):
    code = main(["calibrate", "gpu", "--device", "cpu", "--name", "g", "-o", str(tmp_path),
                 "--base", "v100-sxm2", "--quick"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "not a GPU" in out and "dispatch_s" in out
    doc = yaml.safe_load((tmp_path / "g.yaml").read_text())
    prov = doc["provenance"]
    assert prov["base"] == "v100-sxm2" and prov["method"] == "measured" and prov["torch"]
    entry = doc["presets"]["g"]
    assert entry["dispatch_s"]["source"].startswith("measured: rldse calibrate gpu, ")
    assert "driver none (cpu device)" in entry["dispatch_s"]["source"]
    assert entry["fp32_tflops"]["value"] == 15.7  # datasheet numbers from the base
    presets.use_preset_dirs([tmp_path])
    spec = presets.load_part("gpu", "g")
    assert spec.dispatch_s == entry["dispatch_s"]["value"] > 0
    assert spec.idle_w == 43  # no NVML on a CPU: the base's power numbers stay


def test_every_field_rule_names_a_spec_field_with_its_unit():
    from rldse.models.spec import unit_of

    for rule in gpu.FIELDS:
        if rule.field in GpuSpec.model_fields:
            assert unit_of(GpuSpec, rule.field) == rule.unit, rule.field


def test_copy_fit_recovers_fixed_cost_and_bandwidth():
    b = np.array([4, 1e3, 1e5, 1e6, 1e7, 6.4e7])
    t = 8e-6 + b / 12e9
    fixed, gbs = gpu.fit_fixed_bandwidth(b, t)
    assert fixed == pytest.approx(8e-6, rel=1e-6) and gbs == pytest.approx(12.0, rel=1e-6)


def test_unknown_device_needs_a_base(capsys, tmp_path):
    code = main(["calibrate", "gpu", "--device", "cpu", "--name", "g", "-o", str(tmp_path),
                 "--quick"])
    err = capsys.readouterr().err
    assert code == 2 and "--base: required" in err and err.count("\n") == 1


def test_default_base_from_device_names():
    assert gpu.default_base("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert gpu.default_base("NVIDIA H100 PCIe") == "h100-pcie"
    assert gpu.default_base("NVIDIA H200") == "h200-sxm"
    assert gpu.default_base("Tesla V100-SXM2-16GB") == "v100-sxm2"
    assert gpu.default_base("NVIDIA A100-PCIE-40GB") is None  # no PCIe A100 preset
    assert gpu.default_base("Tesla T4") is None
