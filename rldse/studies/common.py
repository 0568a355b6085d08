"""Helpers every study uses: its parameter file, its traces, and saving figures."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import matplotlib.pyplot as plt
from pydantic import BaseModel, ValidationError

from rldse.errors import RldseError
from rldse.paths import FOLDER
from rldse.yamlfile import read_mapping

P = TypeVar("P", bound=BaseModel)


def load_params(study_dir: Path, model: type[P]) -> P:
    """study.yaml validated by the study's pydantic model; errors name the key. Paths
    (rldse.paths.StudyInput / StudyOutput fields) resolve against `study_dir`."""
    path = study_dir / "study.yaml"
    raw = read_mapping(path, f"the parameters of study '{study_dir.name}'")
    try:
        return model.model_validate(raw, context={FOLDER: study_dir})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise RldseError(f"{path}: {loc}: {err['msg']}") from None


def save_figure(fig: plt.Figure, out_dir: Path, name: str) -> Path:
    """Save a figure as PNG under out/ (atomically: a reader never sees half a file) and
    close it."""
    from rldse.files import atomic_write

    path = out_dir / f"{name}.png"
    fig.tight_layout()
    try:  # the temporary's suffix is not .png, so the format is named
        return atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    finally:
        plt.close(fig)
