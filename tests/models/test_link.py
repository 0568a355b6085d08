"""Links: latency + bytes / bandwidth with the published bandwidths (PCI-SIG, NVIDIA, JEDEC)."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.models import LinkModel, load_part, make_model


@pytest.mark.parametrize(("name", "gbs"), [
    ("pcie3-x16", 15.7), ("pcie4-x16", 31.5), ("pcie5-x16", 63.0),
    ("nvlink-a100", 600 / 2), ("nvlink-h100", 900 / 2),
    ("ddr4-2400-channel", 2400e6 * 8 / 1e9), ("ddr4-3200-channel", 3200e6 * 8 / 1e9),
    ("upmem-rank", 6.68),
])
def test_published_bandwidths(name, gbs):
    assert load_part("link", name).bandwidth_gbs == pytest.approx(gbs)


def test_transfer_is_latency_plus_bytes_over_bandwidth():
    link = make_model(load_part("link", "pcie4-x16"))
    assert isinstance(link, LinkModel)
    np.testing.assert_allclose(link.transfer_seconds([0, 1e9]), [1e-6, 1e-6 + 1 / 31.5])


def test_negative_bandwidth_names_field_and_range():
    with pytest.raises(RldseError) as err:
        load_part("link", "pcie4-x16", bandwidth_gbs=-1)
    assert str(err.value) == ("link.bandwidth_gbs: -1 is out of range "
                              "(allowed: 0.001 ≤ bandwidth_gbs ≤ 100000)")
