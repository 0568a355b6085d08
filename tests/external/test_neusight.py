"""The NeuSight data set: loading, regimes, the error arithmetic, leave-one-GPU-out."""

import numpy as np
import pandas as pd

from rldse.external import SUBSET, neusight, relative_error, summary
from rldse.models.gpu_ops import call_s


def test_measurements_load_every_device_and_regime():
    d = neusight.measurements()
    assert set(d["device"]) == set(neusight.PRESETS)
    assert set(d["regime"]) == {neusight.BIG_GEMM, neusight.OTHER_GEMM, neusight.BIG_EW,
                                neusight.SMALL}
    lin = d[(d["op"] == "linear")].iloc[0]  # input (B·M)×N through N→K: m = B·M, k = N
    assert (lin["m"], lin["n"], lin["k"]) == (lin["B"] * lin["M"], lin["K"], lin["N"])
    assert (d["measured_s"] > 0).all()


def test_alignment_subsets_split_the_large_gemms_by_k_and_n():
    d = neusight.measurements()
    big = d[d["regime"] == neusight.BIG_GEMM]
    assert set(big[SUBSET]) == {neusight.ALIGNED, neusight.UNALIGNED}
    assert (d.loc[d["regime"] != neusight.BIG_GEMM, SUBSET] == "").all()
    aligned = big[SUBSET] == neusight.ALIGNED
    assert ((big["k"] % 4 == 0) & (big["n"] % 4 == 0)).equals(aligned)
    lin = big[(big["op"] == "linear") & ~aligned].iloc[0]  # nn.Linear: k = in_features N
    assert lin["N"] % 4 != 0 or lin["K"] % 4 != 0


def test_summary_reports_a_regimes_subsets_beside_it():
    rows = pd.DataFrame({"dataset": "x", "device": "d", "regime": ["r", "r", "r", "s"],
                         "case": ["a", "b", "c", "d"], "measured": 1.0,
                         "predicted": [1.1, 0.8, 1.0, 2.0], "unit": "ms",
                         SUBSET: ["u", "v", "v", ""]})
    rows["error"] = relative_error(rows["predicted"], rows["measured"])
    s = summary(rows).set_index("regime")
    assert list(s.index) == ["r", "r; u", "r; v", "s"]
    assert list(s["n"]) == [3, 1, 2, 1]
    assert np.isclose(s.loc["r; v", "median_err"], -0.1) and s.loc["r; u", "worst_case"] == "a"


def test_error_arithmetic_and_summary():
    assert np.allclose(relative_error([1.2, 0.5], [1.0, 1.0]), [0.2, -0.5])
    assert np.isnan(relative_error([1.0], [0.0])[0])
    rows = pd.DataFrame({"dataset": "x", "device": "d", "regime": "r",
                         "case": ["a", "b", "c"], "measured": 1.0,
                         "predicted": [1.1, 0.8, 1.0], "unit": "ms"})
    rows["error"] = relative_error(rows["predicted"], rows["measured"])
    s = summary(rows).iloc[0]
    assert s["n"] == 3 and np.isclose(s["median_err"], 0.0)
    assert np.isclose(s["median_abs_err"], 0.1) and s["worst_case"] == "b"


def test_leave_one_gpu_out_excludes_the_predicted_gpu(monkeypatch):
    seen = []

    def record(rows):
        seen.append(frozenset(rows["device"]))
        return np.array([f[1] for f in neusight.FITTED])

    monkeypatch.setattr(neusight, "fit", record)
    fits = neusight._fits.__wrapped__()
    five = set(neusight.PRESETS) - {"NVIDIA H200"}
    for held, trained in zip(list(fits)[:5], seen[:5], strict=True):
        assert held not in trained and trained == five - {held}
    assert seen[5] == five  # the H200: fitted on all five, never on itself


def test_prediction_uses_the_models_op_cost():
    """The validation's vectorized predictor and GpuModel.op_cost agree per call."""
    x = np.array([f[1] for f in neusight.FITTED])
    d = neusight.measurements()
    r = d[d["device"] == "Tesla T4"].groupby("op").head(1)
    gm = neusight._model("Tesla T4", x)
    for (_, row), pred in zip(r.iterrows(), neusight.predict_s(r, x), strict=True):
        cost = gm.op_cost(row["op"], row["case"].split(" ")[1])
        # NeuSight called relu through nn.ReLU(): one module call's dispatch more
        module_s = (gm.spec.op_dispatch_calls["module"] * gm.dispatch_s
                    if row["op"] in neusight.MODULE_OPS["Tesla T4"] else 0.0)
        host_s = cost.host_s + module_s
        expected = call_s(host_s, gm.spec.launch_share * host_s, cost.device_s)
        assert np.isclose(expected, pred, rtol=1e-9)


def test_each_gpu_dispatches_from_its_hosts_cpu():
    """NeuSight's unnamed hosts are the stand-in preset; the H200's host is its own, so
    the same fitted dispatch_s costs the H200's faster core less, by the single-thread
    speed ratio at one busy core (3.0 GHz x 0.78 against 4.0 GHz x 1.15, cpu.yaml)."""
    x = np.array([f[1] for f in neusight.FITTED])
    t4, h200 = neusight._model("Tesla T4", x), neusight._model("NVIDIA H200", x)
    assert np.isclose(t4.dispatch_s, t4.spec.dispatch_s)
    assert np.isclose(h200.dispatch_s, h200.spec.dispatch_s * (3000 * 0.78) / (4000 * 1.15))


def test_validate_external_says_its_gpu_rows_ran_simulates_pricing(monkeypatch):
    """The line `rldse validate external` prints: every device's predictor against
    gpu_ops.price, one row per operator, within 1e-9 (at the fit's starting coefficients:
    the check is of the code path, and the real fits take minutes)."""
    start = tuple(f[1] for f in neusight.FITTED)
    monkeypatch.setattr(neusight, "_fits", lambda: dict.fromkeys(neusight.PRESETS, start))
    line = neusight.same_path()
    assert line.endswith("the same path") and "on 36 rows" in line


def test_host_calibrated_regime_scores_small_rows_without_its_calibration_add(monkeypatch):
    """One host measurement (the smallest add) scales each GPU's dispatch: that row is then
    predicted exactly, and is left out of the rows the regime scores."""
    start = tuple(f[1] for f in neusight.FITTED)
    monkeypatch.setattr(neusight, "_fits", lambda: {"Tesla T4": start})
    d = neusight.measurements()
    t4 = d[d["device"] == "Tesla T4"]
    cal = t4.loc[neusight.calibration_row(t4)]
    assert cal["op"] == "add" and cal["regime"] == neusight.SMALL
    x = np.array(start)
    f = neusight.host_scale(t4.loc[[cal.name]], x)
    assert np.isclose(neusight.predict_s(t4.loc[[cal.name]], x, f)[0], cal["measured_s"])
    rows = neusight.rows()
    scored = rows[rows["regime"] == neusight.SMALL_CALIBRATED]
    assert len(scored) == (t4["regime"] == neusight.SMALL).sum() - 1
    assert cal["case"] not in set(scored["case"])
    assert cal["case"] in set(rows.loc[rows["regime"] == neusight.SMALL, "case"])
