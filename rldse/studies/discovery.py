"""Which studies exist: every folder under the studies root holding a ``study.yaml``, whose
``module:`` key names the Python module that runs it. Nothing lists studies by hand: a
new study is a folder (study.yaml with ``module:``, README.md) and its module.

    module: rldse.studies.pearl_mapping   # has run(study_dir: Path, progress: bool) -> Report

Running a study runs its module's code, so a study.yaml (data anyone may hand over) can
name only a module rldse ships (``rldse.studies.*``) or one in a folder the user names
with ``--modules DIR``: never any importable module. Modules are found by their files,
without importing anything, so listing or checking studies runs no study code; only
`Study.load` (a run, or its plan) imports. The rest of study.yaml is the study's own
parameters (rldse.studies.common.load_params reads them without ``module``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import ModuleType

from rldse.errors import RldseError, did_you_mean
from rldse.yamlfile import read_mapping

#: The study.yaml key naming the module that runs the study.
MODULE_KEY = "module"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
#: The package of the studies rldse ships, and the folder its dotted names start from.
SHIPPED = "rldse.studies"
_SHIPPED_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Study:
    name: str  # the folder's name
    path: Path  # the folder
    module: str  # dotted name of the module that runs it
    modules: tuple[Path, ...] = ()  # the folders named with --modules

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

    def check(self) -> tuple[Path, Path] | None:
        """The folder the module is found in and its file, found without importing
        anything: a shipped study (rldse.studies.*) or a module in a --modules folder;
        None for a rldse.studies module that rldse's own code has already imported."""
        shipped = self.module.startswith(f"{SHIPPED}.")
        if shipped and self.module in sys.modules:
            return None
        folders = [_SHIPPED_ROOT] if shipped else list(self.modules)
        for folder in folders:
            file = module_file(self.module, folder)
            if file is not None:
                return folder, file
        among = ("among rldse's studies" if folders == [_SHIPPED_ROOT] else
                 f"in --modules {', '.join(map(str, folders))}" if folders else
                 "(no --modules folder given)")
        raise RldseError(f"no module '{self.module}' {among}: a study runs a module rldse "
                         f"ships ({SHIPPED}.NAME) or one in a folder given with --modules "
                         "DIR, with run(study_dir, out, progress)", where=self._where)

    def load(self) -> ModuleType:
        """The study's module (imported: its code runs), checked to have ``run``; one line
        naming study.yaml if not."""
        located = self.check()
        if located is None:
            module = sys.modules[self.module]
        else:
            folder, file = located
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
            module = import_module(self.module)
        found = getattr(module, "__file__", None)
        if located is not None and (found is None or Path(found).resolve() != file):
            raise RldseError(f"module '{self.module}' imports from {found or 'elsewhere'}, "
                             f"not {file}: another module of that name comes first "
                             "(rename the study's module)", where=self._where)
        if not callable(getattr(module, "run", None)):
            raise RldseError(f"module '{self.module}' has no run(study_dir, progress) function",
                             where=self._where)
        return module


def module_file(dotted: str, folder: Path) -> Path | None:
    """The file of module ``dotted`` under ``folder`` (``a/b.py`` or ``a/b/__init__.py``,
    each package on the way a folder), by looking at files only; None if there is none."""
    *packages, last = dotted.split(".")
    base = folder.joinpath(*packages)
    if not base.is_dir():
        return None
    for file in (base / f"{last}.py", base / last / "__init__.py"):
        if file.is_file():
            return file.resolve()
    return None


def study_names(root: str | Path = "studies") -> list[str]:
    """Names of the folders under ``root`` that hold a study.yaml, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise RldseError(f"{root}: no such folder (run from the repository root or pass "
                         "--root)")
    return sorted(p.parent.name for p in root.glob("*/study.yaml"))


def find_study(name: str, root: str | Path = "studies",
               modules: Sequence[str | Path] = ()) -> Study:
    """The study in folder ``root/name`` (its module looked for among rldse's studies and
    the ``modules`` folders); an unknown name or a study.yaml without a valid ``module:``
    is one line naming the file or the known studies."""
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
    return Study(name, path, module, module_folders(modules))


def module_folders(modules: Sequence[str | Path]) -> tuple[Path, ...]:
    """The --modules folders, resolved; one line for one that is not a folder."""
    folders = tuple(Path(m).resolve() for m in modules)
    for given, folder in zip(modules, folders, strict=True):
        if not folder.is_dir():
            raise RldseError(f"--modules {given}: no such folder")
    return folders


def find_studies(root: str | Path = "studies",
                 modules: Sequence[str | Path] = ()) -> list[Study]:
    """Every study under ``root``, by name, each checked (its module named and found,
    nothing imported) so that a broken folder fails in one line before any study runs."""
    studies = [find_study(name, root, modules) for name in study_names(root)]
    for study in studies:
        study.check()
    return studies
