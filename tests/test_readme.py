"""Every command the README and the pages of docs/ show is run by a test: here, as written
or at a reduced size (REDUCED), or by the test file ELSEWHERE names (long runs, servers,
other machines). A command in neither list fails, so no page can show a command nobody
runs; where a page shows a command's output (`$ ` lines), that output is checked too.
Pages run in order, README first (later commands read what earlier ones wrote)."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from rldse.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the pages whose commands run: the README, then every page of docs/ by name
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

#: page command → the command run here: the same at a size the suite can afford
REDUCED = {
    "rldse capture dqn --env CartPole-v1 --steps 20000 --replay per -o dqn.parquet":
        "rldse capture dqn --env CartPole-v1 --steps 600 --replay per -o dqn.parquet",
    "rldse capture tabular --env FrozenLake-v1 --steps 200000 -o fl.parquet":
        "rldse capture tabular --env FrozenLake-v1 --steps 5000 -o fl.parquet",
    "rldse capture actor_learner --env CartPole-v1 --actors 2 -o al.parquet":
        "rldse capture actor_learner --env CartPole-v1 --actors 2 --steps 1024 -o al.parquet",
}
#: page command (its start) → the test file that runs it, and why not here
ELSEWHERE = {
    "bash scripts/main.sh": ("tests/studies/cpu_gpu_ratio", "the main job: minutes"),
    "bash scripts/test.sh": ("tests", "the suite itself"),
    "rldse capture actor_learner --env ALE/Pong-v5": ("tests/workloads/common/test_atari.py",
                                                       "Atari frames: minutes"),
    "rldse capture script": ("tests/recording/test_script.py", "needs a user's script"),
    "rldse trace import --format torch-profiler": ("tests/recording/test_torch_profiler.py",
                                                   "needs a profile recorded by torch"),
    "rldse validate external": ("tests/cli/test_validate_external.py", "every data set"),
    "rldse calibrate": ("tests/calibrate", "measures this host or a GPU: minutes"),
    "rldse simulate traces/dqn_cartpole_uniform.parquet --system examples/dgx1_like.yaml "
    "--presets mypresets/": ("tests/calibrate/test_cpu.py", "needs the calibrated preset"),
    "rldse search": ("tests/cli/test_search.py", "an Optuna study: minutes"),
    "rldse dashboard": ("tests/cli/test_dashboard.py", "a web server"),
    "rldse study run": ("tests/cli/test_study.py", "a whole study: minutes"),
    "python -m rldse.studies.claims": ("tests/studies/test_claims.py",
                                       "needs every study's out/claims.csv"),
}
#: commands shown failing on purpose: their exit code
REFUSED = ("--target-return 400", "workload.learner=async", "workload.env_steps=1e10")


def page_commands(page: Path) -> list[tuple[str, list[str]]]:
    """(command, output lines the page shows for it) from the bash blocks and the `$ `
    lines of plain blocks (a `...` line there elides output); optional `[...]` parts of a
    command are left out."""
    text = page.read_text(encoding="utf-8")
    found: list[tuple[str, list[str]]] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if lang not in ("bash", ""):
            continue
        shown: list[str] | None = None  # output lines of the last `$ ` command
        for line in re.sub(r"\\\n\s*", " ", body).splitlines():
            if lang == "" and not line.startswith("$ "):
                if shown is not None and line.strip() not in ("", "..."):
                    shown.append(line.strip())
                continue
            command = re.sub(r"\s+#.*$", "", line.removeprefix("$ ")).strip()
            command = " ".join(re.sub(r"\s*\[[^\]]*\]", "", command).split())
            if not command.startswith(("rldse ", "bash ", "python -m rldse")):
                continue
            shown = []
            found.append((command, shown))
    return found


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


#: (page, command, shown output) of every page, in page order
COMMANDS = [(_name(p), c, shown) for p in PAGES for c, shown in page_commands(p)]


def _elsewhere(command: str) -> tuple[str, str] | None:
    return next((v for k, v in ELSEWHERE.items() if command.startswith(k)), None)


def test_pages_show_commands_and_every_exception_is_still_in_them():
    commands = [c for _, c, _ in COMMANDS]
    assert len(commands) > 30
    assert {_name(p) for p in PAGES} >= {"README.md", "docs/cli.md", "docs/validation.md"}
    for key in [*REDUCED, *ELSEWHERE]:
        assert any(c.startswith(key) for c in commands), f"no page shows {key!r} any more"
    for path, _ in ELSEWHERE.values():
        assert (ROOT / path).exists(), path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A scratch folder with the shipped traces, examples and studies beside it, so the
    pages' relative paths resolve and their outputs land here, not in the repository
    (commands that would write into studies/ run ELSEWHERE)."""
    work = tmp_path_factory.mktemp("readme")
    for name in ("traces", "examples", "studies"):
        (work / name).symlink_to(ROOT / name)
    return work


@pytest.mark.parametrize("page, command, shown", [c for c in COMMANDS if not _elsewhere(c[1])],
                         ids=[f"{p}: {c}" for p, c, _ in COMMANDS if not _elsewhere(c)])
def test_page_command_runs(workdir, capsys, page, command, shown):
    """In page order (later commands read what earlier ones wrote)."""
    argv = shlex.split(REDUCED.get(command, command))
    assert argv[0] == "rldse"
    old = Path.cwd()
    os.chdir(workdir)
    try:
        code = main(argv[1:])
    except SystemExit as exit_:  # --help
        code = exit_.code
    finally:
        os.chdir(old)
    out = capsys.readouterr()
    expected = 2 if any(r in command for r in REFUSED) else 0
    assert code == expected, out.err
    text = out.out + out.err
    for line in shown:
        assert line in text, f"{page} shows {line!r}; the command printed:\n{text}"


def test_relative_links_resolve():
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            path = (page.parent / target).resolve()
            assert path.exists(), f"{_name(page)} links to {target}, which does not exist"


def test_readme_summary_counts_the_claims_table():
    """The README's one-line tally of the seed papers' claims is the table's, not retyped
    by hand after a study changes."""
    table = (ROOT / "docs" / "validation.md").read_text("utf-8")
    rows = [r.split("|") for r in table.splitlines() if r.startswith("| ") and r.count("|") == 8]
    verdicts = [r[7].strip() for r in rows if r[3].strip() == "reproduction"]
    said = " ".join(README.read_text("utf-8").split())
    expected = (f"of {len(verdicts)} reproduction claims, {verdicts.count('reproduced')} "
                f"reproduced, {verdicts.count('consistent within uncertainty')} consistent "
                f"within uncertainty, {verdicts.count('not reproduced')} not reproduced and "
                f"{verdicts.count('not comparable')} not comparable")
    assert len(verdicts) > 20 and expected in said


def test_limitations_is_one_page():
    """What not to trust, readable in five minutes: under 900 words, each item naming the
    command behind its number (the lab notes are benchmarks/NOTES.md)."""
    text = (ROOT / "docs" / "limitations.md").read_text("utf-8")
    assert len(text.split()) < 900
    items = [i for i in text.split("\n- ")[1:]]
    assert len(items) > 15 and all("`" in i for i in items)
    assert (ROOT / "benchmarks" / "NOTES.md").exists()
