"""Fuzzing the files users write: any spec or study file gives a Result (exit 0) or one
line and exit 2, never a traceback. Inputs are valid files with parts replaced by random
keys and values, and raw random text; runs are kept tiny (env steps, actors)."""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rldse.cli import main, one_line
from rldse.errors import RldseError
from rldse.models import PART_KINDS, ROLES

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_fuzz_corpus",
                                               ROOT / "scripts" / "make_fuzz_corpus.py")
make_fuzz_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fuzz_corpus)
TRACE = make_fuzz_corpus.TRACE
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])  # examples: the profile

NAMES = sorted({"name", "placement", "workload", "price_usd_per_hour", "preset", "count",
                "actors", "env_steps", "batch_size", "learner", "cores", "mem_bytes", "arrays",
                "trace", "base", "space", "objectives", "constraints", "sampler", "seed",
                "trials", "maximize", "minimize", "int", "float", "choices", "log", "when",
                "options", "n_startup_trials", "storage", "target", "skip_checks",
                "runs_per_machine", "cost", "life_years", "usd_per_kwh",
                *ROLES, *(k.name for k in PART_KINDS.values())})
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
    st.sampled_from(["cpu", "gpu", "tcam", "am", "host", "v100-sxm2", "sync", "async", "1e10", "",
                     "steps_per_joule", "avg_power_w <= 1500", "../x", "/proc/x"]),
    st.text(max_size=12))
KEYS = st.one_of(st.sampled_from(NAMES), st.text(max_size=10))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=12)

SPEC, STUDY = make_fuzz_corpus.SPEC, make_fuzz_corpus.STUDY


def _mutated(base: dict, data: st.DataObject) -> dict:
    """``base`` with up to three paths set to random values (a new key or an existing one)."""
    raw = yaml.safe_load(yaml.safe_dump(base))
    for _ in range(data.draw(st.integers(1, 3))):
        node = raw
        for _depth in range(data.draw(st.integers(0, 2))):
            children = [k for k, v in node.items() if isinstance(v, dict)]
            if not children:
                break
            node = node[data.draw(st.sampled_from(children))]
        key = data.draw(st.one_of(st.sampled_from(sorted(node, key=str) or ["name"]), KEYS))
        node[key] = data.draw(VALUES)
    return raw


def _simulate(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.yaml"
        path.write_text(text, encoding="utf-8")
        with _captured() as out:
            code = main(["simulate", TRACE, "--system", str(path), "--set",
                         "workload.env_steps=300", "--set", "workload.actors=2"])
        _exit_0_or_one_line(code, out)


class _captured:
    """stdout and stderr of one CLI call (capsys does not reset between examples)."""

    def __enter__(self):
        import contextlib
        import io

        self.out, self.err = io.StringIO(), io.StringIO()
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(self.out))
        self._stack.enter_context(contextlib.redirect_stderr(self.err))
        return self

    def __exit__(self, *exc):
        self._stack.close()


def _exit_0_or_one_line(code: int, out: _captured) -> None:
    err = out.err.getvalue()
    if code == 0:
        assert "simulated" in out.out.getvalue()
        return
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rldse: error: "), err


@SETTINGS
@given(st.data())
def test_mutated_specs_give_a_result_or_one_line(data):
    _simulate(yaml.safe_dump(_mutated(SPEC, data), allow_unicode=True))


@SETTINGS
@given(st.text(max_size=200))
def test_random_text_as_a_spec_gives_a_result_or_one_line(text):
    _simulate(text)


@SETTINGS
@given(st.data())
def test_mutated_study_files_load_or_fail_in_one_line(data):
    from rldse.search import load_study_file

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "study.yaml"
        path.write_text(yaml.safe_dump(_mutated(STUDY, data), allow_unicode=True),
                        encoding="utf-8")
        try:
            load_study_file(path)
        except RldseError as exc:  # the CLI prints it as one line (rldse.cli.one_line)
            assert "\n" not in one_line(str(exc)) and exc.message


def test_one_line_escapes_what_would_break_the_line():
    assert one_line("x.\n\x1e: unknown field") == "x.\\n\\x1e: unknown field"


@pytest.mark.parametrize("text", ["a: 1\na: 2\n", "[" * 50_000 + "]" * 50_000,
                                  "{a: " * 50_000 + "1" + "}" * 50_000])
def test_duplicate_keys_and_deep_nesting_are_one_line(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.yaml"
        path.write_text(text)
        with _captured() as out:
            code = main(["simulate", TRACE, "--system", str(path)])
        assert code == 2
        assert out.err.getvalue().count("\n") == 1


#: YAML 1.1 forms (rldse.yamlfile.YAML_11_FORMS) where a knob or count is read: refused
_YAML_11 = ["010", "1:30", "yes", "no", "on", "off", "1_000", "0b11", "-0x10", "08"]


@pytest.mark.parametrize("value", _YAML_11)
def test_yaml_11_forms_in_set_are_one_line_naming_the_field(value):
    """`--set gpu.count=010` once gave 8 GPUs and `workload.env_steps=1:30` 90 steps."""
    for field in ("gpu.count", "workload.env_steps", "workload.gpu_swap"):
        with _captured() as out:
            code = main(["simulate", TRACE, "--system", str(ROOT / "examples" /
                                                          "dgx1_like.yaml"),
                         "--set", f"{field}={value}"])
        assert code == 2
        assert out.err.getvalue() == (out.err.getvalue().splitlines()[0] + "\n")
        assert f"--set {field}: {value} " in out.err.getvalue()


@pytest.mark.parametrize("value", _YAML_11)
def test_yaml_11_forms_in_spec_study_and_preset_files_are_one_line(tmp_path, value):
    from rldse.search import load_study_file

    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: x\ncpu: {{preset: epyc-7742}}\ngpu: {{preset: v100-sxm2, "
                    f"count: {value}}}\n")
    with _captured() as out:
        assert main(["simulate", TRACE, "--system", str(spec)]) == 2
    assert f"spec.yaml: line 3: count: {value} " in out.err.getvalue()
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({**STUDY, "trials": 2}) + f"n_startup_trials: {value}\n")
    with pytest.raises(RldseError, match=f"n_startup_trials: {value} "):
        load_study_file(study)
    presets = tmp_path / "presets"
    presets.mkdir()
    (presets / "mine.yaml").write_text(
        "kind: link\npresets:\n  mylink:\n    description: x\n"
        f"    bandwidth_gbs: {{value: {value}, unit: GB/s, source: test}}\n")
    with _captured() as out:
        assert main(["parts", "list", "--presets", str(presets)]) == 2
    assert f"value: {value} " in out.err.getvalue()


def test_yaml_12_numbers_in_set_are_read_as_12_reads_them():
    """0o2 is octal 2 and 0x1 hex 1 in YAML 1.2 (and 1e3 a number): a run of 2 GPUs."""
    from rldse.cli.common import parse_set

    assert parse_set(["gpu.count=0o2", "a=0x1", "b=1e3", "c=true", "d='yes'"]) == {
        "gpu.count": 2, "a": 1, "b": 1000.0, "c": True, "d": "yes"}


# ---- the reliability review's reproductions: one line and exit 2, nothing written,
# nothing leaked (the cases live in the fuzz corpus, scripts/make_fuzz_corpus.py)

OUTSIDE_TEXT, PASSWORD = make_fuzz_corpus.OUTSIDE_TEXT, make_fuzz_corpus.PASSWORD
ZEN = "Beautiful is better than ugly"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_containment_cases_are_one_line_and_write_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RLDSE_STORAGE", raising=False)
    cases = make_fuzz_corpus.containment_cases(tmp_path)
    before = _files(tmp_path)
    bad = []
    for name, (argv, expected) in cases.items():
        with _captured() as out:
            code = main(argv)
        text = out.out.getvalue() + out.err.getvalue()
        lines = [line for line in out.err.getvalue().splitlines() if line.strip()]
        if code != 2 or len(lines) != 1 or expected not in lines[0] or out.out.getvalue():
            bad.append(f"{name}: exit {code}: {text!r}")
        leaked = [s for s in ("SaltSecret", "19500", PASSWORD, "S3cr", "pa/ss", ZEN)
                  if s in text]
        if leaked:
            bad.append(f"{name}: printed {leaked}: {text!r}")
    assert not bad, "\n".join(bad)
    assert _files(tmp_path) == before  # nothing written, nothing replaced


def test_a_killed_writers_temporary_is_removed_by_the_next_run(tmp_path):
    """A timeline or export killed mid-write leaves `.NAME.rldse-PID.tmp`; the next run of
    the same command removes it (its PID is gone) and writes the file."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    runs = {"t.json": ["simulate", TRACE, "--system", str(spec), "--set",
                       "workload.env_steps=300", "--timeline", str(tmp_path / "t.json")],
            "out.txt": ["trace", "export", "--format", "swiftrl",
                        str(ROOT / "traces" / "tabular_taxi.parquet"), "-o",
                        str(tmp_path / "out.txt")]}
    for name, argv in runs.items():
        orphan = tmp_path / f".{name}.rldse-{dead}.tmp"
        orphan.write_bytes(b"torn")
        with _captured():
            assert main(argv) == 0
        assert not orphan.exists() and (tmp_path / name).stat().st_size > 0
