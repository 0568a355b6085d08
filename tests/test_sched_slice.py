"""The capture's scheduler slice: its bookkeeping against a fake kernel (no real
sched_setattr, so the tests hold on any OS and kernel), and where the trace keeps it."""

from __future__ import annotations

import argparse
import errno

import pytest

from rldse import sched_slice
from rldse.sched_slice import SchedSlice, SliceRequest, active_slice, longer_slice

DEFAULT_NS = 1_400_000


class FakeKernel:
    """sched_getattr / sched_setattr of one thread: (size, policy, flags, nice, priority,
    runtime, deadline, period); a custom slice clamped to 0.1-100 ms as Linux 6.12+ does,
    or ignored (reads back 0) as older kernels do."""

    available = True

    def __init__(self, policy: int = 0, nice: int = 0, slices: bool = True,
                 refuse: int | None = None) -> None:
        self.attr = (48, policy, 0, nice, 0, DEFAULT_NS if slices else 0, 0, 0)
        self.slices, self.refuse = slices, refuse
        self.calls: list[tuple[int, ...]] = []

    def get(self) -> tuple[int, ...]:
        return self.attr

    def set(self, attr: tuple[int, ...]) -> None:
        if self.refuse is not None:
            raise OSError(self.refuse, "Operation not permitted")
        self.calls.append(attr)
        runtime = attr[5]
        if not self.slices:
            runtime = 0
        elif runtime == 0:
            runtime = DEFAULT_NS
        else:
            runtime = min(max(runtime, 100_000), 100_000_000)
        self.attr = (48, attr[1], 0, attr[3], 0, runtime, 0, 0)


@pytest.fixture
def kernel(monkeypatch):
    def install(**kwargs) -> FakeKernel:
        fake = FakeKernel(**kwargs)
        monkeypatch.setattr(sched_slice, "_syscalls", fake)
        return fake
    return install


def test_a_granted_slice_keeps_policy_and_nice_and_is_put_back(kernel):
    fake = kernel(policy=3, nice=5)  # SCHED_BATCH at nice 5, as the user started it
    with longer_slice(30_000_000) as got:
        assert got == SchedSlice(asked_ns=30_000_000, got_ns=30_000_000)
        assert fake.attr[1] == 3 and fake.attr[3] == 5 and fake.attr[5] == 30_000_000
        assert active_slice() == got
    assert fake.calls[-1][5] == 0 and fake.attr == (48, 3, 0, 5, 0, DEFAULT_NS, 0, 0)
    assert active_slice() is None


def test_a_clamped_slice_says_so(kernel):
    kernel()
    with longer_slice(500_000_000) as got:
        assert got.got_ns == 100_000_000 and "clamped" in got.note
        assert "got 100 ms" in got.describe()


@pytest.mark.parametrize("setup, why", [
    (dict(slices=False), "no per-thread slice"),  # a kernel before 6.12
    (dict(refuse=errno.EPERM), "sched_setattr"),
    (dict(policy=5), "policy 5"),  # SCHED_IDLE
])
def test_a_slice_not_granted_changes_nothing_and_says_why(kernel, setup, why):
    fake = kernel(**setup)
    before = fake.attr
    with longer_slice() as got:
        assert got.got_ns is None and why in got.note and "not granted" in got.describe()
    assert fake.attr[1:5] == before[1:5]
    assert len(fake.calls) <= 1  # the one attempt, never a restore


def test_no_syscall_elsewhere(monkeypatch):
    class Elsewhere:
        available = False

    monkeypatch.setattr(sched_slice, "_syscalls", Elsewhere())
    with longer_slice() as got:
        assert got.got_ns is None and "no sched_setattr" in got.note


def test_a_request_inside_another_leaves_the_outer_one_alone(kernel):
    fake = kernel()
    with longer_slice(20_000_000) as outer:
        inner = SliceRequest(50_000_000)
        assert inner.start() == outer
        inner.stop()
        assert fake.attr[5] == 20_000_000 and active_slice() == outer
    assert len(fake.calls) == 2  # the outer request and its restore


def test_the_trace_keeps_the_slice_and_older_traces_read_unknown(kernel, small_trace,
                                                                  tmp_path, capsys):
    from rldse.cli.trace import cmd_trace_info
    from rldse.host import CaptureLoad
    from rldse.trace import load_trace

    load = CaptureLoad(loadavg_1m_start=1.0, loadavg_1m_end=1.0, runnable_others_start=0,
                       runnable_others_end=0)
    assert "sched_slice" not in load.model_dump()  # an older trace's meta, digest kept
    for grant, shown in ((None, "unknown"), (SchedSlice(asked_ns=100_000_000,
                                                        got_ns=100_000_000), "got 100 ms")):
        host = small_trace.meta.host.model_copy(
            update={"load": load.model_copy(update={"sched_slice": grant})})
        small_trace.meta = small_trace.meta.model_copy(update={"host": host})
        path = small_trace.save(tmp_path / f"t{grant is None}.parquet")
        assert load_trace(path).meta.host.load.sched_slice == grant
        cmd_trace_info(argparse.Namespace(file=str(path), json=False))
        line = next(x for x in capsys.readouterr().out.splitlines() if "scheduler slice" in x)
        assert shown in line


def test_build_trace_records_this_threads_request(kernel, host_fp):
    from rldse.workloads.common.base import build_trace
    from rldse.workloads.common.recorder import Recorder

    kernel()

    def build(**kwargs):
        rec = Recorder()
        rec.add("env_step", rec.now(), 0)
        return build_trace(workload="dqn", algorithm="dqn", env_id="CartPole-v1", seed=0,
                           hyperparameters={}, workload_info={}, episode_returns=[],
                           wall_time_s=1.0, recorders=[rec], host=host_fp, **kwargs)

    with longer_slice(40_000_000) as got:
        trace = build()
    if trace.meta.host.load is None:  # no /proc/loadavg here: no load, no slice to keep
        pytest.skip("this host has no load sample")
    assert trace.meta.host.load.sched_slice == got
    assert build().meta.host.load.sched_slice is None


def test_the_real_call_never_fails_and_puts_the_slice_back():
    """On this host's own kernel: granted (Linux 6.12+) or a reason, and the thread's
    slice as it was afterwards."""
    real = sched_slice._syscalls
    before = real.get()[5] if real.available else None
    with longer_slice(20_000_000) as got:
        if got.got_ns is not None:
            assert real.get()[5] == got.got_ns == 20_000_000
        else:
            assert got.note
    assert (real.get()[5] if real.available else None) == before
