"""Each ratio's CPU is provisioned on the host's part, on the fewest sockets."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.studies.cpu_gpu_ratio.machine import Host, provisioned


def test_provisioned_cores_fill_the_fewest_sockets():
    host = Host("xeon-e5-2698-v4", 20, 2)
    assert provisioned(1, host) == (1, 1) and provisioned(20, host) == (20, 1)
    assert provisioned(21, host) == (11, 2) and provisioned(40, host) == (20, 2)
    with pytest.raises(RldseError, match="41 cores exceed"):
        provisioned(41, host)
