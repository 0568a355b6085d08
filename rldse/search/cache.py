"""Simulation results by (trace digest, spec digest, seed): a repeated point costs nothing.

One SQLite file under the study's out/ (WAL mode, so local worker processes read while
one writes). Simulation is deterministic in its inputs, so a
hit is the Result the simulation would return. Workers on other machines keep their own.

The cache only saves time: where its file cannot be read or written (a read-only
folder, a damaged file) a lookup is a miss and a result is not kept, with one warning on
stderr, so the trial still finishes with its simulated result. A full disk is not
passed over: the study's own records could not be written either, so it is raised as
the OSError it is (ENOSPC, naming the cache file) and the search stops in one line with
the trial left to run again (rldse.search.storage.TrialCut).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
from pathlib import Path

from rldse.sim.result import Result


class ResultCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db: sqlite3.Connection | None = None
        self._warned = False

    def _conn(self) -> sqlite3.Connection:
        # opened lazily, so a forked worker opens its own connection
        if self._db is None:
            self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS results (trace TEXT, spec TEXT, "
                             "seed INTEGER, result TEXT, PRIMARY KEY (trace, spec, seed))")
        return self._db

    def get(self, trace: str, spec: str, seed: int) -> Result | None:
        try:
            row = self._conn().execute("SELECT result FROM results WHERE trace=? AND spec=? "
                                       "AND seed=?", (trace, spec, seed)).fetchone()
        except sqlite3.Error as exc:
            self._unusable(exc)
            return None
        return Result.model_validate_json(row[0]) if row else None

    def put(self, result: Result) -> None:
        try:
            self._conn().execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)",
                                 (result.trace_digest, result.spec_digest, result.seed,
                                  result.model_dump_json()))
        except sqlite3.Error as exc:
            self._unusable(exc)

    def _unusable(self, exc: sqlite3.Error) -> None:
        """Warn once that the cache file cannot be used; a full disk is raised (module
        docstring)."""
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path)) from exc
        if not self._warned:
            self._warned = True
            print(f"rldse: warning: {self.path}: the result cache cannot be used ({exc}); "
                  "trials run without it", file=sys.stderr)

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
