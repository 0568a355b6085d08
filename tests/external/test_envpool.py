"""Data set "envpool": the shipped table and capture load, rows have the common form, and
a prediction is the CPU model's arithmetic on the capture (no wall-clock thresholds)."""

import math

import pytest

from rldse.external import ROW_COLUMNS, datasets, predictions
from rldse.external import envpool as ep


def test_published_table_loads():
    t = ep.published()
    assert set(t["machine"]) == {"Laptop", "DGX-A100"}
    assert set(t["executor"]) == {"For-loop", "Subprocess"}
    assert len(t) == 8 + 8 + 13 + 13
    laptop = t[(t["machine"] == "Laptop") & (t["executor"] == "For-loop")]
    assert laptop.set_index("workers").loc[1, "frames_per_s"] == pytest.approx(4745.54)


def test_capture_has_what_the_model_reads():
    cap = ep.capture()
    assert cap["loop"]["obs_bytes"] == 4 * 84 * 84
    assert 0 < cap["loop"]["emulator_share"] < 1
    assert cap["loop"]["cpu_s_per_step"] > 0 and cap["pipe"]["send_fixed_s"] > 0
    assert cap["fingerprint"]["copy_gbs"] > 0


def test_rows_form():
    rows = predictions(["envpool"])
    assert list(rows.columns) == [*ROW_COLUMNS, "error"]
    assert set(rows["regime"]) == {"for-loop", "subprocess"}
    assert (rows["unit"] == "frames/s").all()
    assert rows["predicted"].gt(0).all() and rows["error"].notna().all()
    assert "envpool" in datasets()


def test_for_loop_prediction_by_hand():
    model = ep.host_model("i7-8750h")
    step_s = ep.capture()["loop"]["cpu_s_per_step"]
    host_mhz = ep.capture()["clock_mhz"]
    want = 4 / (step_s * host_mhz / (4100 * 0.78))  # one core busy: 4.1 GHz turbo, Skylake core
    assert ep.predict_frames_per_s(model, "For-loop", 6) == pytest.approx(want)


def test_subprocess_prediction_is_the_batch_model():
    model = ep.host_model("epyc-7742", sockets=2)
    step_s, rt_s, pw_s = ep.step_costs()
    batch = model.subprocess_batch_seconds(step_s, 16, rt_s, pw_s)
    assert ep.predict_frames_per_s(model, "Subprocess", 16) == pytest.approx(4 * 16 / batch)
    assert math.isclose(pw_s, ep.capture()["pipe"]["send_fixed_s"]
                        + 2 * 28224 / (ep.capture()["fingerprint"]["copy_gbs"] * 1e9))
