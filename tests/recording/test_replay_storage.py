"""What counts as replay storage for `capture script`: capacity and batch read from a
buffer and a sample, and the --replay values."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.recording.replay_storage import batch_of, capacity, parse_replay


class Ring:
    def __init__(self) -> None:
        self.obs = np.zeros((700, 4))
        self.size = 3  # the fill, not the capacity


class PerEnv:
    buffer_size, n_envs = 250, 4  # SB3 keeps the size per env


def test_capacity_from_attribute_array_or_deque():
    assert capacity(PerEnv()) == 1000
    assert capacity(Ring()) == 700
    holder = type("Holder", (), {})()
    holder.data = deque(maxlen=50)
    assert capacity(holder) == 50
    assert capacity(type("Empty", (), {})()) is None


def test_batch_of_a_sample():
    assert batch_of((np.zeros((32, 4)), np.zeros(32))) == 32
    assert batch_of({"obs": np.zeros((8, 4))}) == 8
    assert batch_of([(1, 2)] * 5) == 5


def test_replay_flag_values():
    assert parse_replay(("Memory", "Buf:remember,push,recall")) == {
        "Memory": None, "Buf": (("remember", "push"), "recall")}
    for bad in ("Memory:recall", ":a,b", "M:a,b c"):
        with pytest.raises(RldseError, match="expected CLASS or CLASS:ADD,SAMPLE"):
            parse_replay((bad,))
