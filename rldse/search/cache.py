"""Simulation results by (trace digest, spec digest, seed): a repeated point costs nothing.

One SQLite file under the study's out/ (WAL mode, so local worker processes read while
one writes). Simulation is deterministic in its inputs, so a
hit is the Result the simulation would return. Workers on other machines keep their own.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rldse.sim.result import Result


class ResultCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        # opened lazily, so a forked worker opens its own connection
        if self._db is None:
            self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS results (trace TEXT, spec TEXT, "
                             "seed INTEGER, result TEXT, PRIMARY KEY (trace, spec, seed))")
        return self._db

    def get(self, trace: str, spec: str, seed: int) -> Result | None:
        row = self._conn().execute("SELECT result FROM results WHERE trace=? AND spec=? AND "
                                   "seed=?", (trace, spec, seed)).fetchone()
        return Result.model_validate_json(row[0]) if row else None

    def put(self, result: Result) -> None:
        self._conn().execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)",
                             (result.trace_digest, result.spec_digest, result.seed,
                              result.model_dump_json()))

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
