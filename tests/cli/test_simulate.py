"""`rldse simulate` / `validate` refuse bad flags before any work, in one line (exit 2)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from rldse.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRACE = str(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
SPEC = str(ROOT / "examples" / "dgx1_like.yaml")
SMALL = ["--set", "workload.env_steps=1000"]


def _one_line_error(argv, capsys) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rldse: error: "), err
    return lines[0]


@pytest.mark.parametrize("extra,needle", [
    (["--seed", "-1"], "--seed -1: expected an integer from 0"),
    (["--timeline", "{tmp}"], "is a folder; give a file ending in .json"),
    (["--timeline", "/proc/x.json"], "--timeline /proc/x.json: cannot write in /proc"),
    (["--timeline", "{tmp}/t.txt"], "expected a file name ending in .json"),
    (["--set", "placment.replay=tcam"], "--set placment.replay: placment: unknown field; "
                                      "did you mean 'placement'?"),
    (["--set", "gpu.countt=2"], "--set gpu.countt: unknown field; did you mean 'count'"),
    (["--set", "gpu=3"], "--set gpu: expected a mapping of fields (got 3)"),
    (["--set", "workload.actor=3"], "--set workload.actor: not a knob of dqn traces; did you "
                                    "mean 'actors'"),
    (["--set", "workload.env_steps=1", "--set", "workload.env_steps=2"], "given twice"),
])
def test_bad_flags_are_one_line(tmp_path, capsys, extra, needle):
    argv = ["simulate", TRACE, "--system", SPEC, *SMALL,
            *[a.replace("{tmp}", str(tmp_path)) for a in extra]]
    line = _one_line_error(argv, capsys)
    assert needle in line
    assert "Ref" not in line  # no internal class names (GpuRef, PartRef)
    assert not list(tmp_path.iterdir())  # nothing written


def test_validate_refuses_a_negative_seed(capsys):
    assert "--seed -1" in _one_line_error(["check-replay", TRACE, "--seed", "-1"], capsys)


def test_env_steps_1e10_is_refused_with_the_estimate(capsys):
    """1e10 reads as a number (YAML 1.2), and the run is refused after short pilots."""
    line = _one_line_error(["simulate", TRACE, "--system", SPEC, "--set",
                            "workload.env_steps=1e10"], capsys)
    assert "this run would take about" in line and "10,000,000,000 env steps" in line
    assert "--allow-long" in line


def test_allow_long_is_a_flag():
    from rldse.cli import build_parser

    args = build_parser().parse_args(["simulate", TRACE, "--system", SPEC, "--allow-long"])
    assert args.allow_long is True


def test_version(capsys):
    from rldse import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"rldse {__version__}"


def test_smoothing_episodes_without_a_target_is_refused(capsys):
    """A flag that would change nothing is refused in one line, not ignored."""
    code = main(["simulate", "traces/dqn_cartpole_uniform.parquet", "--system",
                 "examples/dgx1_like.yaml", "--smoothing-episodes", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "--smoothing-episodes: applies with --target-return" in err
    assert err.count("\n") == 1


def test_phase_table_shows_device_busy_beside_the_workers_time(capsys):
    """Pong's learner dispatches to the GPU and waits little: the learner's time in
    `learn` is far below the GPU's busy seconds on it; both are shown, and a row the
    program accounts in bulk shows no count rather than 0."""
    pong = str(ROOT / "traces" / "pong_ppo.parquet")
    assert main(["simulate", pong, "--system", SPEC, "--set", "workload.env_steps=8192"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["worker", "phase"])
    assert lines[head].split() == ["worker", "phase", "device", "count", "worker_s",
                                   "path_share", "device_busy_s"]
    rows = {tuple(line.split()[:3]): line.split() for line in lines[head + 1:]
            if line.startswith((" ", "a", "l")) and len(line.split()) == 7}
    learn = rows[("learner", "learn", "gpu")]
    assert float(learn[6]) > float(learn[4]) > 0
    assert all(r[3] != "0" for r in rows.values())
    assert rows[("actor", "wait:learner", "any")][6] == "-"


def test_a_user_preset_with_a_base_and_plain_numbers_simulates(tmp_path, capsys):
    (tmp_path / "gpu.yaml").write_text(
        "kind: gpu\npresets:\n  my-v100:\n    base: v100-sxm2\n    idle_w: 60\n"
        "    price_usd: 5000\n")
    argv = ["simulate", TRACE, "--system", SPEC, *SMALL, "--json"]
    assert main(argv) == 0
    base = __import__("json").loads(capsys.readouterr().out)
    assert main([*argv, "--presets", str(tmp_path), "--set", "gpu.preset=my-v100"]) == 0
    mine = __import__("json").loads(capsys.readouterr().out)
    gpu = {d["kind"]: d for d in mine["devices"]}["gpu"]
    assert gpu["preset"] == "my-v100"
    assert mine["energy_j"] > base["energy_j"]  # idles at 60 W, not the V100's 43 W
    assert mine["cost_usd"] == pytest.approx(base["cost_usd"] - 8 * (10_000 - 5000))  # 8 GPUs


def test_engine_reference_runs_and_agrees_on_a_small_run(capsys):
    import json

    times = {}
    for engine in ("fast", "reference"):
        assert main(["simulate", TRACE, "--system", SPEC, *SMALL, "--json",
                     "--engine", engine]) == 0
        times[engine] = json.loads(capsys.readouterr().out)["sim_time_s"]
    assert times["fast"] == pytest.approx(times["reference"], rel=0.01)


def test_engine_reference_with_bands_is_refused(capsys):
    line = _one_line_error(["simulate", TRACE, "--system", SPEC, *SMALL, "--engine",
                            "reference", "--bands", "2"], capsys)
    assert "--engine reference" in line and "--bands" in line


@pytest.mark.parametrize("code, cause", [(errno.ENOSPC, "the disk is full"),
                                         (errno.EROFS, "the file system is read-only")])
def test_a_timeline_that_cannot_be_written_is_one_line_and_leaves_the_old_file(
        tmp_path, capsys, monkeypatch, code, cause):
    import os

    timeline = tmp_path / "t.json"
    timeline.write_text("an earlier run's")

    def replace(src, dst):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(os, "replace", replace)
    line = _one_line_error(["simulate", TRACE, "--system", SPEC, *SMALL, "--timeline",
                            str(timeline), "--force"], capsys)
    assert line == f"rldse: error: {timeline}: cannot write: {cause}"
    assert timeline.read_text() == "an earlier run's"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temporary left


def test_ops_csv_prices_each_gemm_as_parts_cost_does(tmp_path, capsys):
    """The one pricing path, end to end: every linear row of ``--ops`` has the device time
    ``rldse parts cost`` gives for its shape, and the learner's calls are its operations ×
    its GEMMs (a 4-64-64-2 MLP's double-free DQN step: 3 forward GEMMs online, 3 target,
    3 weight-gradient and 2 input-gradient)."""
    import csv
    import json

    ops = tmp_path / "ops.csv"
    main(["simulate", "traces/dqn_cartpole_uniform.parquet", "--system",
          "examples/dgx1_like.yaml", "--set", "workload.env_steps=4000", "--ops", str(ops)])
    out = capsys.readouterr().out
    assert "top operators of the learner's phases" in out
    rows = list(csv.DictReader(ops.open()))
    linear = [r for r in rows if r["op"] == "linear"]
    assert linear and {r["part"] for r in rows} == {"gpu/v100-sxm2"}
    for r in linear:
        main(["parts", "cost", r["part"], "--op", "linear", "--shape", r["shape"], "--json"])
        cost = json.loads(capsys.readouterr().out)
        assert float(r["device_s"]) == pytest.approx(cost["device_s"], rel=1e-6)
    learns = [r for r in rows if r["phase"] == "learn"]
    updates = float(next(r for r in learns if r["op"] == "kernels")["count"])
    assert sum(float(r["count"]) for r in linear if r["phase"] == "learn") == \
        pytest.approx(11 * updates)
    assert sum(float(r["share"]) for r in learns) == pytest.approx(1.0)


def test_ops_on_a_system_without_a_gpu_role_is_refused(tmp_path, capsys):
    ops = tmp_path / "ops.csv"
    assert main(["simulate", "traces/dqn_cartpole_uniform.parquet", "--system",
                 "examples/cpu_only.yaml", "--set", "workload.env_steps=2000",
                 "--ops", str(ops)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ops: no role of this system runs on" in err
    assert not ops.exists()


def test_a_shared_machine_prints_its_itemised_cost_per_run_and_per_machine(capsys):
    """examples/4xl4.yaml: four runs on a bought 4×L4 box; the node's price item by item,
    then each run's figures and the machine's (four times the rate, power and $/h)."""
    box = str(ROOT / "examples" / "4xl4.yaml")
    assert main(["simulate", TRACE, "--system", box, "--set", "workload.env_steps=5000"]) == 0
    out = capsys.readouterr().out
    assert "one of 4 runs on the machine" in out
    items = out.split("node cost, item by item")[1].splitlines()
    for item in ("cpu", "gpu", "baseboard", "DRAM (GiB)", "NIC", "chassis", "power supply",
                 "the machine"):
        assert any(line.strip().startswith(f"{item} ") for line in items[1:10]), item
    rows = {line.split()[1]: line.split()[2:] for line in out.splitlines()
            if line.startswith(("  per run ", "  per machine "))}
    run, machine = rows["run"], rows["machine"]

    def number(text: str) -> float:
        return float(text.replace(",", ""))

    assert number(machine[0]) == pytest.approx(4 * number(run[0]), abs=4)  # env steps/s
    assert number(machine[2]) == pytest.approx(4 * number(run[2]), rel=1e-3)  # owned $/h
    assert machine[3] == run[3]  # steps per dollar: the same per run and per machine
