"""Helpers every study uses: its parameter file, its traces, and saving figures."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import matplotlib.pyplot as plt
from pydantic import BaseModel, ValidationError

from rldse.errors import validation_error
from rldse.paths import FOLDER
from rldse.studies.discovery import MODULE_KEY
from rldse.yamlfile import read_mapping

P = TypeVar("P", bound=BaseModel)


def load_params(study_dir: Path, model: type[P]) -> P:
    """study.yaml validated by the study's pydantic model; errors name the key. Paths
    (rldse.paths.StudyInput / StudyOutput fields) resolve against `study_dir`."""
    path = study_dir / "study.yaml"
    raw = read_mapping(path, f"the parameters of study '{study_dir.name}'")
    raw = {k: v for k, v in raw.items() if k != MODULE_KEY}  # which module runs it
    try:
        return model.model_validate(raw, context={FOLDER: study_dir})
    except ValidationError as exc:
        raise validation_error(exc, "").within(str(path)) from None


def save_figure(fig: plt.Figure, out_dir: Path, name: str) -> Path:
    """Save a figure as PNG under out/ (atomically: a reader never sees half a file) and
    close it. Its texts are checked first (``legibility_problems``); crowded x tick labels
    are slanted; what still fails is saved anyway (a finished run keeps its figures),
    printed as a warning and kept in ILLEGIBLE, which the tests that draw figures read."""
    import sys

    from rldse.files import atomic_write

    path = out_dir / f"{name}.png"
    fig.tight_layout()
    problems = legibility_problems(fig)
    if problems:
        _declutter(fig)
        problems = legibility_problems(fig)
    for problem in problems:
        ILLEGIBLE.append((str(path), problem))
        print(f"rldse: warning: figure {path}: {problem}", file=sys.stderr)
    try:  # the temporary's suffix is not .png, so the format is named
        return atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    finally:
        plt.close(fig)


#: Figures saved with texts clipped by their edge or laid over each other (figure, what):
#: printed as warnings when saved, and asserted empty by the tests that draw figures.
ILLEGIBLE: list[tuple[str, str]] = []


def legibility_problems(fig: plt.Figure) -> list[str]:
    """Texts of ``fig`` (titles, labels, tick labels, legends, annotations) that leave the
    figure or overlap another text by more than a tenth of the smaller one, as drawn."""
    fig.draw_without_rendering()  # lays out and measures texts; no pixels
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    boxes = [(t.get_text().strip(), t.get_window_extent(renderer))
             for t in _drawn_texts(fig) if t.get_visible() and t.get_text().strip()]
    out = [f"'{text}' is cut by the figure's edge" for text, b in boxes
           if b.x0 < edge.x0 - 1 or b.y0 < edge.y0 - 1 or b.x1 > edge.x1 + 1
           or b.y1 > edge.y1 + 1]
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1:]:
            w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
            h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
            smaller = min(ba.width * ba.height, bb.width * bb.height)
            if w > 0 and h > 0 and w * h > 0.1 * smaller:
                out.append(f"'{a}' overlaps '{b}'")
    return out


def _drawn_texts(fig: plt.Figure) -> list:
    """The texts a draw of ``fig`` shows: its own, and per axes the titles, axis labels,
    annotations, legend entries and the tick labels of ticks in view (an axis keeps label
    objects for ticks outside its limits, which are not drawn)."""
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        for axis in (ax.xaxis, ax.yaxis):
            texts += [axis.label, axis.offsetText]
            for tick in axis._update_ticks():  # the ticks the axis draws (matplotlib's own)
                texts += [tick.label1, tick.label2]
        legend = ax.get_legend()
        if legend is not None:
            texts += [*legend.get_texts(), legend.get_title()]
    for legend in fig.legends:
        texts += [*legend.get_texts(), legend.get_title()]
    return texts


def _declutter(fig: plt.Figure) -> None:
    """The usual remedies: x tick labels turned upright (crowded category axes), texts
    wider than their room wrapped onto lines (long titles), then a layout that makes room
    for them."""
    import textwrap

    for ax in fig.axes:
        for label in ax.get_xticklabels():
            label.set_rotation(90)
    renderer = fig.canvas.get_renderer()
    for text in _drawn_texts(fig):
        content = text.get_text()
        box = text.get_window_extent(renderer)
        room = fig.bbox.width / max(len(fig.axes), 1) if text in fig.texts else \
            (text.axes.bbox.width if text.axes is not None else fig.bbox.width)
        if content.strip() and box.width > room and text.get_rotation() == 0:
            chars = max(int(len(content) * room / box.width) - 2, 12)
            text.set_text(textwrap.fill(content, chars))
    fig.tight_layout()
