"""Every command the README shows is run by a test: here, as written or at a reduced size
(REDUCED), or by the test file ELSEWHERE names (long runs, servers, other machines). A
README command in neither list fails, so the README cannot show a command nobody runs;
where the README shows a command's output (`$ ` lines), that output is checked too."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from rldse.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: README command → the command run here: the same at a size the suite can afford
REDUCED = {
    "rldse capture dqn --env CartPole-v1 --steps 20000 --replay per -o dqn.parquet":
        "rldse capture dqn --env CartPole-v1 --steps 600 --replay per -o dqn.parquet",
    "rldse capture tabular --env FrozenLake-v1 --steps 200000 -o fl.parquet":
        "rldse capture tabular --env FrozenLake-v1 --steps 5000 -o fl.parquet",
    "rldse capture actor_learner --env CartPole-v1 --actors 2 -o al.parquet":
        "rldse capture actor_learner --env CartPole-v1 --actors 2 --steps 1024 -o al.parquet",
}
#: README command (its start) → the test file that runs it, and why not here
ELSEWHERE = {
    "bash scripts/main.sh": ("tests/studies/test_cpu_gpu_ratio.py", "the main job: minutes"),
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
}
#: README commands shown failing on purpose: their exit code
REFUSED = ("--target-return 400", "workload.learner=async", "workload.env_steps=1e10")


def readme_commands() -> list[tuple[str, list[str]]]:
    """(command, output lines the README shows for it) from the bash blocks and the `$ `
    lines of plain blocks (a `...` line there elides output); optional `[...]` parts of a
    command are left out."""
    text = README.read_text(encoding="utf-8")
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
            if not command.startswith(("rldse ", "bash ")):
                continue
            shown = []
            found.append((command, shown))
    return found


COMMANDS = readme_commands()


def _elsewhere(command: str) -> tuple[str, str] | None:
    return next((v for k, v in ELSEWHERE.items() if command.startswith(k)), None)


def test_readme_shows_commands_and_every_exception_is_still_in_it():
    commands = [c for c, _ in COMMANDS]
    assert len(commands) > 30
    for key in [*REDUCED, *ELSEWHERE]:
        assert any(c.startswith(key) for c in commands), f"README no longer shows {key!r}"
    for path, _ in ELSEWHERE.values():
        assert (ROOT / path).exists(), path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A scratch folder with the shipped traces and examples beside it, so the README's
    relative paths resolve and its outputs land here, not in the repository."""
    work = tmp_path_factory.mktemp("readme")
    for name in ("traces", "examples"):
        (work / name).symlink_to(ROOT / name)
    return work


@pytest.mark.parametrize("command, shown", [c for c in COMMANDS if not _elsewhere(c[0])],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_readme_command_runs(workdir, capsys, command, shown):
    """In README order (later commands read what earlier ones wrote)."""
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
        assert line in text, f"README shows {line!r}; the command printed:\n{text}"
