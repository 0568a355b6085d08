"""Write a corpus of damaged inputs for the fuzz suite (tests/cli/test_fuzz_corpus.py).

    python scripts/make_fuzz_corpus.py OUT_DIR

Each input is a bundled trace (cut to its first rows, so a run that succeeds is quick)
with one thing broken: a workload_info value out of range, missing, null or of the wrong
type; an ops column at an extreme; the metadata not UTF-8; rows duplicated, a working
phase's items 0, CPU time 0 throughout, a byte changed after capture, a schema version of
another type, metadata nested 100,000 deep, the transitions blob damaged, a GEMM-curve
point of 0 or -1, an offline run's passes or dataset null; plus system specs with
booleans for numbers; plus containment cases (`containment_cases`: files a spec must
not read, passwords, study files that mean less than they say, outputs that exist) and
paths at the file system's limits (`filesystem_cases`: a name over 255 bytes, one whose
temporary would be, a path that is not UTF-8). Every file name says what was broken.
`corpus(out)` returns the runs (`Run`: name, argv, and what a refusal must say where the
input must be refused) the suite runs through the CLI, so the corpus and the commands that
exercise it stay in one place.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
TRACES = {"dqn": "dqn_cartpole_uniform.parquet", "ddpg": "ddpg_pendulum.parquet",
          "actor_learner": "actor_learner_cartpole_2.parquet",
          "tabular": "tabular_taxi.parquet"}
ROWS = 2000  # rows kept from each trace: a run that succeeds stays a fraction of a second
SYSTEM = ROOT / "examples" / "dgx1_like.yaml"
TRACE = str(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
#: a small valid spec and study (tests/cli/test_fuzz_files.py mutates them too)
SPEC = {"name": "fuzz", "cpu": {"preset": "xeon-silver-4215"}, "gpu": {"preset": "v100-sxm2"},
        "placement": {"learn": "gpu"}, "workload": {"learner": "sync"}}
STUDY = {"trace": TRACE, "base": dict(SPEC),
         "space": {"workload.batch_size": {"choices": [32, 64]},
                   "gpu.count": {"int": [1, 2]}},
         "objectives": [{"maximize": "steps_per_joule"}], "trials": 2, "seed": 0}
#: damage a run must refuse (exit 2, one line): an answer from it would be a silent change
MUST_REFUSE = ("-rows-", "-flipped", "-schema-version-", "-meta-nested", "-transitions-",
               "-gemm-curve-", "-null.parquet", "-meta-not-utf8", "-no-transitions")


class Run(NamedTuple):
    """One CLI run of the corpus: ``refused`` None where a result is as right as a refusal
    (it must then be physical), else a text the one line of its refusal must hold ('':
    any): a result would be a silent change."""

    name: str
    argv: list[str]
    refused: str | None = None

#: workload_info keys holding counts, per family (each gets 0, -1, huge, true, null, "x")
COUNTS = {"dqn": ["batch_size", "replay_capacity", "learn_every", "obs_dim", "n_params",
                  "transition_bytes", "target_sync", "learning_starts"],
          "ddpg": ["batch_size", "replay_capacity", "learn_every", "obs_dim",
                   "transition_bytes", "warmup_steps"],
          "actor_learner": ["actors", "envs_per_actor", "rollout_len", "epochs",
                            "minibatch_size", "obs_dim", "transition_bytes"],
          "tabular": ["n_states", "n_actions", "agents", "passes", "q_table_bytes"]}
LAYERS = {"dqn": ["layer_sizes"], "ddpg": ["actor_sizes", "critic_sizes"],
          "actor_learner": ["policy_sizes", "value_sizes"], "tabular": []}
BAD_VALUES = {"zero": 0, "neg": -1, "huge": 2**63 - 1, "true": True, "null": None,
              "text": "x", "float": 1e300}
#: ops columns set to an extreme on every row, or on one
OPS_DAMAGE = {"dur0": ("dur_s", 0.0, "all"), "iter_huge": ("iter", 2**62, "one"),
              "touches_1e300": ("touches", 1e300, "one"),
              "items_max": ("items", 2**63 - 1, "one"), "items0": ("items", 0, "all"),
              "flops_max": ("flops", 2**63 - 1, "one"), "bytes_max": ("bytes", 2**63 - 1, "one"),
              "start_neg": ("start_s", -1e300, "one")}


def _cut(family: str):
    from rldse.trace import Trace, load_trace

    t = load_trace(ROOT / "traces" / TRACES[family])
    stride = max(1, len(t.ops) // ROWS)  # rows from the whole run: every phase is there
    return Trace(ops=t.ops.iloc[::stride].reset_index(drop=True), meta=t.meta,
                 transitions=t.transitions)


def _with_info(trace, change):
    from rldse.trace import Trace

    meta = trace.meta.model_copy(deep=True)
    info = copy.deepcopy(meta.workload_info)
    change(info)
    meta.workload_info = info
    return Trace(ops=trace.ops, meta=meta, transitions=trace.transitions)


def _write_raw(ops, path: Path, blob: bytes, extra: dict[bytes, bytes] | None = None) -> Path:
    """Write a trace file by hand: the table and metadata as given, unchecked (no digest)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(ops, preserve_index=False)
    pq.write_table(table.replace_schema_metadata({b"rldse.meta": blob, **(extra or {})}), path)
    return path


def _damaged_rows(family: str, base, out: Path) -> list[Path]:
    """Rows no capture writes, written raw (the digest would refuse them first)."""
    import pandas as pd

    meta = base.meta.model_dump_json().encode()
    made = [_write_raw(pd.concat([base.ops, base.ops], ignore_index=True),
                       out / f"{family}-rows-duplicated.parquet", meta)]
    ops = base.ops.copy()
    ops["cpu_s"] = 0.0
    made.append(_write_raw(ops, out / f"{family}-rows-cpu0.parquet", meta))
    for phase in ("learn", "q_update"):
        if (base.ops["phase"] == phase).any():
            ops = base.ops.copy()
            ops.loc[ops["phase"] == phase, "items"] = 0
            made.append(_write_raw(ops, out / f"{family}-rows-{phase}-items0.parquet", meta))
    return made


def _damaged_meta(family: str, base, out: Path) -> list[Path]:
    """Metadata of the wrong type or shape, a GEMM curve with a bad point, a byte changed."""
    import json

    made = []
    raw = json.loads(base.meta.model_dump_json())
    for tag, version in {"true": True, "float": 2.0}.items():
        made.append(_write_raw(base.ops, out / f"{family}-schema-version-{tag}.parquet",
                               json.dumps(raw | {"schema_version": version}).encode()))
    deep = json.dumps(raw)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    made.append(_write_raw(base.ops, out / f"{family}-meta-nested.parquet", deep.encode()))
    for tag, rate in {"0": 0.0, "neg": -1.0}.items():
        curve = [list(p) for p in raw["host"]["gemm_curve"]]
        curve[0][4] = rate
        changed = raw | {"host": raw["host"] | {"gemm_curve": curve}}
        made.append(_write_raw(base.ops, out / f"{family}-gemm-curve-{tag}.parquet",
                               json.dumps(changed).encode()))
    saved = base.save(out / f"{family}-flipped.parquet")
    data = bytearray(saved.read_bytes())
    at = data.index(b'"seed":') + len(b'"seed":')  # the file stays readable: only the digest
    data[at] = ord("9") if data[at] != ord("9") else ord("8")
    saved.write_bytes(bytes(data))
    made.append(saved)
    return made


def make_traces(out: Path) -> list[Path]:
    import numpy as np

    from rldse.trace import Trace, _encode_frame, load_trace

    out.mkdir(parents=True, exist_ok=True)
    made = []
    for family in TRACES:
        base = _cut(family)
        made.append(base.save(out / f"{family}-ok.parquet"))
        for key in COUNTS[family] + LAYERS[family]:
            for tag, value in BAD_VALUES.items():
                t = _with_info(base, lambda i, k=key, v=value: i.__setitem__(k, v))
                made.append(t.save(out / f"{family}-{key}-{tag}.parquet"))
            t = _with_info(base, lambda i, k=key: i.pop(k, None))
            made.append(t.save(out / f"{family}-{key}-missing.parquet"))
        for key in LAYERS[family]:
            t = _with_info(base, lambda i, k=key: i.__setitem__(k, []))
            made.append(t.save(out / f"{family}-{key}-empty.parquet"))
        for tag, (col, value, where) in OPS_DAMAGE.items():
            ops = base.ops.copy()
            arr = ops[col].to_numpy().copy().astype(np.float64 if isinstance(value, float)
                                                    else ops[col].dtype)
            if where == "all":
                arr[:] = value
            else:
                arr[len(arr) // 2] = value
            ops[col] = arr
            try:
                t = Trace(ops=ops, meta=base.meta, transitions=base.transitions)
            except Exception:  # refused already when built: write the table raw
                _write_raw(ops, out / f"{family}-ops-{tag}.parquet",
                           base.meta.model_dump_json().encode())
                made.append(out / f"{family}-ops-{tag}.parquet")
                continue
            made.append(t.save(out / f"{family}-ops-{tag}.parquet"))
        one = Trace(ops=base.ops.iloc[:1].copy(), meta=base.meta, transitions=base.transitions)
        made.append(one.save(out / f"{family}-one-row.parquet"))
        step = base.ops[base.ops["phase"] == "env_step"].iloc[:1].reset_index(drop=True)
        one = Trace(ops=step, meta=base.meta, transitions=base.transitions)
        made.append(one.save(out / f"{family}-one-row-env-step.parquet"))
        made += _damaged_rows(family, base, out) + _damaged_meta(family, base, out)
        blob = base.meta.model_dump_json().encode().replace(b'"env_id":"', b'"env_id":"\xff\xfe')
        _write_raw(base.ops, out / f"{family}-meta-not-utf8.parquet", blob)
        made.append(out / f"{family}-meta-not-utf8.parquet")
    tab = _cut("tabular")
    offline = _with_info(tab, lambda i: i.update(mode="offline", passes=1, passes_per_round=1,
                                                  workers=1, dataset_transitions=0))
    made.append(offline.save(out / "tabular-offline-no-transitions.parquet"))
    import base64

    shipped = load_trace(ROOT / "traces" / "tabular_taxi_offline_7.parquet")
    for key in ("passes", "passes_per_round", "dataset_transitions"):
        t = _with_info(shipped, lambda i, k=key: i.__setitem__(k, None))
        made.append(t.save(out / f"tabular-offline-{key}-null.parquet"))
    blob = base64.b64decode(_encode_frame(shipped.transitions))
    meta = shipped.meta.model_dump_json().encode()
    for tag, damaged in {"cut": blob[:-4], "zeroed": blob[:40] + bytes(len(blob) - 40)}.items():
        made.append(_write_raw(shipped.ops, out / f"tabular-transitions-{tag}.parquet", meta,
                               {b"rldse.transitions": base64.b64encode(damaged)}))
    empty = Trace(ops=tab.ops.iloc[:0].copy(), meta=tab.meta, transitions=tab.transitions)
    made.append(empty.save(out / "tabular-no-rows.parquet"))
    return sorted(set(made))


SPEC_DAMAGE = {"count-true": ("gpu", "count", True), "clock-true": ("cpu", "clock_mhz", True),
               "cores-false": ("cpu", "cores", False), "count-neg": ("gpu", "count", -1),
               "count-1e300": ("gpu", "count", 1e300)}


def make_specs(out: Path) -> list[Path]:
    import yaml

    base = yaml.safe_load(SYSTEM.read_text())
    made = []
    for tag, (part, key, value) in SPEC_DAMAGE.items():
        raw = copy.deepcopy(base)
        raw.setdefault(part, {})[key] = value
        path = out / f"spec-{tag}.yaml"
        path.write_text(yaml.safe_dump(raw))
        made.append(path)
    for tag, text in {"empty": "", "not-mapping": "- 1\n- 2\n", "tab": "a:\n\t- b\n",
                      "binary": "\xff\xfe"}.items():
        path = out / f"spec-{tag}.yaml"
        path.write_bytes(text.encode("latin-1"))
        made.append(path)
    return made


def corpus(out: Path) -> list[Run]:
    """Make every input under `out`; the runs that exercise them."""
    runs: list[Run] = []
    for path in make_traces(out / "traces"):
        refused = "" if any(tag in path.name for tag in MUST_REFUSE) else None
        runs.append(Run(path.name, ["simulate", str(path), "--system", str(SYSTEM)], refused))
        if any(tag in path.name for tag in ("-ok", "-ops-", "-one-row", "-meta-", "-no-",
                                            "-rows-", "-flipped", "-schema-")):
            # check-replay passes the same door as simulate: its own cases are the ops
            runs.append(Run(f"check-replay {path.name}", ["check-replay", str(path)], refused))
    ok = out / "traces" / "dqn-ok.parquet"
    for path in make_specs(out):
        runs.append(Run(path.name, ["simulate", str(ok), "--system", str(path)], ""))
    for knob in ("env_steps", "batch_size", "replay_capacity", "cores"):
        for value in ("true", "false", "0", "-1", "1e300", "nan", "inf"):
            runs.append(Run(f"--set {knob}={value}", ["simulate", str(ok), "--system",
                                                      str(SYSTEM), "--set",
                                                      f"workload.{knob}={value}"]))
    for value in ("true", "0", "-3", "x"):
        runs.append(Run(f"--set gpu.count={value}", ["simulate", str(ok), "--system",
                                                     str(SYSTEM), "--set", f"gpu.count={value}"]))
    runs += [Run(name, argv, text) for name, (argv, text) in
             containment_cases(out / "containment").items()]
    return runs + filesystem_cases(out / "paths")


# ---- containment: one line and exit 2, nothing read outside, written or leaked --------

#: what a file a spec must not read holds (as the host's password file does)
OUTSIDE_TEXT = "root:$6$SaltSecret$HashHash:19500:0:99999:7:::\n"
PASSWORD = "S3cr@t:pa/ss%word#Q?x&y=1"


def _study(folder: Path, **changes) -> str:
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump({**STUDY, **changes}, sort_keys=False))
    return str(path)


def containment_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (argv, a text the one line must hold); files set up under ``tmp``. None of
    them may write a file or print what it must not read (tests/cli/test_fuzz_files.py)."""
    import yaml

    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "secret.txt").write_text(OUTSIDE_TEXT)
    spec = tmp / "spec"
    spec.mkdir()
    (spec / "link.csv").symlink_to(tmp / "secret.txt")
    table = "table: {{latency_csv: '{}', replay: root, learn: root}}\n" \
            "placement: {{replay: table, learn: table}}\n"
    for name, csv in (("absolute", tmp / "secret.txt"), ("dotdot", "../secret.txt"),
                      ("symlink", "link.csv")):
        (spec / f"{name}.yaml").write_text(table.format(csv))
    (spec / "null.yaml").write_text("null\n")
    (spec / "empty.yaml").write_text("")
    (spec / "ok.yaml").write_text(yaml.safe_dump(SPEC))
    (tmp / "zen" / "zen").mkdir(parents=True)
    (tmp / "zen" / "zen" / "study.yaml").write_text("module: this.x\n")
    for name in ("t.json", "rows.csv", "checked.csv", "out.txt"):
        (tmp / name).write_text("an earlier run's")
    (tmp / "presets").mkdir()
    (tmp / "presets" / "myhost.yaml").write_text("an earlier run's")
    sim = ["simulate", TRACE, "--set", "workload.env_steps=300", "--system"]
    url = f"postgresql://rldse:{PASSWORD}@127.0.0.1:1/db"
    cases = {f"latency_csv {name}": ([*sim, str(spec / f"{name}.yaml")],
                                     "table.latency_csv: ")
             for name in ("absolute", "dotdot", "symlink")}
    cases.update({
        "base latency_csv": (["search", _study(tmp / "s1", base={"table": {
            "latency_csv": str(tmp / "secret.txt"), "replay": "root", "learn": "root"}})],
            "table.latency_csv: "),
        "null system file": ([*sim, str(spec / "null.yaml")], "the file is empty"),
        "empty system file": ([*sim, str(spec / "empty.yaml")], "the file is empty"),
        "module this.x": (["study", "list", "--root", str(tmp / "zen")], "no module 'this.x'"),
        "password --storage": (["search", _study(tmp / "s2"), "--storage", url],
                               "cannot tell where the URL's password ends"),
        "password storage:": (["search", _study(tmp / "s3", storage=url.replace(
            "rldse:", "rldse@h/db?password="))], "cannot tell where the URL's password ends"),
        "bare metric": (["search", _study(tmp / "s4", constraints=["avg_power_w"])],
                        "is a number, not true or false"),
        "step over range": (["search", _study(tmp / "s5", space={
            "gpu.count": {"int": [1, 4], "step": 1e12}})], "larger than the range"),
        "timeline exists": ([*sim, str(spec / "ok.yaml"), "--timeline", str(tmp / "t.json")],
                            "exists (add --force"),
        "validate --csv exists": (["validate", "external", "--csv", str(tmp / "rows.csv")],
                                  "exists (add --force"),
        "validate --checked exists": (["validate", "external", "--checked",
                                       str(tmp / "checked.csv")], "exists (add --force"),
        "calibrate -o exists": (["calibrate", "cpu", "--name", "myhost", "-o",
                                 str(tmp / "presets"), "--quick"], "exists (add --force"),
        "trace export exists": (["trace", "export", "--format", "swiftrl",
                                 str(ROOT / "traces" / "tabular_taxi.parquet"), "-o",
                                 str(tmp / "out.txt")], "exists (add --force"),
        "search --workers 100000": (["search", _study(tmp / "s6"), "--workers", "100000"],
                                    "more than this host's"),
        "grid of 4.3e9 points": (["search", _study(tmp / "s7", sampler="grid", space={
            "workload.batch_size": {"int": [1, 65536]}, "workload.cores": {"int": [1, 65536]}})],
            "the grid has 4,294,967,296 points"),
    })
    return cases


def filesystem_cases(tmp: Path) -> list[Run]:
    """Paths at the file system's limits: a name over the 255 bytes a name may take (one
    line), a 245-byte one whose temporary would be over it (written: the temporary is the
    one shortened), a path that is not UTF-8 where a Parquet file goes (one line)."""
    tmp.mkdir(parents=True, exist_ok=True)
    spec = tmp / "spec.yaml"
    import yaml

    spec.write_text(yaml.safe_dump(SPEC))
    sim = ["simulate", TRACE, "--set", "workload.env_steps=300", "--system", str(spec)]
    bad = tmp / os.fsdecode(b"not-utf8-\xff")
    bad.mkdir()
    return [
        Run("--timeline name of 300 bytes", [*sim, "--timeline", str(tmp / ("t" * 295 +
                                                                            ".json"))],
            "over the 255 bytes"),
        Run("trace export -o name of 300 bytes", [
            "trace", "export", "--format", "swiftrl",
            str(ROOT / "traces" / "tabular_taxi.parquet"), "-o", str(tmp / ("o" * 296 + ".txt"))],
            "over the 255 bytes"),
        Run("--timeline name of 250 bytes", [*sim, "--timeline",
                                             str(tmp / ("t" * 245 + ".json"))]),
        Run("capture -o not UTF-8", ["capture", "dqn", "--env", "CartPole-v1", "--steps",
                                     "100", "-o", str(bad / "c.parquet")], "not UTF-8"),
        Run("search in a folder not UTF-8", ["search", _study(bad / "study")], "not UTF-8"),
    ]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/make_fuzz_corpus.py OUT_DIR")
    runs = corpus(Path(sys.argv[1]))
    print(f"{len(runs)} runs over the inputs in {sys.argv[1]} "
          f"({sum(r.refused is not None for r in runs)} must be refused)")
