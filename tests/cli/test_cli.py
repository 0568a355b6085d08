"""The `rldse` command: readable output, and one-line errors with exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rldse.cli import main

ROOT = Path(__file__).parents[2]


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_trace_info_prints_phases_and_digest(small_trace, tmp_path, capsys):
    path = small_trace.save(tmp_path / "t.parquet")
    code, out, _ = _run(["trace", "info", str(path)], capsys)
    assert code == 0
    assert small_trace.digest in out
    for phase in ("env_step", "learn", "replay_sample"):
        assert phase in out
    assert "Test CPU" in out


def test_trace_info_says_which_spans_an_older_trace_costs_from_wall_time(tmp_path, capsys):
    """An actor-learner trace without the processes' CPU time (made one here, whatever
    the shipped trace has) loads, and `trace info` says how it is read."""
    from rldse.trace import load_trace
    from rldse.workloads import workload_of

    shipped = load_trace(ROOT / "traces" / "actor_learner_cartpole_2.parquet")
    old = workload_of(shipped).without_cpu_time(shipped, rows=False)
    code, out, _ = _run(["trace", "info", str(old.save(tmp_path / "old.parquet"))], capsys)
    assert code == 0
    assert "start-up and hand-offs: no CPU time recorded" in out


@pytest.mark.parametrize("content", [b"", b"PAR1 not really", b"some text\n"])
def test_bad_trace_file_is_one_line_exit_2(tmp_path, capsys, content):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(content)
    code, _, err = _run(["trace", "info", str(bad)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("rldse: error: ")
    assert str(bad) in err


def test_missing_file(tmp_path, capsys):
    code, _, err = _run(["trace", "info", str(tmp_path / "nope.parquet")], capsys)
    assert code == 2 and "no such file" in err


def test_no_traceback_from_the_console_script(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_text("junk")
    proc = subprocess.run([sys.executable, "-m", "rldse.cli", "trace", "info", str(bad)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_capture_rejects_bad_option(capsys, tmp_path):
    code, _, err = _run(["capture", "dqn", "--env", "CartPole-v1", "--steps", "-5",
                         "-o", str(tmp_path / "x.parquet")], capsys)
    assert code == 2 and "--steps" in err and err.count("\n") == 1


def test_parts_list_and_show(capsys):
    code, out, _ = _run(["parts"], capsys)
    assert code == 0
    for name in ("xeon-silver-4215", "a100-40g", "upmem-p21", "fefet-tcam-64", "pcie4-x16"):
        assert name in out
    code, out, _ = _run(["parts", "show", "fefet-tcam-64"], capsys)
    assert code == 0 and "0.38" in out and "Eva-CAM" in out
    assert "checked against real machines: not yet" in out
    code, out, _ = _run(["parts", "show", "i7-8750h"], capsys)
    assert code == 0 and "envpool, for-loop: n 8" in out


def test_parts_unknown_preset_is_one_line(capsys):
    code, _, err = _run(["parts", "show", "a100-41g"], capsys)
    assert code == 2 and err.count("\n") == 1 and "a100-41g" in err


def test_validate_says_it_checks_replay_consistency_not_accuracy(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "not model accuracy" in " ".join(capsys.readouterr().out.split())
    from pathlib import Path

    trace = Path(__file__).resolve().parents[2] / "traces" / "tabular_frozenlake.parquet"
    code, out, _ = _run(["check-replay", str(trace)], capsys)
    header = out.splitlines()[0]
    assert code == 0 and "REPLAY CONSISTENCY" in header and "not model accuracy" in header


def test_parts_with_a_user_preset_dir(tmp_path, capsys):
    import yaml

    (tmp_path / "l.yaml").write_text(yaml.safe_dump({"kind": "link", "presets": {"slow-link": {
        "description": "a slow link", "bandwidth_gbs": {"value": 1, "unit": "GB/s",
                                                         "source": "test"}}}}))
    code, out, _ = _run(["parts", "--presets", str(tmp_path)], capsys)
    assert code == 0 and "slow-link" in out and str(tmp_path / "l.yaml") in out
    code, out, _ = _run(["parts"], capsys)  # the directory was the command's, not the process's
    assert code == 0 and "slow-link" not in out
    code, _, err = _run(["parts", "--presets", str(tmp_path / "nope")], capsys)
    assert code == 2 and err.count("\n") == 1 and "no such directory" in err


def test_calibrate_gpu_without_torch_says_how_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    code, _, err = _run(["calibrate", "gpu", "--name", "g", "-o", str(tmp_path)], capsys)
    assert code == 2 and err.count("\n") == 1 and "pip install 'rldse[torch]'" in err
