"""SwiftRL's experience-dataset format: one transition a line, ``state action reward next_state``.

The published datasets (FrozenLake, Taxi, CliffWalking; 10k, 100k and 1M transitions) are
whitespace-separated integers. Reading is one pass of pandas' C parser; only when that
pass finds something wrong does a line-by-line scan run, to name the first bad line.
Blank lines are skipped (they hold no transition), so an error's line number counts them.

In memory a dataset is a DataFrame with int32 ``state``, ``action``, ``next_state`` and a
float32 ``reward``: the same columns and types as the transitions a capture attaches to
its Trace, so captured experience exports to this format and back unchanged.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import ValidationError

from rldse.errors import RldseError, validation_error
from rldse.files import atomic_write
from rldse.trace import Trace
from rldse.workloads import capture
from rldse.workloads.common.base import CaptureConfig, Progress, no_progress

if TYPE_CHECKING:  # on use: `rldse capture tabular --help` imports this module
    import pandas as pd

COLUMNS = ("state", "action", "reward", "next_state")
_EXPECTED = "expected 4 integers 'state action reward next_state'"
_INT_TOKEN = re.compile(rb"[+-]?\d+")
_INDEX_MAX = 2**31 - 1  # states and actions are int32
_REWARD_MAX = 2**24  # integers up to 2^24 are exact in float32


def read_swiftrl(path: str | Path) -> pd.DataFrame:
    """Read and validate a SwiftRL dataset; any problem is a one-line RldseError."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise RldseError(f"{path}: no such file")
    try:
        raw = pd.read_csv(path, sep=r"\s+", header=None, engine="c")
    except pd.errors.EmptyDataError:
        raise RldseError(f"{path}: file is empty ({_EXPECTED} a line)") from None
    except (ValueError, OverflowError, pd.errors.ParserError):
        raise _first_bad_line(path) from None
    if not _all_valid(raw):
        raise _first_bad_line(path)
    raw.columns = list(COLUMNS)
    return _typed(raw)


def write_swiftrl(transitions: pd.DataFrame, path: str | Path) -> Path:
    """Write transitions as SwiftRL lines (integers only, so rewards must be whole)."""
    import pandas as pd

    path = Path(path)
    missing = [c for c in COLUMNS if c not in transitions.columns]
    if missing:
        raise RldseError(f"transitions have no column '{missing[0]}' (SwiftRL lines are "
                         f"{' '.join(COLUMNS)})")
    reward = transitions["reward"].to_numpy(dtype=np.float64)
    fractional = ~np.isfinite(reward) | (reward != np.round(reward))
    if fractional.any():
        row = int(np.flatnonzero(fractional)[0])
        raise RldseError(f"{path}: the SwiftRL format holds integers only, but the reward at "
                         f"transition {row} is {reward[row]!r}")
    out = pd.DataFrame({c: transitions[c].to_numpy().astype(np.int64) for c in COLUMNS})
    # a full disk or a read-only folder: one line, nothing torn left (rldse.files)
    return atomic_write(path, lambda tmp: out.to_csv(tmp, sep=" ", header=False,
                                                     index=False, lineterminator="\n"))


def export_swiftrl(trace: Trace, path: str | Path) -> Path:
    """`rldse trace export --format swiftrl`: the trace's transitions as a SwiftRL file."""
    if trace.transitions is None:
        meta = trace.meta
        raise RldseError(f"this {meta.workload} trace ({meta.algorithm} on {meta.env_id}) has "
                         "no transitions to export; only tabular captures attach them",
                         where=trace.source)
    return write_swiftrl(trace.transitions, path)


def import_swiftrl(path: str | Path, *, env_id: str | None = None,
                   algorithm: str = "q_learning", agents: int = 1, passes: int = 1,
                   dtype: str = "fp32", seed: int = 0, workers: int = 1,
                   progress: Progress = no_progress) -> Trace:
    """`rldse trace import --format swiftrl`: run SwiftRL's offline training on the file, captured.

    ``env_id=None`` infers the environment from the file name (FrozenLake*, Taxi*,
    Cliffwalking*), else the state and action counts come from the data.
    """
    try:
        cfg = CaptureConfig(workload="tabular", env_id=env_id or "auto", dataset=str(path),
                            algorithm=algorithm, agents=agents, dtype=dtype, seed=seed,
                            options={"passes": passes, "workers": workers})
    except ValidationError as exc:
        raise validation_error(exc, "") from None
    return capture(cfg, progress)


def line_of_row(path: str | Path, row: int) -> int:
    """1-based line number of data row ``row`` (blank lines are skipped by the reader)."""
    seen = -1
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                seen += 1
                if seen == row:
                    return number
    raise ValueError(f"{path} has no data row {row}")


def _all_valid(raw: pd.DataFrame) -> bool:
    """Four integer columns, indices in int32's non-negative range, rewards exact in float32."""
    if raw.shape[1] != len(COLUMNS) or any(d.kind != "i" for d in raw.dtypes):
        return False
    values = raw.to_numpy()
    indices = values[:, [0, 1, 3]]
    return bool((indices >= 0).all() and (indices <= _INDEX_MAX).all()
                and (np.abs(values[:, 2]) <= _REWARD_MAX).all())


def _typed(raw: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({
        "state": raw["state"].to_numpy(np.int32),
        "action": raw["action"].to_numpy(np.int32),
        "reward": raw["reward"].to_numpy(np.float32),
        "next_state": raw["next_state"].to_numpy(np.int32),
    })


def _first_bad_line(path: Path) -> RldseError:
    """Scan line by line (only after the fast reader failed) and describe the first bad line."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            problem = _line_problem(line)
            if problem:
                return RldseError(f"{path}: line {number}: {problem}")
    return RldseError(f"{path}: not readable as SwiftRL lines ({_EXPECTED})")


def _line_problem(line: bytes) -> str | None:
    tokens = line.split()
    if not tokens:
        return None
    if len(tokens) != len(COLUMNS) or not all(_INT_TOKEN.fullmatch(t) for t in tokens):
        text = line.decode("utf-8", errors="replace").strip()
        return f"{_EXPECTED}, got '{text[:60]}{'...' if len(text) > 60 else ''}'"
    values = dict(zip(COLUMNS, map(int, tokens), strict=True))
    for name in ("state", "action", "next_state"):
        if not 0 <= values[name] <= _INDEX_MAX:
            return f"{name} must be an integer in 0..{_INDEX_MAX}, got {values[name]}"
    if abs(values["reward"]) > _REWARD_MAX:
        return f"reward must be within ±{_REWARD_MAX} (exact in float32), got {values['reward']}"
    return None
