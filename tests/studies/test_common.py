"""The figures' legibility check: texts cut by the figure's edge or laid over each other."""

from __future__ import annotations

import matplotlib.pyplot as plt

from rldse.studies.common import ILLEGIBLE, legibility_problems, save_figure


def test_a_clean_figure_has_no_problems():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    ax.set(title="throughput", xlabel="actors", ylabel="steps/s")
    fig.tight_layout()
    assert legibility_problems(fig) == []
    plt.close(fig)


def test_overlapping_and_cut_texts_are_found():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
    ax.text(0.52, 0.5, "second label", transform=ax.transAxes)
    fig.text(0.95, 0.5, "a label that runs off the edge")
    problems = legibility_problems(fig)
    assert "'first label' overlaps 'second label'" in problems
    assert "'a label that runs off the edge' is cut by the figure's edge" in problems
    plt.close(fig)


def test_crowded_category_ticks_are_slanted_before_saving(tmp_path):
    fig, ax = plt.subplots(figsize=(3, 2.5))
    names = [f"a long category name {i}" for i in range(8)]
    ax.bar(names, range(8))
    ILLEGIBLE.clear()
    path = save_figure(fig, tmp_path, "bars")
    assert path.is_file() and path.stat().st_size > 0
    assert not ILLEGIBLE  # slanted, they no longer overlap
