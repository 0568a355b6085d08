"""Studies are found from their folders: a toy study (its folder and its module, both in
tmp) runs, lists and joins --all with no list to edit; broken folders fail in one line."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rldse.cli import main
from rldse.errors import RldseError
from rldse.studies.discovery import find_studies, find_study, study_names

ROOT = Path(__file__).resolve().parents[2]

TOY_MODULE = '''
from rldse.studies.common import load_params
from rldse.studies.report import Report
from pydantic import BaseModel, ConfigDict

class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: int

def run(study_dir, out, progress=True):
    p = load_params(study_dir, Params)  # study.yaml without its module key
    return Report("toy", "a toy study", "none", summary=f"answer {p.answer}")
'''


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A studies root holding one toy study, whose module sits in tmp too (--modules)."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # what --modules adds goes with the test
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "toy_study_mod.py").write_text(TOY_MODULE)
    studies = tmp_path / "studies"
    (studies / "toy").mkdir(parents=True)
    (studies / "toy" / "study.yaml").write_text("module: toy_study_mod\nanswer: 42\n")
    (studies / "toy" / "README.md").write_text("# toy: a study made in a test\n")
    (studies / "examples").mkdir()  # a folder without study.yaml is not a study
    yield studies
    for name in ("toy_study_mod", "norun_mod"):
        sys.modules.pop(name, None)


def _mods(root: Path) -> list[str]:
    return ["--modules", str(root.parent / "mods")]


def test_toy_study_is_listed_run_and_part_of_all(root, capsys):
    assert study_names(root) == ["toy"]
    assert main(["study", "list", "--root", str(root), *_mods(root)]) == 0
    assert capsys.readouterr().out.split() == ["toy", "toy_study_mod", "a", "study", "made",
                                               "in", "a", "test"]
    assert main(["study", "run", "--all", "--root", str(root), *_mods(root)]) == 0
    assert "answer 42" in (root / "toy" / "out" / "report.md").read_text()
    assert "== study toy" in capsys.readouterr().out


@pytest.mark.parametrize("text, expected", [
    ("answer: 1\n", r"broken/study\.yaml: module: expected the dotted name .*\(missing\)"),
    ("module: 3\n", r"broken/study\.yaml: module: expected the dotted name .*\(got 3\)"),
    ("module: no_such_mod_xyz\n", r"broken/study\.yaml: module: no module 'no_such_mod_xyz'"),
    ("module: json\n", r"broken/study\.yaml: module: no module 'json' in --modules"),
    ("module: [a\n", r"broken/study\.yaml: line \d+: not valid YAML"),
])
def test_broken_folder_is_one_line_and_all_runs_nothing(root, capsys, text, expected):
    (root / "broken").mkdir()
    (root / "broken" / "study.yaml").write_text(text)
    with pytest.raises(RldseError, match=expected):
        find_studies(root, [root.parent / "mods"])
    assert main(["study", "run", "--all", "--root", str(root), *_mods(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken/study.yaml" in err
    assert not (root / "toy" / "out").exists()  # checked before any study ran


def test_module_without_run_and_unknown_name(root, tmp_path, capsys):
    (tmp_path / "mods" / "norun_mod.py").write_text("X = 1\n")
    (root / "norun").mkdir()
    (root / "norun" / "study.yaml").write_text("module: norun_mod\n")
    with pytest.raises(RldseError, match=r"norun/study\.yaml: module: module 'norun_mod' "
                                         r"has no run\("):
        find_study("norun", root, [tmp_path / "mods"]).load()
    assert main(["study", "run", "toyy", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean 'toy'" in err


def test_shipped_studies_are_found():
    names = [s.name for s in find_studies("studies")]
    assert {"pearl_mapping", "swiftrl_pim", "amper_replay", "cpu_gpu_ratio",
            "timerl_memory"} <= set(names)


@pytest.mark.parametrize("module", ["this.x", "this", "antigravity", "os.path"])
def test_a_study_file_names_no_module_outside_rldse_and_modules(root, capsys, module):
    """`module: this.x` imported `this` (printing the Zen of Python) during `study list`:
    now listing runs no code, and a run refuses a module outside rldse and --modules."""
    (root / "zen").mkdir()
    (root / "zen" / "study.yaml").write_text(f"module: {module}\n")
    for argv in (["study", "list"], ["study", "run", "zen"], ["study", "run", "--all"]):
        assert main([*argv, "--root", str(root), *_mods(root)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "zen/study.yaml: module:" in err
        assert "Beautiful is better than ugly" not in out + err


def test_a_module_shadowed_by_another_of_its_name_is_refused(root, tmp_path, capsys):
    (tmp_path / "mods" / "json.py").write_text("def run(study_dir, out, progress):\n    pass\n")
    (root / "shadow").mkdir()
    (root / "shadow" / "study.yaml").write_text("module: json\n")
    assert main(["study", "list", "--root", str(root), *_mods(root)]) == 0  # found by file
    capsys.readouterr()
    assert main(["study", "run", "shadow", "--root", str(root), *_mods(root)]) == 2
    assert "another module of that name comes first" in capsys.readouterr().err


def _block(text: str, lang: str) -> str:
    return re.search(rf"^```{lang}\n(.*?)^```", text, re.S | re.M).group(1)


def test_the_docs_example_study_runs_as_written(tmp_path, monkeypatch):
    """docs/extending-studies.md's study.yaml and module, unedited, in a tmp folder."""
    doc = (ROOT / "docs" / "extending-studies.md").read_text(encoding="utf-8")
    study_yaml, module = _block(doc, "yaml"), _block(doc, "python")
    package, name = yaml.safe_load(study_yaml)["module"].rsplit(".", 1)
    mods = tmp_path / "mods" / package
    mods.mkdir(parents=True)
    (mods / "__init__.py").write_text("")
    (mods / f"{name}.py").write_text(module)
    monkeypatch.setattr(sys, "path", list(sys.path))  # --modules adds its folder
    (tmp_path / "studies" / name).mkdir(parents=True)
    (tmp_path / "studies" / name / "study.yaml").write_text(study_yaml)
    assert main(["study", "run", name, "--root", str(tmp_path / "studies"),
                 "--modules", str(tmp_path / "mods")]) == 0
    claims = pd.read_csv(tmp_path / "studies" / name / "out" / "claims.csv")
    assert list(claims.verdict) == ["reproduced"] and list(claims.kind) == ["consistency"]
