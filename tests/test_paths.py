"""Study-file paths resolve against the file; what decides where a study writes stays in
its folder, and a study that points outside is refused before anything is touched."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from rldse.errors import RldseError
from rldse.paths import FOLDER, StudyInput, StudyOutput, study_path

ROOT = Path(__file__).parents[1]


def test_paths_resolve_against_the_folder_not_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    assert study_path("data/a.csv", tmp_path, "k", writes=True) == tmp_path / "data/a.csv"
    assert study_path("../traces/t.parquet", tmp_path / "s", "k", writes=False) == \
        tmp_path / "traces/t.parquet"


@pytest.mark.parametrize("value", ["../x.yaml", "sub/../../x.yaml", "/etc/passwd", "link/x"])
def test_a_written_path_outside_the_folder_is_refused(tmp_path, value):
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "link").symlink_to(tmp_path)  # a link out of the folder counts as outside
    with pytest.raises(RldseError) as err:
        study_path(value, folder, "search", writes=True)
    assert str(err.value).startswith(f"search: '{value}' is outside the study folder")
    assert "\n" not in str(err.value)


class _Params(BaseModel):
    search: StudyOutput
    trace: StudyInput


def test_study_models_resolve_with_their_folder_as_context(tmp_path):
    p = _Params.model_validate({"search": "s.yaml", "trace": "../t.parquet"},
                               context={FOLDER: tmp_path / "st"})
    assert (p.search, p.trace) == (tmp_path / "st/s.yaml", tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="outside the study folder"):
        _Params.model_validate({"search": "../s.yaml", "trace": "t"},
                               context={FOLDER: tmp_path / "st"})


def test_a_study_whose_search_file_is_outside_is_refused_and_nothing_outside_is_touched(
        tmp_path):
    from rldse.studies import cpu_gpu_ratio

    shipped = (ROOT / "studies/cpu_gpu_ratio/search.yaml").read_text()
    outside = tmp_path / "outside"
    (outside / "out/search").mkdir(parents=True)
    (outside / "search.yaml").write_text(shipped.replace(
        "../../traces/", f"{ROOT}/traces/"))
    (outside / "out/search/keep.txt").write_text("not the study's")
    study = tmp_path / "studies/mine"
    study.mkdir(parents=True)
    params = (ROOT / "studies/cpu_gpu_ratio/study.yaml").read_text()
    assert "\nsearch: search.yaml" in params
    (study / "study.yaml").write_text(params.replace(
        "\nsearch: search.yaml", "\nsearch: ../../outside/search.yaml"))
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(RldseError) as err:
        cpu_gpu_ratio.run(study, study / "out", progress=False)
    text = str(err.value)
    assert text.startswith(f"{study / 'study.yaml'}: search: ") and "outside the study" in text
    assert "\n" not in text
    assert sorted(p for p in tmp_path.rglob("*")) == before
    assert (outside / "out/search/keep.txt").read_text() == "not the study's"
