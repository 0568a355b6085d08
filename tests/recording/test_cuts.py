"""rldse.recording.cuts: rows from a log of cuts, checked against hand-made logs."""

from __future__ import annotations

import numpy as np

import rldse.recording.cuts as cuts_module
from rldse.recording.cuts import GAP, Cuts, closed_before, rows

ENV, ADD, LEARN = 1, 2, 3


def log(*cuts: tuple[int, int]) -> Cuts:
    """A log with given (time ns, code) cuts."""
    c = Cuts()
    for t, code in cuts:
        c.times.append(t)
        c.codes.append(code)
    return c


def no_cost(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.zeros(n), np.zeros(n), np.zeros(n)


def test_a_nested_row_is_exclusive_and_its_parent_is_one_row():
    # env_step 0-100, replay_add 40-70 inside it, a gap, learn 150-200
    c = log((0, ENV), (40, ADD), (70, -1), (100, GAP), (150, LEARN))
    r = rows(*c.arrays(), 200, *no_cost(5))
    assert r.kind.tolist() == [ENV, ADD, LEARN]
    assert r.dur_ns.tolist() == [70, 30, 50]  # 40 + 30 for the env_step
    assert r.start_ns.tolist() == [0, 40, 150]
    assert r.close.tolist() == [3, 2, 5]  # the cuts that end each row's last tile


def test_bias_and_shift_remove_the_recorders_own_time():
    # every cut costs 2 ns before its read and 4 after; 10 ns counting before cut 2
    c = log((0, ENV), (100, GAP), (200, LEARN))
    before, after = np.full(3, 2.0), np.full(3, 4.0)
    counted = np.array([0.0, 0.0, 10.0])
    r = rows(*c.arrays(), 300, before, after, counted)
    assert r.dur_ns.tolist() == [100 - 4 - 2, 100 - 4]  # the end costs nothing
    # shift: earlier cuts' whole cost (6 each), this cut's before (2), counting
    assert r.start_ns.tolist() == [0 - 2, 200 - (12 + 2 + 10)]


def test_a_row_relabelled_gap_is_dropped_with_its_tiles():
    c = log((0, ENV), (40, ADD), (70, -1), (100, LEARN))
    c.relabel(0, GAP)
    r = rows(*c.arrays(), 150, *no_cost(4))
    assert r.kind.tolist() == [ADD, LEARN]


def test_durations_never_go_negative():
    c = log((0, ENV), (1, GAP))
    r = rows(*c.arrays(), 2, np.full(2, 5.0), np.full(2, 5.0), np.zeros(2))
    assert r.dur_ns.tolist() == [0.0]


def test_closed_before_counts_rows_closed_when_one_opens():
    # env 0, add nested in env 0, env 1, learn: the nested add sees 0 closed env steps
    c = log((0, ENV), (10, ADD), (20, -1), (30, ENV), (40, LEARN))
    r = rows(*c.arrays(), 50, *no_cost(5))
    assert closed_before(r, r.kind == ENV).tolist() == [0, 0, 1, 2]


def test_cut_back_gap_track_the_open_row():
    c = Cuts()
    row = c.cut(ENV)
    assert c.open == row == 0 and c.open_code() == ENV
    c.cut(ADD)
    assert c.open == 1
    c.back(row)
    assert c.open == 0 and c.codes[-1] == -1
    c.gap()
    assert c.open is None and c.open_code() == GAP and list(c.codes) == [ENV, ADD, -1, GAP]
    assert list(c.times) == sorted(c.times)
    c.clear()
    assert len(c) == 0 and c.open is None


def test_cuda_cuts_sum_device_time_per_phase_between_events(monkeypatch):
    """Without a GPU: events stand-ins that record a fake device clock; a row's device
    time is the clock between its cuts and the next, nested rows apart, gaps dropped."""
    import pytest

    torch = pytest.importorskip("torch", reason="needs the 'torch' extra")
    from rldse.recording.session import CudaCuts, Kind

    clock = iter(range(0, 1000, 10))  # device ms at each event

    class Event:
        def record(self) -> None:
            self.ms = next(clock)

        def elapsed_time(self, end: Event) -> float:
            return end.ms - self.ms

    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "fake")
    c = CudaCuts()
    c.event = Event
    row = c.cut(ENV)   # event 0 ms
    c.cut(ADD)         # 10
    c.back(row)        # 20
    c.gap()            # 30
    c.cut(LEARN)       # 40; summary adds the end at 50
    kinds = [None] + [Kind(n, "host", 1, 0, 0, 0, "none", False)
                      for n in ("env_step", "replay_add", "learn")]
    out = c.summary(kinds)
    assert out == {"device": "fake",
                   "device_s": {"env_step": 0.02, "replay_add": 0.01, "learn": 0.01}}


def test_a_spilled_log_gives_the_same_rows(monkeypatch):
    """Cuts move into numpy blocks every SPILL cuts; rows, codes and relabels reach across."""
    def record() -> tuple[Cuts, list[int]]:
        c, envs = Cuts(), []
        for _ in range(7):
            envs.append(c.cut(ENV))
            parent = c.open
            c.cut(ADD)
            c.back(parent)
        c.relabel(envs[0], LEARN)  # a row in the first block once spilled
        return c, envs

    whole, _ = record()
    monkeypatch.setattr(cuts_module, "SPILL", 4)
    spilled, envs = record()
    assert len(spilled._blocks) == 5 and len(spilled) == len(whole) == 21
    assert spilled.code(envs[0]) == LEARN and spilled.code(envs[-1]) == ENV
    assert spilled.arrays()[1].tolist() == whole.arrays()[1].tolist()
    costs = no_cost(len(whole))
    a, b = rows(*whole.arrays(), 10**15, *costs), rows(*spilled.arrays(), 10**15, *costs)
    assert a.kind.tolist() == b.kind.tolist() and a.close.tolist() == b.close.tolist()
