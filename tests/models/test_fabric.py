"""Fabric and network presets: datasheet line rates per GPU and per NIC."""

import pytest

from rldse.models import load_part


@pytest.mark.parametrize("preset, gpu_gbs", [("nvlink2", 150), ("nvlink3", 300),
                                             ("nvlink4", 450), ("dgx1-v100", 150),
                                             ("dgx-a100", 300), ("dgx-h100", 450),
                                             ("hgx-h20", 450)])
def test_per_gpu_nvlink_is_half_the_datasheet_total(preset, gpu_gbs):
    assert load_part("fabric", preset).gpu_gbs == gpu_gbs


def test_only_third_generation_switches_reduce():
    assert load_part("fabric", "nvswitch3").nvls and not load_part("fabric", "nvswitch2").nvls


@pytest.mark.parametrize("preset, gbps", [("ib-hdr", 200), ("ib-ndr", 400), ("roce-100", 100),
                                          ("roce-200", 200), ("roce-400", 400), ("eth-25", 25),
                                          ("eth-100", 100)])
def test_nic_line_rates(preset, gbps):
    nic = load_part("network", preset)
    assert nic.line_rate_gbps == gbps and nic.nic_gbs == pytest.approx(gbps / 8 * nic.efficiency)
