"""Data set "swiftrl": one prediction, no published measurement, its basis by hand."""

import math

import pytest

from rldse.external import ROW_COLUMNS, predictions, swiftrl
from rldse.external.envpool import host_model
from rldse.studies.ckernel import stored


def test_row_form_and_no_published_measurement():
    rows = predictions(["swiftrl"])
    assert list(rows.columns) == [*ROW_COLUMNS, "error"]
    assert len(rows) == 1 and math.isnan(rows["measured"].iloc[0])
    assert rows["device"].iloc[0] == "xeon-silver-4110" and rows["unit"].iloc[0] == "s"


def test_prediction_by_hand():
    ns = stored(swiftrl.KEY).best_ns
    mhz = host_model("xeon-silver-4110").capture_host.clock_mhz
    want = 1e8 * ns * 1e-9 * mhz / (3000 * 0.78)  # one core at the 3.0 GHz turbo, Skylake core
    assert swiftrl.rows()["predicted"].iloc[0] == pytest.approx(want)
