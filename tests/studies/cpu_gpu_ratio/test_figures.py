"""The CPU/GPU-ratio study's figures show what their captions say, read from the drawn
matplotlib objects: the sweep against the analytic rates, and the search's trials with
the infeasible ones apart."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from rldse.studies.cpu_gpu_ratio import figures


def test_cpu_gpu_ratio_sweep_figure_is_written(ratio_out):
    assert (ratio_out / "ratio.png").stat().st_size > 10_000


@pytest.fixture
def drawn(monkeypatch):
    """The figures the study's functions hand to save_figure, by name (not saved; closed
    after the test)."""
    kept = {}

    def keep(fig, out, name):
        kept[name] = fig
        return out / f"{name}.png"

    monkeypatch.setattr(figures, "save_figure", keep)
    yield kept
    for fig in kept.values():
        plt.close(fig)


def test_search_figure_keeps_infeasible_trials_apart(drawn, tmp_path):
    """Six trials, three feasible: the feasible ones are the coloured scatter and the grey
    history points, the infeasible ones (a trial with no record among them) red crosses in
    both panels; the best-so-far steps through the feasible values only; the power cap is
    drawn where the constraint puts it."""
    trials = pd.DataFrame({
        "number": range(6), "source": ["simulated"] * 5 + ["cache"],
        "feasible": [True, False, True, None, True, False],
        "avg_power_w": [900.0, 1800.0, 1200.0, 2000.0, 1400.0, 1600.0],
        "env_steps_per_s": [100.0, 500.0, 300.0, 700.0, 200.0, 600.0],
        "gpu.count": [1, 4, 2, 4, 2, 3]})
    sf = SimpleNamespace(
        objectives=[SimpleNamespace(metric="env_steps_per_s", direction="maximize")],
        parsed_constraints=[SimpleNamespace(names=("avg_power_w",), op="<=", bound=1500)])
    figures.search_figure(trials, sf, tmp_path)
    scatter, history = drawn["search"].axes[:2]
    assert (scatter.get_xlabel(), scatter.get_ylabel()) == ("average power (W)",
                                                            "throughput (env steps/s)")
    feasible, infeasible = scatter.collections
    assert feasible.get_offsets().tolist() == [[900, 100], [1200, 300], [1400, 200]]
    assert infeasible.get_offsets().tolist() == [[1800, 500], [2000, 700], [1600, 600]]
    assert infeasible.get_label() == "infeasible (breaks a constraint)"
    (cap,) = [line for line in scatter.get_lines() if line.get_label() == "cap 1500 W"]
    assert list(cap.get_xdata()) == [1500, 1500]
    ok, bad, best = history.get_lines()
    assert (ok.get_label(), bad.get_label()) == ("feasible trial", "infeasible trial")
    assert list(ok.get_xdata()) == [0, 2, 4] and list(bad.get_xdata()) == [1, 3, 5]
    assert list(best.get_ydata()) == [100, 100, 300, 300, 300, 300]


def test_sweep_figure_has_the_rates_the_band_and_the_knee(drawn, tmp_path, monkeypatch):
    """Per environment a throughput panel (simulated, production, consumption, the knee)
    over a steps-per-joule panel (simulated, the optimal ratio's p5-p95 band, the knee),
    on log-2 ratio axes."""
    sweep = pd.DataFrame({"environment": ["A"] * 3 + ["B"] * 3,
                          "actors_per_gpu": [1, 4, 16] * 2,
                          "env_steps_per_s": [10.0, 40.0, 60.0, 5.0, 20.0, 25.0],
                          "steps_per_joule": [1.0, 2.0, 1.5, 0.5, 1.0, 0.8]})
    # the analytic rates are rates.py's (tested there); here only that they are drawn
    monkeypatch.setattr(figures, "production", lambda units, n, m: np.asarray(n) * 10.0)
    monkeypatch.setattr(figures, "consumption", lambda units, n: np.full(len(n), 60.0))
    figures.sweep_figure(sweep, {"A": 6.0, "B": np.inf}, {"A": None, "B": None},
                         {"A": np.array([4, 4, 16]), "B": np.array([4, 4, 4])}, [1, 4, 16],
                         tmp_path)
    fig = drawn["ratio"]
    axes = np.asarray(fig.axes).reshape(2, 2)
    for j, env in enumerate("AB"):
        top, bottom = axes[0, j], axes[1, j]
        assert top.get_title() == env and top.get_ylabel() == "throughput (env steps/s)"
        assert bottom.get_ylabel() == "env steps per joule"
        assert top.get_xscale() == bottom.get_xscale() == "log"
        knee = ["knee 6.0"] if env == "A" else []  # an infinite knee is not drawn
        assert [line.get_label() for line in top.get_lines()] == [
            "simulated", "production", "consumption", *knee]
        assert [line.get_label() for line in bottom.get_lines()] == [
            "simulated (nominal presets)", *knee]
        simulated = top.get_lines()[0]
        assert list(simulated.get_xdata()) == [1, 4, 16]
        (band,) = bottom.patches
        assert band.get_label() == "optimal ratio p5-p95"
        box = band.get_bbox()  # along x in data units (an axvspan spans the height)
        assert 4 <= box.x0 <= box.x1 <= 16
