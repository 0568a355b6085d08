"""Study files: a good one loads; each kind of bad one fails before any trial, in one line
naming the file and the key (the CLI turns RldseError into exit status 2)."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.search import load_study_file, run_study


def test_good_file_resolves_paths_space_and_outputs(write_study):
    path = write_study(constraints=["avg_power_w <= 1500", "gpu_memory_ok"])
    study = load_study_file(path)
    assert study.study_name == "study"  # the folder of a study.yaml
    assert study.out_dir == path.parent / "out"
    assert [d.path for d in study.search_space.dims] == ["workload.actors", "workload.cores",
                                                         "gpu.count"]
    assert study.search_space.grid_size() == 8 * 8 * 4
    assert study.directions == ["maximize"]
    assert study.loaded_trace.meta.workload == "stand_in"
    assert load_study_file(path).digest == study.digest


def test_other_file_names_get_their_own_out_folder(write_study):
    path = write_study()
    other = path.with_name("ratio.yaml")
    other.write_text(path.read_text())
    study = load_study_file(other)
    assert study.study_name == "ratio"
    assert study.out_dir == path.parent / "out" / "ratio"


def test_power_w_is_the_design_texts_name_for_average_power(write_study):
    study = load_study_file(write_study(constraints=["power_w <= 1500"]))
    assert study.parsed_constraints[0].names == ("avg_power_w",)


BAD = [
    ({"space": {"gpu.countt": {"int": [1, 2]}}}, "study.yaml: space.gpu.countt: unknown field"),
    ({"space": {"cpu.clokc_mhz": {"float": [2000, 3000]}}},
     "study.yaml: space.cpu.clokc_mhz: unknown field; did you mean 'clock_mhz'?"),
    ({"space": {"workload.actors": {"int": [8, 1]}}},
     "study.yaml: space.workload.actors: empty range [8, 1]"),
    ({"space": {"gpu.preset": {"choices": []}}}, "study.yaml: space.gpu.preset: empty range"),
    ({"space": {"gpu.count": {"int": [1, 100]}}}, "study.yaml: space.gpu.count: "),
    ({"space": {"gpu.preset": {"choices": ["a100-40g", "b900"]}}},
     "study.yaml: space.gpu.preset: unknown gpu preset 'b900'"),
    ({"space": {"tcam.arrays": {"int": [64, 128], "when": {"placement.replya": "tcam"}}}},
     "study.yaml: space.tcam.arrays.when: 'placement.replya'"),
    ({"objectives": [{"maximize": "steps_per_joul"}]},
     "study.yaml: objectives[0].maximize: unknown metric 'steps_per_joul'; did you mean "
     "'steps_per_joule'"),
    ({"objectives": [{"maximise": "steps_per_joule"}]},
     "study.yaml: objectives[0]: 'maximise' is not a direction (use maximize or minimize)"),
    ({"constraints": ["avg_powr_w <= 1500"]},
     "study.yaml: constraints[0]: unknown metric 'avg_powr_w'"),
    ({"constraints": ["avg_power_w == 1500"]}, "study.yaml: constraints[0]: "),
    ({"constraints": ["spec.gpu.cuont <= 4"]},
     "study.yaml: constraints[0]: 'spec.gpu.cuont': the system has no field 'gpu.cuont'"),
    ({"sampler": "annealing"}, "study.yaml: sampler.name: unknown sampler 'annealing'"),
    ({"sampler": {"name": "tpe", "options": {"n_startup": 5}}},
     "study.yaml: sampler.options.n_startup: unknown option of the tpe sampler"),
    ({"sampler": "grid", "space": {"cpu.clock_mhz": {"float": [2000, 3000]}}},
     "study.yaml: space.cpu.clock_mhz: the grid sampler needs a step"),
    ({"sampler": "cmaes", "objectives": [{"maximize": "steps_per_joule"},
                                         {"minimize": "cost_usd"}]},
     "study.yaml: sampler.name: 'cmaes' optimises one objective"),
    ({"trace": "missing.parquet"}, "study.yaml: trace: "),
    ({"base": {"cpu": {"preset": "xeon-platinum"}}}, "study.yaml: base: unknown cpu preset"),
    ({"budget": 10}, "study.yaml: budget: unknown field"),
    ({"space": {}}, "study.yaml: space: "),
    ({"constraints": ["avg_power_w"]},
     "study.yaml: constraints[0]: 'avg_power_w' is a number, not true or false"),
    ({"constraints": ["spec.gpu.count"]},
     "study.yaml: constraints[0]: 'spec.gpu.count' is a number, not true or false"),
    ({"space": {"gpu.count": {"int": [1, 4], "step": 1e12}}},
     "study.yaml: space.gpu.count: step 1e+12 is larger than the range [1, 4]"),
    ({"space": {"cpu.clock_mhz": {"float": [2000, 3000], "step": 1500}}},
     "study.yaml: space.cpu.clock_mhz: step 1500 is larger than the range"),
    ({"base": {"table": {"latency_csv": "/etc/passwd", "replay": "root", "learn": "root"}}},
     "study.yaml: base: table.latency_csv: '/etc/passwd' is outside the spec's folder"),
    ({"base": {"table": {"latency_csv": "../PT.csv", "replay": "CPU", "learn": "CPU"}}},
     "study.yaml: base: table.latency_csv: '../PT.csv' is outside the spec's folder"),
    ({"base": "empty.yaml"}, "empty.yaml: the file is empty: expected a system"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[m.split(": ")[1] for _, m in BAD])
def test_bad_file_fails_in_one_line_naming_the_key(write_study, change, message):
    path = write_study(**change)
    (path.parent / "empty.yaml").write_text("null\n")
    with pytest.raises(RldseError) as err:
        load_study_file(path)
    text = str(err.value)
    assert text.startswith(str(path.parent)) and message in text, text
    assert "\n" not in text
    assert err.value.exit_code == 2


def test_conditional_path_is_checked_with_its_condition_holding(write_study):
    path = write_study(base={"cpu": {"preset": "epyc-7742"},
                             "tcam": {"preset": "fefet-tcam-64", "arrays": 16}},
                       space={"placement.replay": {"choices": ["cpu", "tcam"]},
                              "tcam.arrays": {"int": [64, 1024], "log": True,
                                            "when": {"placement.replay": "tcam"}}})
    dims = load_study_file(path).search_space.dims
    assert dims[1].when == (("placement.replay", ("tcam",)),)


def test_a_cross_field_problem_of_some_points_is_left_to_the_trials(write_study):
    # gpu.count 0 with the learner on the GPU is invalid, but only at that point: the
    # file loads with the whole range, and the trials refuse that point
    dims = load_study_file(write_study(space={"gpu.count": {"int": [0, 4]}})).search_space.dims
    assert [(d.path, d.low, d.high) for d in dims] == [("gpu.count", 0, 4)]


@pytest.mark.parametrize("storage_key", ["cli", "file"])
def test_unreachable_storage_fails_naming_the_key(write_study, storage_key):
    url = "postgresql://rldse:secret@127.0.0.1:1/none"
    path = write_study(storage=url if storage_key == "file" else None)
    with pytest.raises(RldseError) as err:
        run_study(path, storage=url if storage_key == "cli" else None, progress=False)
    text = str(err.value)
    key = "--storage" if storage_key == "cli" else f"{path}: storage"
    assert text.startswith(f"{key} postgresql://rldse:***@127.0.0.1:1/none: cannot open"), text
    assert "secret" not in text and "\n" not in text


def test_a_study_needs_a_budget(write_study):
    path = write_study(trials=None)
    with pytest.raises(RldseError, match=r"study.yaml: trials: no budget"):
        run_study(path, progress=False)


def test_cli_exits_2_with_one_line(write_study, capsys):
    from rldse.cli import main

    path = write_study(space={"gpu.countt": {"int": [1, 2]}})
    assert main(["search", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rldse: error: {path}: space.gpu.countt: unknown field")
    assert "\n" not in err


def test_a_sqlite_storage_lives_beside_the_study_file_wherever_rldse_runs(write_study,
                                                                         tmp_path,
                                                                         monkeypatch):
    path = write_study(storage="sqlite:///trials.db", trials=2, sampler="random")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_study_file(path).storage_url == f"sqlite:///{path.parent / 'trials.db'}"
    run_study(path, progress=False)
    assert (path.parent / "trials.db").is_file() and list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("url", ["sqlite:///../x.db", "sqlite:////tmp/x.db",
                                 "sqlite:///"])
def test_a_sqlite_storage_outside_the_study_folder_is_refused(write_study, url):
    path = write_study(storage=url)
    with pytest.raises(RldseError) as err:
        load_study_file(path)
    text = str(err.value)
    assert text.startswith(f"{path}: storage: ") and "\n" not in text, text
    assert "outside the study folder" in text or "expected a database file" in text


def test_a_study_file_names_its_preset_directories(write_study):
    """`presets: [mypresets]` beside the file: a user preset with a base and two plain
    numbers is usable in the base and the space, in the run, with no --presets."""
    import yaml

    from rldse.models import presets
    from rldse.search import run_study
    from tests.search.conftest import BASE, SPACE

    path = write_study(base={**BASE, "gpu": {"preset": "my-a100", "count": 1}},
                       space={**SPACE, "gpu.preset": {"choices": ["my-a100", "a100-40g"]}},
                       presets=["mypresets"], trials=3)
    (path.parent / "mypresets").mkdir()
    (path.parent / "mypresets" / "gpu.yaml").write_text(yaml.safe_dump({
        "kind": "gpu", "presets": {"my-a100": {"base": "a100-40g", "mem_bw_gbs": 2000,
                                               "max_w": 250}}}))
    previous = presets.use_preset_dirs([])
    try:
        study = load_study_file(path)
        assert presets.preset_dirs() == (path.parent / "mypresets",)
        assert presets.load_part("gpu", "my-a100").mem_bw_gbs == 2000
        report = run_study(path, progress=False)
        assert report.best and report.finished_now == 3
        assert study.presets == ["mypresets"]
    finally:
        presets.use_preset_dirs(previous)


def test_a_missing_preset_directory_is_one_line(write_study):
    from rldse.models import presets

    path = write_study(presets=["nowhere"])
    previous = presets.use_preset_dirs([])
    try:
        with pytest.raises(RldseError, match=r"study\.yaml: presets\[0\]: nowhere: no such "
                                             r"directory"):
            load_study_file(path)
    finally:
        presets.use_preset_dirs(previous)


NO_GPU = {"cpu": {"preset": "epyc-7742"}, "workload": {"env_steps": 4096}}
ZERO_GPUS = {**NO_GPU, "gpu": {"preset": "a100-40g", "count": 0}}


@pytest.mark.parametrize(("base", "space", "message"), [
    (NO_GPU, {"placement.learn": {"choices": ["cpu", "gpu"]}},
     "study.yaml: space.placement.learn: choice 'gpu': the base has no gpu part and the "
     "space adds none, so every such point would be invalid"),
    (ZERO_GPUS, {"placement.learn": {"choices": ["cpu", "gpu"]}, "gpu.count": {"int": [0, 0]}},
     "choice 'gpu': the base has no gpu part and the space adds none"),
    (NO_GPU, {"placement.learn": {"choices": ["cpu", "fpga"]}},
     "study.yaml: space.placement.learn: choice 'fpga': a fpga part cannot run learn"),
    (NO_GPU, {"placement.q_update": {"choices": ["cpu", "pim"]}},
     "choice 'pim': stand_in programs never run q_update on pim"),
])
def test_a_placement_choice_no_point_can_run_is_refused_up_front(write_study, base, space,
                                                                  message):
    with pytest.raises(RldseError) as err:
        load_study_file(write_study(base=base, space=space))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_placement_choice_the_space_can_add_a_part_for_loads(write_study):
    path = write_study(base=ZERO_GPUS, space={"placement.learn": {"choices": ["cpu", "gpu"]},
                                           "gpu.count": {"int": [0, 2]}})
    assert [d.path for d in load_study_file(path).search_space.dims] == \
        ["placement.learn", "gpu.count"]
