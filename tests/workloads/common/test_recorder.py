"""Recorder: bias calibration, corrected durations, multi-worker merge."""

from __future__ import annotations

import time

from rldse.trace import OPS_COLUMNS
from rldse.workloads.common.recorder import NullRecorder, Recorder, merge_frames


def test_bias_is_small_and_removed():
    rec = Recorder("host")
    assert 0 < rec.overhead_ns < 5_000  # an empty record costs well under 5 µs
    for i in range(200):
        t0 = rec.now()
        rec.add("env_step", t0, i)
    df = rec.frame()
    # empty records, corrected: the median must be ~0 (within one clock read's jitter)
    assert df["dur_s"].median() * 1e9 < 0.5 * rec.overhead_ns + 50


def test_measures_known_sleep():
    """At least the sleep, at most the interval around it measured apart (a busy host may
    oversleep by any amount: no fixed upper bound)."""
    rec = Recorder("host")
    outer = time.perf_counter()
    t0 = rec.now()
    time.sleep(0.02)
    rec.add("learn", t0, 0, items=32, flops=10, bytes=20, touches=3)
    outer = time.perf_counter() - outer
    row = rec.frame().iloc[0]
    assert 0.02 <= row["dur_s"] <= outer
    assert (row["items"], row["flops"], row["bytes"], row["touches"]) == (32, 10, 20, 3)


def test_frame_columns_and_origin():
    rec = Recorder("learner")
    t0 = rec.now()
    rec.add("sync", t0, 5, bytes=100, dtype="none")
    df = rec.frame()
    assert list(df.columns) == list(OPS_COLUMNS)
    assert df.loc[0, "worker"] == "learner" and df.loc[0, "start_s"] >= 0


def test_merge_orders_by_start_time():
    origin = time.perf_counter_ns()
    a = Recorder("actor/0", origin_ns=origin, overhead_ns=0)
    b = Recorder("actor/1", origin_ns=origin, overhead_ns=0)
    for i in range(3):
        for rec in (a, b):
            t0 = rec.now()
            rec.add("env_step", t0, i)
    merged = merge_frames([a.frame(), b.frame()])
    assert merged["start_s"].is_monotonic_increasing
    assert merged["worker"].tolist() == ["actor/0", "actor/1"] * 3


def test_null_recorder_records_nothing():
    rec = NullRecorder()
    rec.add("env_step", rec.now(), 0, items=1)
    assert not rec.enabled


def test_cpu_time_is_recorded_beside_wall_time():
    """A computing row keeps CPU time (> 0, never above its wall time); a sleep, bracketed
    by CPU clock reads as the loops bracket their waits, keeps little of its wall time."""
    import numpy as np

    rec = Recorder("host")
    a = np.ones((64, 64))
    for i in range(50):
        t0 = rec.now()
        for _ in range(20):
            a = a @ a / 64.0
        rec.add("learn", t0, i)
    rec.sample_cpu()
    t0 = rec.now()
    time.sleep(0.02)
    rec.add("sync", t0, 0, dtype="none")
    rec.sample_cpu()
    df = rec.frame()
    learn, sync = df[df["phase"] == "learn"], df[df["phase"] == "sync"].iloc[0]
    assert learn["cpu_s"].notna().all() and (learn["cpu_s"] > 0).all()
    assert (learn["cpu_s"] <= learn["dur_s"]).all()
    assert sync["cpu_s"] < 0.5 * sync["dur_s"]


def test_rows_from_another_process_keep_their_cpu_fractions():
    import numpy as np

    rec = Recorder("host")
    row = ("actor/0", "env_step", 0, rec.origin_ns, 4000 + int(rec.overhead_ns), 1, 0, 0, 0,
           "fp64")
    rec.add_foreign([row], np.array([0.25]))
    df = rec.frame()
    assert df["cpu_s"].iloc[0] == df["dur_s"].iloc[0] * 0.25


def test_a_row_that_reads_the_cpu_clock_ends_after_the_read():
    # the OS may switch the thread out on the way back from the read (rldse.cpu_clock):
    # that stall must be in the row's wall time, and the window after it must not own it
    rec = Recorder("host")
    rec.cpu.next_ns = 0  # the next row samples
    t0 = rec.now()
    rec.add("learn", t0, 0)
    start, raw_dur = rec.rows[-1][3], rec.rows[-1][4]
    assert start + raw_dur == rec.cpu.wall_ns[-1]  # the stamp after the read
    assert rec.cpu.cpu_ns[-1] == rec.cpu.cpu_ns[-2]  # no CPU time between the stamps


def test_work_gives_the_rows_counts_and_one_operator_list_per_kind():
    """A row recorded with its Work carries its flops and bytes; the trace's operators list
    that Work's once per phase, items and flops (a 4-64-2 MLP's forward: two GEMMs by
    shape, the bias adds and ReLU as one element-wise total)."""
    from rldse.kernels.mlp import forward_work

    rec = Recorder("host")
    work = forward_work([4, 64, 2], 1)
    for i in range(3):
        rec.add("act", rec.now(), i, items=1, work=work)
    assert {r[6:8] for r in rec.rows} == {(work.flops, work.bytes)}
    ops = rec.operators()
    assert [(o.op, o.shape, o.count) for o in ops] == [
        ("linear", [1, 1, 4, 64], 1), ("linear", [1, 1, 64, 2], 1),
        ("elementwise", [3, 4 * (2 * 64 + 64 + 2 * 64) + 4 * (2 * 2 + 2), 2 * 64 + 2], 1)]
    assert {(o.phase, o.items, o.flops) for o in ops} == {("act", 1, work.flops)}
