"""Energy estimators (Fan et al. ISCA 2007; Accelergy) and the power view every model exposes."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.models import load_part, make_model
from rldse.models.power import (
    action_joules,
    dram_joules,
    utilisation_joules,
    utilisation_power_w,
)


def test_utilisation_power_is_linear_between_idle_and_max():
    np.testing.assert_allclose(utilisation_power_w(50, 400, [0, 0.5, 1, 2]),
                               [50, 225, 400, 400])


def test_utilisation_energy_integrates_busy_time():
    assert utilisation_joules(50, 400, busy_s=2, wall_s=10) == pytest.approx(50 * 10 + 350 * 2)
    # busy time beyond the wall time is capped: at most full power all along
    assert utilisation_joules(50, 400, busy_s=20, wall_s=10) == pytest.approx(4000)


def test_energy_per_action():
    assert action_joules(1e6, 2.34) == pytest.approx(2.34e-6)
    # HBM2 at 3.9 pJ/bit (Accelergy's CACTI table): one byte is 8 bits
    assert dram_joules(1, 3.9) == pytest.approx(31.2e-12)


@pytest.mark.parametrize(("kind", "name"), [
    ("cpu", "xeon-gold-6326"), ("gpu", "h100-sxm"), ("pim", "upmem-p21"),
    ("tcam", "rram-tcam-64"),
])
def test_every_model_states_method_and_accuracy(kind, name, host_fp):
    model = make_model(load_part(kind, name), capture_host=host_fp)
    assert model.method and model.claimed_accuracy
    assert model.lanes >= 1 and 0 <= model.idle_w <= model.max_w
