"""Which studies exist: every folder under the studies root holding a ``study.yaml``, whose
``module:`` key names the Python module that runs it. Nothing lists studies by hand: a
new study is a folder (study.yaml with ``module:``, README.md) and its module.

    module: rldse.studies.pearl_mapping   # has run(study_dir: Path, progress: bool) -> Report

The module may live outside rldse (any importable module). The rest of study.yaml is the
study's own parameters (rldse.studies.common.load_params reads them without ``module``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType

from rldse.errors import RldseError, did_you_mean
from rldse.yamlfile import read_mapping

#: The study.yaml key naming the module that runs the study.
MODULE_KEY = "module"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class Study:
    name: str  # the folder's name
    path: Path  # the folder
    module: str  # dotted name of the module that runs it

    @property
    def title(self) -> str:
        """The first line of the folder's README.md (its heading), or ''."""
        readme = self.path / "README.md"
        if not readme.is_file():
            return ""
        first = readme.read_text(encoding="utf-8").lstrip().partition("\n")[0]
        return first.lstrip("#").strip().removeprefix(f"{self.name}:").strip()

    @property
    def _where(self) -> str:
        return f"{self.path / 'study.yaml'}: {MODULE_KEY}"

    def check(self) -> None:
        """The module exists (found without importing it: listing studies stays quick)."""
        try:
            found = find_spec(self.module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            raise RldseError(f"no module '{self.module}' (expected an importable Python "
                             "module with run(study_dir, progress))", where=self._where)

    def load(self) -> ModuleType:
        """The study's module, checked to have ``run``; one line naming study.yaml if not."""
        self.check()
        module = import_module(self.module)
        if not callable(getattr(module, "run", None)):
            raise RldseError(f"module '{self.module}' has no run(study_dir, progress) function",
                             where=self._where)
        return module


def study_names(root: str | Path = "studies") -> list[str]:
    """Names of the folders under ``root`` that hold a study.yaml, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise RldseError(f"{root}: no such folder (run from the repository root or pass "
                         "--root)")
    return sorted(p.parent.name for p in root.glob("*/study.yaml"))


def find_study(name: str, root: str | Path = "studies") -> Study:
    """The study in folder ``root/name``; an unknown name or a study.yaml without a valid
    ``module:`` is one line naming the file or the known studies."""
    names = study_names(root)
    if name not in names:
        raise RldseError(f"unknown study '{name}'{did_you_mean(name, names)} (studies: "
                         f"{', '.join(names) or 'none'}: folders of {root} holding a study.yaml)")
    path = Path(root) / name
    raw = read_mapping(path / "study.yaml", f"{MODULE_KEY} and the study's parameters")
    module = raw.get(MODULE_KEY)
    if not isinstance(module, str) or not _DOTTED.fullmatch(module):
        got = "missing" if module is None else f"got {module!r}"
        raise RldseError(f"expected the dotted name of the module that runs the study, e.g. "
                         f"rldse.studies.{name} ({got})",
                         where=f"{path / 'study.yaml'}: {MODULE_KEY}")
    return Study(name, path, module)


def find_studies(root: str | Path = "studies") -> list[Study]:
    """Every study under ``root``, by name, each checked (its module named and found) so
    that a broken folder fails in one line before any study runs."""
    studies = [find_study(name, root) for name in study_names(root)]
    for study in studies:
        study.check()
    return studies
