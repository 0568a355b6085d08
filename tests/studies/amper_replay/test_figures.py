"""The AMPER study's three figures show what their captions say: the axes, one series per
part and variant, and the published band, read from the drawn matplotlib objects."""

from __future__ import annotations

import pytest


def test_the_three_figures_are_written(amper_out, amper_figures):
    assert set(amper_figures) == {"latency_vs_buffer", "latency_ratio", "learning_curves"}
    for name in amper_figures:
        assert (amper_out / f"{name}.png").stat().st_size > 0


def test_latency_figure_has_a_series_per_gpu_and_per_tcam_variant(amper_figures):
    """Per panel: each GPU's sum tree (2: a100-40g solid, v100-sxm2 dashed) and, on the
    figure GPU, each of the 7 TCAM presets × AMPER-k / AMPER-fr; one point per buffer size
    (2^14 and 2^20 in the cut-down run), on log-2 buffer axes."""
    fig = amper_figures["latency_vs_buffer"]
    assert len(fig.axes) == 2
    ylabels = [ax.get_ylabel() for ax in fig.axes]
    assert ylabels == ["sample latency per batch (s)",
                       "energy per batch, sample + update (J)"]
    for ax in fig.axes:
        assert ax.get_xlabel() == "replay buffer size (entries)"
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
        lines = ax.get_lines()
        labels = [line.get_label() for line in lines]
        assert len(lines) == 2 + 7 * 2
        assert labels[:2] == ["GPU a100-40g (PER sum tree)", "GPU v100-sxm2 (PER sum tree)"]
        assert [line.get_linestyle() for line in lines[:2]] == ["-", "--"]
        assert sum(label.endswith(" AMPER-k") for label in labels) == 7
        assert sum(label.endswith(" AMPER-fr") for label in labels) == 7
        for line in lines:
            assert list(line.get_xdata()) == [2**14, 2**20]
            assert all(y > 0 for y in line.get_ydata())
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert len(legend) == 16 and "fefet-tcam-64 AMPER-k" in legend


def test_ratio_figure_has_a_panel_per_tcam_with_the_published_band(amper_figures):
    """One panel per TCAM preset (7), each with a line per batch (32, 256) and variant
    (AMPER-k, AMPER-fr) and the published 55x-270x shaded."""
    fig = amper_figures["latency_ratio"]
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert sorted(ax.get_title() for ax in panels) == sorted([
        "fefet-tcam-64", "fefet-tcam-128", "fefet-tcam-256", "camasim-fefet-64",
        "camasim-fefet-128", "rram-tcam-64", "sram-tcam-64"])
    for ax in panels:
        drawn = [line for line in ax.get_lines() if len(line.get_xdata()) > 0]
        assert len(drawn) == 2 * 2
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        (band,) = ax.patches
        box = band.get_bbox()  # in data units along y (an axhspan spans the width)
        assert (box.y0, box.y1) == pytest.approx((55, 270))
    assert {ax.get_xlabel() for ax in panels} - {""} == {"buffer size"}
    assert {ax.get_ylabel() for ax in panels} - {""} == {"a100-40g / TCAM latency"}


def test_learning_figure_has_a_curve_and_band_per_replay(amper_figures):
    """One mean curve and one min-max band per replay of the study (uniform, PER,
    AMPER-k, AMPER-fr), over env steps up to the run's 1,500."""
    (ax,) = amper_figures["learning_curves"].axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("env steps",
                                                  "mean return of the last 10 episodes")
    assert [line.get_label() for line in ax.get_lines()] == ["uniform", "per", "amper_k",
                                                             "amper_fr"]
    assert len(ax.collections) == 4
    for line in ax.get_lines():
        assert 0 < max(line.get_xdata()) <= 1500
