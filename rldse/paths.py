"""Where a path written in a study file points: the one place that resolves them.

A study file names inputs it reads (a trace, a base spec, a latency table) and files that
decide where rldse writes (a search file, whose `out/` folder a study run clears and
fills; a SQLite database). Every such path is resolved against the folder of the file
that names it, never the working directory, so a study runs the same from anywhere.
A path that decides where output goes must stay inside that folder (symbolic links
followed): a study file can then never make rldse delete or write anything outside its
own folder. Inputs may live elsewhere (the shipped studies read `../../traces/`), except
data files a spec reads (`data_path`: a latency table), which stay beside the spec.

Study parameter models declare such fields as `StudyInput` / `StudyOutput` / `StudyData`
(a data table, as `data_path`); they resolve
against the folder given as validation context (`rldse.studies.common.load_params`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, ValidationInfo

from rldse.errors import RldseError

#: the validation-context key holding the folder that study-model paths resolve against
FOLDER = "rldse.folder"


def study_path(value: str | Path, folder: str | Path, key: str, *, writes: bool) -> Path:
    """`value` resolved against `folder`; with `writes`, refused (RldseError naming `key`)
    unless it lies inside `folder`."""
    root = Path(folder).resolve()
    path = (root / value).resolve()
    if writes and not path.is_relative_to(root):
        raise RldseError(f"'{value}' is outside the study folder {root}: files a study "
                         "writes stay inside its folder (move it there)", where=key)
    return path


def data_path(value: str | Path, folder: str | Path, key: str) -> Path:
    """A data file a spec reads (a latency table), `value` resolved against the spec's
    `folder` and refused (RldseError naming `key`) unless it lies inside it, symbolic links
    followed: a spec someone else wrote can then read nothing of this machine but what sits
    beside it. A path the user gives on the command line (`--set`) is theirs: not this."""
    root = Path(folder).resolve()
    path = (root / value).resolve()
    if not path.is_relative_to(root):
        raise RldseError(f"'{value}' is outside the spec's folder {root}: a spec reads data "
                         "files beside it (copy the file there, or give its path with --set)",
                         where=key)
    return path


def _resolve(value: Path, info: ValidationInfo, *, writes: bool, data: bool = False) -> Path:
    folder = (info.context or {}).get(FOLDER)
    if folder is None:  # a bug: the model was validated without its folder
        raise RuntimeError(f"{info.field_name}: validated without the '{FOLDER}' context")
    try:
        if data:
            data_path(value, folder, "")
        return study_path(value, folder, "", writes=writes)
    except RldseError as exc:
        if data:  # data_path's own words speak of a spec and --set
            raise ValueError(f"'{value}' is outside the study folder {Path(folder).resolve()}"
                             ": a study reads its data tables from its own folder, as a spec "
                             "does (copy the file there)") from None
        raise ValueError(exc.message) from None


def _input(value: Path, info: ValidationInfo) -> Path:
    return _resolve(value, info, writes=False)


def _output(value: Path, info: ValidationInfo) -> Path:
    return _resolve(value, info, writes=True)


def _data(value: Path, info: ValidationInfo) -> Path:
    return _resolve(value, info, writes=False, data=True)


#: a file a study reads, resolved against the study's folder
StudyInput = Annotated[Path, AfterValidator(_input)]
#: a file or folder that decides where a study writes: inside the study's folder
StudyOutput = Annotated[Path, AfterValidator(_output)]
#: a data file a study reads as a spec reads its tables (`data_path`): inside its folder
StudyData = Annotated[Path, AfterValidator(_data)]
