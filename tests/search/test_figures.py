"""The study's figures: Optuna's own plots, log axes for log-searched parameters."""

from __future__ import annotations

from matplotlib.figure import Figure

from rldse.search import run_study


def test_slices_use_a_log_axis_for_a_log_searched_parameter(write_study, monkeypatch):
    scales: dict[str, str] = {}
    save = Figure.savefig

    def record(fig, path, **kwargs):
        assert kwargs.get("format") == "png"  # written through a temporary name
        for ax in fig.axes:
            if ax.get_xlabel():
                scales[ax.get_xlabel()] = ax.get_xscale()
        return save(fig, path, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    path = write_study(space={"workload.actors": {"int": [1, 64], "log": True},
                              "gpu.count": {"int": [1, 4]}}, trials=8, figures=True)
    report = run_study(path, progress=False)
    assert scales["workload.actors"] == "log" and scales["gpu.count"] == "linear"
    for key in ("history", "importance", "slice workload.actors", "slice gpu.count"):
        assert report.files[key].endswith(".png"), key


def test_several_objectives_draw_the_pareto_front_and_one_history_each(write_study):
    path = write_study(objectives=[{"maximize": "steps_per_joule"}, {"minimize": "cost_usd"}],
                       sampler={"name": "nsga2", "options": {"population_size": 4}}, trials=8,
                       figures=True)
    report = run_study(path, progress=False)
    for key in ("pareto", "history_steps_per_joule", "history_cost_usd",
                "slice gpu.count cost_usd"):
        assert report.files[key].endswith(".png"), key


def test_figures_false_draws_none_and_says_so(write_study):
    path = write_study(trials=4, figures=False)
    report = run_study(path, progress=False)
    assert not (path.parent / "out" / "figures").exists()
    assert "figures" not in report.files and not any(k.startswith("slice") for k in report.files)
    assert any("figures: false" in n for n in report.notes)
    assert (path.parent / "out" / "trials.csv").exists() and report.best


def test_the_trials_figure_draws_infeasible_points_apart_and_the_power_cap():
    import pandas as pd

    from rldse.search.constraints import parse_constraint
    from rldse.search.figures import trials_figure

    trials = pd.DataFrame({
        "number": [0, 1, 2, 3], "source": ["simulated", "simulated", "cache", "pruned"],
        "feasible": pd.array([True, False, True, None], dtype="boolean"),
        "avg_power_w": [300.0, 500.0, 300.0, None], "env_steps_per_s": [1e4, 2e4, 1e4, None]})
    cap = parse_constraint("avg_power_w <= 400", "test")
    fig = trials_figure(trials, ("env_steps_per_s", "maximize"), [cap])
    power = fig.axes[0]
    feasible, infeasible = power.collections[:2]
    assert len(feasible.get_offsets()) == 2 and list(infeasible.get_offsets()[0]) == [500, 2e4]
    assert [line.get_xdata()[0] for line in power.lines] == [400]
    assert power.get_xlabel() == "average power (W)"
    history = fig.axes[1]
    assert list(history.lines[-1].get_ydata()) == [1e4, 1e4, 1e4, 1e4]  # best feasible so far


def test_a_search_draws_the_trials_figure_the_studies_draw(write_study):
    report = run_study(write_study(trials=4, figures=True), progress=False)
    assert report.files["trials"].endswith("trials.png")
