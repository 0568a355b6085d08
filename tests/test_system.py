"""SystemSpec → ResolvedSystem: the digest covers resolved numbers, knobs are the family's
and default to the trace's, placements are checked against kinds and families."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rldse.cli import main
from rldse.errors import RldseError
from rldse.models import presets
from rldse.models.spec import Param
from rldse.search.cache import ResultCache
from rldse.sim import simulate
from rldse.system import load_spec, parse_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[1]
PPO = str(ROOT / "traces" / "actor_learner_cartpole_2.parquet")
DQN = str(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
TAXI = str(ROOT / "traces" / "tabular_taxi.parquet")
DGX = str(ROOT / "examples" / "dgx1_like.yaml")
SHORT = ["--set", "workload.env_steps=2000"]


def _edited_gpu_presets(monkeypatch, field: str, factor: float) -> None:
    """The gpu presets as if their YAML file had `field` multiplied by `factor`."""
    defaults, gpu_presets = presets._read_kind("gpu")
    edited = {}
    for name, preset in gpu_presets.items():
        old = preset.params[field]
        params = {**preset.params, field: Param(old.value * factor, old.unit, old.source,
                                                old.range and (old.range[0], old.range[1] * factor))}
        edited[name] = replace(preset, params=params)
    real = presets._read_kind
    monkeypatch.setattr(presets, "_read_kind",
                        lambda kind: (defaults, edited) if kind == "gpu" else real(kind))


def test_editing_a_preset_number_changes_the_digest_and_misses_the_cache(monkeypatch, tmp_path):
    trace = load_trace(DQN)
    spec = load_spec(DGX, {"workload.env_steps": 2000})
    before = resolve(spec, trace)
    cache = ResultCache(tmp_path / "cache.sqlite")
    result = simulate(trace, before)
    cache.put(result)
    assert cache.get(trace.digest, before.digest, 0) is not None
    _edited_gpu_presets(monkeypatch, "dispatch_s", 10.0)
    after = resolve(spec, trace)
    assert spec.digest == load_spec(DGX, {"workload.env_steps": 2000}).digest  # as written
    assert after.digest != before.digest
    assert cache.get(trace.digest, after.digest, 0) is None
    assert simulate(trace, after).sim_time_s > result.sim_time_s


def test_resolved_digest_is_stable_and_covers_knobs():
    trace = load_trace(DQN)
    a = resolve(load_spec(DGX), trace)
    assert a.digest == resolve(load_spec(DGX), trace).digest
    assert a.digest != resolve(load_spec(DGX, {"workload.batch_size": 128}), trace).digest
    assert a.knobs.batch_size == trace.meta.workload_info["batch_size"]  # as in the trace


def _json(argv: list[str], capsys) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_unset_actors_are_the_traces(capsys):
    base = ["simulate", PPO, "--system", DGX, "--json", *SHORT]
    unset = _json(base, capsys)
    two = _json([*base, "--set", "workload.actors=2"], capsys)
    assert unset == two
    assert resolve(load_spec(DGX), load_trace(PPO)).knobs.actors == 2


@pytest.mark.parametrize("trace,setting,needle", [
    (PPO, "workload.tasklets=16", "workload.tasklets: not a knob of actor_learner traces"),
    (PPO, "workload.learn_every=4", "workload.learn_every: not a knob of actor_learner traces"),
    (TAXI, "workload.actors=64", "workload.actors: not a knob of tabular traces"),
    (PPO, "placement.replay=tcam", "placement.replay:"),
    (DQN, "placement.q_update=pim", "placement.q_update:"),
    (DQN, "placement.replay=tpu", "placement.replay: unknown part kind 'tpu'"),
    (PPO, "placement.protocol=async", "placement.protocol: actor_learner programs have one"),
])
def test_knobs_and_placements_a_family_does_not_use_are_refused(trace, setting, needle, capsys,
                                                               tmp_path):
    system = DGX
    if trace == TAXI:  # DGX sets an async learner, which tabular programs have not either
        system = tmp_path / "cpu.yaml"
        system.write_text("cpu: {preset: epyc-7742}\n")
    assert main(["simulate", trace, "--system", str(system), "--set", setting]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err


def test_count_is_only_for_countable_kinds():
    with pytest.raises(RldseError, match="system.cpu.count: a system holds one cpu part"):
        resolve(parse_spec({"cpu": {"preset": "epyc-7742", "count": 2}}), load_trace(DQN))


def test_fpga_replay_runs_through_the_generic_replay_role():
    trace = load_trace(DQN)
    spec = parse_spec({"cpu": {"preset": "xeon-gold-6326"} if "xeon-gold-6326" in
                       presets.list_presets()["name"].tolist() else {"preset": "epyc-7742"},
                       "fpga": {"preset": "alveo-u250"},
                       "placement": {"replay": "fpga"}, "workload": {"env_steps": 2000}})
    result = simulate(trace, spec)
    fpga = next(d for d in result.devices if d.kind == "fpga")
    assert fpga.busy_s > 0
    phases = {(p.worker, p.phase, p.device) for p in result.phases}
    assert ("learner", "replay_sample", "fpga") in phases


def test_a_set_flag_is_blamed_not_the_file(tmp_path):
    """The file alone is valid, so an error the override makes names the flag."""
    from rldse.system import load_spec

    spec = tmp_path / "s.yaml"
    spec.write_text("cpu: {preset: host}\n")
    with pytest.raises(RldseError) as info:
        load_spec(spec, {"placment.replay": "tcam"})
    assert str(info.value).startswith("--set placment.replay: placment: unknown field; "
                                      "did you mean 'placement'?")
    with pytest.raises(RldseError, match=r"^--set gpu: expected a mapping of fields \(got 3\)$"):
        load_spec(spec, {"gpu": 3})
    spec.write_text("cpu: {preset: host}\nplacment: {}\n")
    with pytest.raises(RldseError, match=f"^{spec}: placment: unknown field"):
        load_spec(spec, {"gpu.count": 2})


def test_misspelt_part_field_suggests_section_fields(small_trace):
    from rldse.system import SystemSpec, resolve

    spec = SystemSpec.model_validate({"gpu": {"preset": "v100-sxm2", "countt": 2},
                                      "placement": {"learn": "gpu"}})
    with pytest.raises(RldseError, match=r"^system\.gpu\.countt: unknown field; did you mean "
                                         r"'count'"):  # first: the closest (then sm_count)
        resolve(spec, small_trace)


@pytest.mark.parametrize("path", ["gpu.count", "cpu.clock_mhz", "workload.batch_size",
                                  "workload.env_steps", "price_usd_per_hour"])
def test_a_boolean_is_not_a_number(path, capsys):
    """YAML's true was taken as 1 for every numeric field and knob."""
    from rldse.cli import main
    root = Path(__file__).resolve().parents[1]
    code = main(["simulate", str(root / "traces" / "dqn_cartpole_uniform.parquet"), "--system",
                 str(root / "examples" / "dgx1_like.yaml"), "--set", f"{path}=true"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and path in err[0]


PT = ",RP-update,RP-insert,RP-sample,LN\nCPU,0.002,0.0013,0.03,0.6\n"
TABLE_SPEC = ("table: {{latency_csv: '{csv}', replay: CPU, learn: CPU}}\n"
              "placement: {{replay: table, learn: table}}\n")


@pytest.fixture
def outside(tmp_path):
    """A spec folder and a table outside it (as the host's files are)."""
    (tmp_path / "spec").mkdir()
    (tmp_path / "PT.csv").write_text(PT)
    return tmp_path


@pytest.mark.parametrize("csv", ["{root}/PT.csv", "../PT.csv", "link.csv", "sub/../../PT.csv"])
def test_a_spec_reads_no_data_file_outside_its_folder(outside, csv):
    """Absolute paths, ../ and symbolic links out are refused, naming the field."""
    (outside / "spec" / "link.csv").symlink_to(outside / "PT.csv")
    spec = outside / "spec" / "system.yaml"
    spec.write_text(TABLE_SPEC.format(csv=csv.format(root=outside)))
    with pytest.raises(RldseError, match=r"system\.yaml: table\.latency_csv: '.*' is outside "
                                         r"the spec's folder"):
        load_spec(spec)


def test_a_data_file_beside_the_spec_or_given_with_set_is_read(outside, monkeypatch, capsys):
    (outside / "spec" / "PT.csv").write_text(PT)
    spec = outside / "spec" / "system.yaml"
    spec.write_text(TABLE_SPEC.format(csv="PT.csv"))
    assert load_spec(spec).table.latency_csv == str(outside / "spec" / "PT.csv")
    monkeypatch.chdir(outside)  # a --set path is the user's: from the working folder
    given = load_spec(spec, {"table.latency_csv": "PT.csv"})
    assert given.table.latency_csv == str(outside / "PT.csv")
    assert main(["simulate", DQN, "--system", str(spec), "--set", "workload.env_steps=300",
                 "--set", f"table.latency_csv={outside / 'PT.csv'}"]) == 0
    assert "simulated" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["", "null\n", "# only a comment\n", "~\n"])
def test_an_empty_system_file_is_one_line(tmp_path, capsys, text):
    spec = tmp_path / "system.yaml"
    spec.write_text(text)
    assert main(["simulate", DQN, "--system", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "system.yaml: the file is empty" in err
