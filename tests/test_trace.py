"""Trace schema v3 (older schemas refused, saying how to re-capture): round trip, operators,
digest, and one-line errors for every kind of bad file."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rldse.workloads  # noqa: F401  (families declare their wait phases)
from rldse.errors import RldseError
from rldse.trace import OPS_COLUMNS, SCHEMA_VERSION, Trace, load_trace


def test_round_trip_keeps_every_column_dtype_and_meta(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    back = load_trace(path)
    assert list(back.ops.columns) == list(OPS_COLUMNS)
    for col in OPS_COLUMNS:
        assert back.ops[col].dtype == small_trace.ops[col].dtype, col
        np.testing.assert_array_equal(back.ops[col].to_numpy(), small_trace.ops[col].to_numpy(),
                                      err_msg=col)  # NaN (unknown cpu_s) equals NaN
    assert back.meta == small_trace.meta
    assert back.transitions.equals(small_trace.transitions)
    assert {c: str(t) for c, t in back.transitions.dtypes.items()} == {
        "state": "int32", "action": "int32", "reward": "float32", "next_state": "int32"}
    assert back.digest == small_trace.digest


def test_digest_changes_with_content(small_trace):
    other = Trace(ops=small_trace.ops.assign(items=small_trace.ops["items"] + 1),
                  meta=small_trace.meta)
    assert other.digest != small_trace.digest
    meta2 = small_trace.meta.model_copy(update={"seed": 4})
    assert Trace(ops=small_trace.ops, meta=meta2,
                 transitions=small_trace.transitions).digest != small_trace.digest


def test_digest_is_the_same_in_another_process_and_changes_with_an_op(small_trace,
                                                                      tmp_path):
    import os
    import subprocess
    import sys

    path = small_trace.save(tmp_path / "t.parquet")
    code = "import sys; from rldse.trace import load_trace; print(load_trace(sys.argv[1]).digest)"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True, env=env).stdout.strip()
    assert out == load_trace(path).digest == small_trace.digest
    ops = small_trace.ops.copy()
    phases = list(ops["phase"].cat.categories)
    row = int((ops["phase"] != phases[0]).idxmax())
    ops.loc[row, "phase"] = phases[0]  # one operation relabelled
    assert Trace(ops=ops, meta=small_trace.meta,
                 transitions=small_trace.transitions).digest != small_trace.digest
    # the category order is not content: reordering it keeps the digest
    reordered = small_trace.ops.assign(
        phase=small_trace.ops["phase"].cat.reorder_categories(phases[::-1]))
    assert Trace(ops=reordered, meta=small_trace.meta,
                 transitions=small_trace.transitions).digest == small_trace.digest


def test_phase_summary_totals(small_trace):
    summary = small_trace.phase_summary()
    assert summary["ops"].sum() == len(small_trace.ops)
    assert summary["flops"].sum() == small_trace.ops["flops"].sum()


def _rewrite(src, dst, table=None, meta=None, keep_digest=False):
    """``src`` rewritten by hand (not by rldse: without its digest, unless kept)."""
    pf = pq.read_table(src)
    table = table if table is not None else pf
    md = dict(pf.schema.metadata)
    if not keep_digest:
        md.pop(b"rldse.digest")
    if meta is not None:
        md[b"rldse.meta"] = json.dumps(meta).encode()
    pq.write_table(table.replace_schema_metadata(md), dst)


def _meta(path):
    return json.loads(pq.read_table(path).schema.metadata[b"rldse.meta"])


def test_not_parquet(tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_text("hello, I am a text file\n")
    with pytest.raises(RldseError, match="not a readable Parquet trace"):
        load_trace(bad)


def test_truncated(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    data = path.read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(RldseError, match="not a readable Parquet trace"):
        load_trace(cut)


def test_wrong_schema_version(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    meta = _meta(path) | {"schema_version": SCHEMA_VERSION + 1}
    _rewrite(path, tmp_path / "v3.parquet", meta=meta)
    with pytest.raises(RldseError, match=f"schema_version {SCHEMA_VERSION + 1} is not supported"):
        load_trace(tmp_path / "v3.parquet")


def test_missing_column(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    table = pq.read_table(path).drop(["touches"])
    _rewrite(path, tmp_path / "m.parquet", table=table)
    with pytest.raises(RldseError, match="column 'touches' is missing"):
        load_trace(tmp_path / "m.parquet")


def test_unknown_phase_names_row(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    table = pq.read_table(path)
    phases = table.column("phase").to_pylist()
    phases[7] = "teleport"
    table = table.set_column(table.schema.get_field_index("phase"), "phase",
                             pa.array(phases).dictionary_encode())
    _rewrite(path, tmp_path / "p.parquet", table=table)
    with pytest.raises(RldseError, match="unknown value 'teleport' at row 7"):
        load_trace(tmp_path / "p.parquet")


def test_wrong_dtype_and_negative_values(small_trace):
    with pytest.raises(RldseError, match="column 'items' must be numeric"):
        Trace(ops=small_trace.ops.assign(items="many"), meta=small_trace.meta)
    with pytest.raises(RldseError, match="column 'dur_s' is negative at row 0"):
        Trace(ops=small_trace.ops.assign(dur_s=-1.0), meta=small_trace.meta)


def test_bad_meta_field(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    meta = _meta(path)
    meta["host"]["cores"] = 0
    _rewrite(path, tmp_path / "h.parquet", meta=meta)
    with pytest.raises(RldseError, match=r"meta\.host\.cores: "):
        load_trace(tmp_path / "h.parquet")


def test_parquet_without_rldse_meta(tmp_path):
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "plain.parquet")
    with pytest.raises(RldseError, match="no rldse metadata"):
        load_trace(tmp_path / "plain.parquet")


#: saves a trace over an existing one and is SIGKILLed half-way through writing it
KILLED_SAVE = """
import os, signal, sys
import pyarrow.parquet as pq
from rldse.trace import load_trace
trace = load_trace(sys.argv[1])
def torn(table, where, **kw):
    with open(where, "wb") as fh:
        fh.write(b"PAR1 half a trace")
        fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)
pq.write_table = torn
trace.save(sys.argv[1])
"""


def test_a_save_killed_mid_write_leaves_the_old_trace_and_its_orphan_is_cleaned(small_trace,
                                                                                tmp_path):
    import subprocess
    import sys

    from rldse.files import clean_stale_temporaries

    path = small_trace.save(tmp_path / "t.parquet")
    before = path.read_bytes()
    proc = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(path)], capture_output=True)
    assert proc.returncode == -9, proc.stderr.decode()
    assert path.read_bytes() == before and load_trace(path).digest == small_trace.digest
    orphans = [p for p in tmp_path.iterdir() if p != path]
    assert len(orphans) == 1 and orphans[0].name.startswith(".t.parquet.")
    assert clean_stale_temporaries(tmp_path) == orphans
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_schema_is_refused_saying_how_to_recapture(small_trace, tmp_path, version):
    path = small_trace.save(tmp_path / "t.parquet")
    _rewrite(path, tmp_path / "old.parquet", meta=_meta(path) | {"schema_version": version},
             keep_digest=True)
    with pytest.raises(RldseError, match=f"a schema v{version} trace; this rldse reads v3 "
                                         ".*re-capture it"):
        load_trace(tmp_path / "old.parquet")


def test_unknown_cpu_time_leaves_the_digest_as_without_the_column(small_trace):
    """An import without CPU time (NaN) hashes as a table without the column."""
    ops = small_trace.ops.assign(cpu_s=float("nan"))
    with_nan = Trace(ops=ops, meta=small_trace.meta, transitions=small_trace.transitions)
    without = Trace(ops=ops.drop(columns="cpu_s"), meta=small_trace.meta,
                    transitions=small_trace.transitions)
    assert without.ops["cpu_s"].isna().all()
    assert with_nan.digest == without.digest


def test_operators_round_trip_and_are_validated(small_trace, tmp_path):
    from rldse.kernels.network_work import gemm
    from rldse.trace import operator_records

    work = gemm("fwd", 64, 4, 64) + gemm("dw", 64, 4, 64)
    records = operator_records("learn", 64, work)
    assert [(r.op, r.shape) for r in records] == [("linear", [1, 64, 4, 64]),
                                                  ("linear", [1, 4, 64, 64])]
    t = Trace(ops=small_trace.ops, meta=small_trace.meta.model_copy(
        update={"operators": records}), transitions=small_trace.transitions)
    assert t.digest != small_trace.digest
    back = load_trace(t.save(tmp_path / "t.parquet"))
    assert back.meta.operators == records
    bad = _meta(tmp_path / "t.parquet") | {"operators": [records[0].model_dump() | {"op": "fft"}]}
    _rewrite(tmp_path / "t.parquet", tmp_path / "bad.parquet", meta=bad, keep_digest=True)
    with pytest.raises(RldseError, match=r"operators\[0\]\.op.*'linear'"):
        load_trace(tmp_path / "bad.parquet")


def test_host_cost_takes_cpu_time_where_ops_compute_and_wall_where_they_wait(small_trace):
    from rldse.trace import host_cost_s

    n = 4
    ops = small_trace.ops.iloc[:n].assign(
        phase=["env_step", "rollout_add", "sync", "learn"], dur_s=[2.0] * n,
        cpu_s=[1.0, 1.0, 1.0, np.nan])
    meta = small_trace.meta
    al = meta.model_copy(update={"workload": "actor_learner"})
    np.testing.assert_array_equal(host_cost_s(ops, al), [1.0, 2.0, 2.0, 2.0])  # NaN: wall
    np.testing.assert_array_equal(host_cost_s(ops, meta), [1.0, 1.0, 1.0, 2.0])  # dqn sync
    gpu = meta.model_copy(update={"workload_info": {**meta.workload_info, "cuda": {}}})
    ops = ops.assign(cpu_s=1.0)
    np.testing.assert_array_equal(host_cost_s(ops, gpu), [1.0, 1.0, 1.0, 2.0])  # learn waits


def test_cpu_time_may_be_nan_but_not_negative(small_trace):
    with pytest.raises(RldseError, match="column 'cpu_s' is negative at row 0"):
        Trace(ops=small_trace.ops.assign(cpu_s=-1.0), meta=small_trace.meta)
    with pytest.raises(RldseError, match="column 'dur_s' is not finite"):
        Trace(ops=small_trace.ops.assign(dur_s=np.nan), meta=small_trace.meta)


def test_numpy_values_in_meta_become_plain_and_others_are_refused(small_trace, tmp_path):
    """A script's hyperparameters and network sizes are often numpy scalars (gymnasium's
    ``Discrete.n`` is a numpy.int64): they are stored as plain numbers, so the trace
    writes; an object with no plain form is refused, naming its key."""
    from pathlib import Path

    meta = small_trace.meta.model_dump()
    meta["hyperparameters"] = {"n": np.int64(3), "lr": np.float32(0.5),
                               "shape": (np.int64(4),), "grid": np.arange(2),
                               "out": Path("runs/a"), "nested": {"b": np.bool_(True)}}
    meta["workload_info"] = {**meta["workload_info"],
                             "layer_sizes": [np.int64(4), 64, np.int64(2)]}
    trace = Trace(ops=small_trace.ops, meta=type(small_trace.meta).model_validate(meta))
    hp = trace.meta.hyperparameters
    assert hp == {"n": 3, "lr": 0.5, "shape": [4], "grid": [0, 1], "out": "runs/a",
                  "nested": {"b": True}}
    assert type(hp["n"]) is int and type(hp["nested"]["b"]) is bool
    trace.save(tmp_path / "t.parquet")
    assert load_trace(tmp_path / "t.parquet").meta.workload_info["layer_sizes"] == [4, 64, 2]
    meta["hyperparameters"] = {"env": object()}
    with pytest.raises(RldseError) as err:
        type(small_trace.meta).model_validate(meta)
    assert err.value.where == "hyperparameters.env"


# ---- damaged files: the digest, rows no capture writes, metadata of the wrong type --------

def test_a_saved_trace_carries_its_digest_and_loads_with_it(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    stored = pq.read_table(path).schema.metadata[b"rldse.digest"].decode()
    assert len(stored) == 64 and stored.startswith(small_trace.digest)
    assert load_trace(path).digest == small_trace.digest


def test_a_trace_with_one_changed_byte_is_refused(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    data = bytearray(path.read_bytes())
    at = data.index(b'"seed":3')  # inside the metadata JSON: the file stays readable
    data[at + 7] = ord("4")
    flipped = tmp_path / "flipped.parquet"
    flipped.write_bytes(bytes(data))
    with pytest.raises(RldseError, match="modified after capture"):
        load_trace(flipped)


def test_a_table_changed_after_capture_is_refused_even_where_its_rows_are_valid(small_trace,
                                                                                tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    table = pq.read_table(path)
    ops = table.to_pandas()
    ops.loc[3, "dur_s"] *= 2  # still valid: only the digest can tell
    changed = pa.Table.from_pandas(ops, preserve_index=False)
    _rewrite(path, tmp_path / "c.parquet", table=changed, keep_digest=True)
    with pytest.raises(RldseError, match="modified after capture"):
        load_trace(tmp_path / "c.parquet")


def test_a_trace_without_its_digest_is_refused(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    _rewrite(path, tmp_path / "no-digest.parquet")
    with pytest.raises(RldseError, match="without its digest"):
        load_trace(tmp_path / "no-digest.parquet")


def test_duplicated_rows_are_refused(small_trace, tmp_path):
    import pandas as pd

    path = small_trace.save(tmp_path / "t.parquet")
    ops = pq.read_table(path).to_pandas()
    twice = pa.Table.from_pandas(pd.concat([ops, ops], ignore_index=True), preserve_index=False)
    _rewrite(path, tmp_path / "d.parquet", table=twice)
    with pytest.raises(RldseError, match=f"row {len(ops)} repeats an earlier row.*"
                                         f"{len(ops)} rows are duplicates"):
        load_trace(tmp_path / "d.parquet")


@pytest.mark.parametrize(("phase", "column", "value", "message"), [
    ("learn", "items", 0, "'items' is 0 at row 2 \\(phase 'learn'"),
    (None, "cpu_s", 0.0, "'cpu_s' is 0 on every row")])
def test_rows_that_did_no_work_are_refused(small_trace, tmp_path, phase, column, value,
                                           message):
    path = small_trace.save(tmp_path / "t.parquet")
    ops = pq.read_table(path).to_pandas()
    rows = ops["phase"] == phase if phase else slice(None)
    ops.loc[rows, column] = value
    if column == "cpu_s":  # 0.5 s of wall time: a CPU clock has ticked (_CPU_CLOCK_TICKS_S)
        ops["dur_s"] = 0.01
    _rewrite(path, tmp_path / "z.parquet", table=pa.Table.from_pandas(ops, preserve_index=False))
    with pytest.raises(RldseError, match=message):
        load_trace(tmp_path / "z.parquet")


@pytest.mark.parametrize("version", [True, 2.0, "2", None])
def test_a_schema_version_of_another_type_is_refused(small_trace, tmp_path, version):
    path = small_trace.save(tmp_path / "t.parquet")
    _rewrite(path, tmp_path / "v.parquet", meta=_meta(path) | {"schema_version": version})
    with pytest.raises(RldseError, match=f"schema_version {version!r} is not supported"):
        load_trace(tmp_path / "v.parquet")


def test_a_count_given_as_a_boolean_or_a_float_is_refused(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.parquet")
    for value in (True, 3.0):
        _rewrite(path, tmp_path / "s.parquet", meta=_meta(path) | {"seed": value})
        with pytest.raises(RldseError, match="meta.seed: "):
            load_trace(tmp_path / "s.parquet")


@pytest.mark.parametrize("depth", [65, 100_000])
def test_deeply_nested_metadata_is_one_line(small_trace, tmp_path, depth):
    path = small_trace.save(tmp_path / "t.parquet")
    text = json.dumps(_meta(path))[:-1] + ', "hyperparameters": ' + "[" * depth + "]" * depth + "}"
    md = dict(pq.read_table(path).schema.metadata)
    md[b"rldse.meta"] = text.replace('"hyperparameters": {', '"_x": {', 1).encode()
    md.pop(b"rldse.digest")
    pq.write_table(pq.read_table(path).replace_schema_metadata(md), tmp_path / "n.parquet")
    with pytest.raises(RldseError, match="nests deeper than 64 levels"):
        load_trace(tmp_path / "n.parquet")


def test_corrupt_transitions_are_one_line(small_trace, tmp_path):
    import base64

    path = small_trace.save(tmp_path / "t.parquet")
    md = dict(pq.read_table(path).schema.metadata)
    blob = base64.b64decode(md[b"rldse.transitions"])
    cut, zeroed = blob[:-4], blob[:40] + bytes(len(blob) - 40)  # OSError, ArrowInvalid
    for damaged in (base64.b64encode(cut), base64.b64encode(zeroed), b"not base64!", b""):
        md[b"rldse.transitions"] = damaged
        md.pop(b"rldse.digest", None)
        pq.write_table(pq.read_table(path).replace_schema_metadata(md), tmp_path / "b.parquet")
        with pytest.raises(RldseError, match="embedded transitions are unreadable"):
            load_trace(tmp_path / "b.parquet")
