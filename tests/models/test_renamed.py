"""Old names (the TCAM kind's `am`) still read, as the new ones, with a one-line note."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.models import renamed
from rldse.system import load_spec


@pytest.fixture(autouse=True)
def _fresh_notes():
    renamed._note.cache_clear()  # each note is printed once per file and name


def test_system_file_with_old_kind_name_reads_as_tcam(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("am: {preset: fefet-tcam-64, arrays: 32}\nplacement: {replay: am}\n")
    spec = load_spec(path, {"am.arrays": 64})
    assert spec.tcam.preset == "fefet-tcam-64" and spec.tcam.overrides() == {"arrays": 64}
    assert spec.placement.replay == "tcam"
    notes = capsys.readouterr().err.splitlines()
    assert notes and all(n.startswith("rldse: warning: ") and "'am' is deprecated" in n
                         for n in notes)
    assert any(str(path) in n for n in notes) and any("--set am.arrays" in n for n in notes)


def test_new_name_reads_without_a_note(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("tcam: {preset: fefet-tcam-64}\nplacement: {replay: tcam}\n")
    assert load_spec(path).placement.replay == "tcam"
    assert capsys.readouterr().err == ""


def test_both_names_in_one_file_is_an_error(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("am: {preset: fefet-tcam-64}\ntcam: {preset: fefet-tcam-64}\n")
    with pytest.raises(RldseError, match=r"s\.yaml.*both 'am' and 'tcam'"):
        load_spec(path)


def test_study_file_paths_choices_conditions_and_checks(capsys):
    raw = {"base": {"am": {"preset": "fefet-tcam-64"}},
           "space": {"placement.replay": {"choices": ["cpu", "am"]},
                     "am.arrays": {"int": [64, 128], "when": {"placement.replay": "am"}}},
           "skip_checks": ["am_capacity", "gpu_memory"]}
    new = renamed.study(raw, "study.yaml")
    assert new == {"base": {"tcam": {"preset": "fefet-tcam-64"}},
                   "space": {"placement.replay": {"choices": ["cpu", "tcam"]},
                             "tcam.arrays": {"int": [64, 128],
                                             "when": {"placement.replay": "tcam"}}},
                   "skip_checks": ["tcam_capacity", "gpu_memory"]}
    assert raw["space"]["placement.replay"]["choices"] == ["cpu", "am"]  # input untouched
    err = capsys.readouterr().err
    assert err.count("\n") >= 4 and "study.yaml: skip_checks: 'am_capacity'" in err


def test_constraint_naming_an_old_check(capsys):
    from rldse.search.metrics import metric_name

    assert metric_name("checks.am_capacity", "c") == "checks.tcam_capacity"
    assert metric_name("am_capacity_ok", "c") == "checks.tcam_capacity"
    assert "'am_capacity_ok' is deprecated" in capsys.readouterr().err


def test_user_preset_file_of_the_old_kind(tmp_path, capsys):
    from rldse.models import presets

    (tmp_path / "mine.yaml").write_text(
        "kind: am\npresets:\n  my-tcam:\n    base: fefet-tcam-64\n    arrays: 8\n")
    previous = presets.use_preset_dirs([tmp_path])
    try:
        assert presets.load_part("tcam", "my-tcam").arrays == 8
    finally:
        presets.use_preset_dirs(previous)
    assert "mine.yaml: kind: 'am' is deprecated" in capsys.readouterr().err


def test_the_amper_study_reads_its_old_am_keys_with_a_note(capsys):
    from rldse.studies.amper_replay.params import EndToEnd

    raw = {"cpu": "c", "gpu": "g", "am": "fefet-tcam-64", "env_steps": 1}
    assert renamed.keys(raw, {"am": "tcam"}, "end_to_end")["tcam"] == "fefet-tcam-64"
    assert "end_to_end: 'am' is deprecated; read as 'tcam'" in capsys.readouterr().err
    with pytest.raises(RldseError, match="both 'am' and 'tcam'"):
        EndToEnd.model_validate({**raw, "tcam": "x", "trace": "t.parquet"})
