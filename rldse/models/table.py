"""Table-driven part: per-phase latencies a user measured on their own hardware.

The format is PEARL's public performance model (Meng et al., arXiv 2311.09445):

- a latency table (PEARL's ``PT.csv``): one row per device, one column per primitive,
  latency per invocation. Columns are rldse phases (``replay_sample``) or PEARL's
  primitives (``RP-sample``, ``RP-insert``, ``RP-update``, ``LN``); a ``RPLN-`` prefix
  marks the latency when replay manager and learner share the device (co-located).
  PT.csv carries no unit; PEARL's companion BW.csv gives latencies in ms, so ``unit``
  defaults to ms.
- a link table (PEARL's ``BW.csv``): rows "device 1, device 2", latency and bandwidth,
  with the unit in each column name (``latency-ms``, ``bandwidth-GBpms``).

The files are read by path; none ship with rldse. A table part costs each operation of a
phase the table's latency for that phase, whatever its size: the table holds what was
measured, at the batch size it was measured with.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import ConfigDict, Field

from rldse.errors import RldseError
from rldse.models.kinds import Instance, Loader, PartKind, Runs, register
from rldse.models.link import LinkSpec
from rldse.models.ops import PHASE_NAMES, OpColumns, Phase, per_phase
from rldse.models.power import UtilisationPower
from rldse.models.spec import PartSpec, build, idle_at_most, quantity
from rldse.strict import UserModel

#: PEARL's primitive names -> rldse phases.
PEARL_PHASES = {"RP-update": "replay_update", "RP-insert": "replay_add",
                "RP-sample": "replay_sample", "LN": "learn"}
#: PEARL's column prefix for latencies when replay manager and learner are co-located.
COLOCATED_PREFIX = "RPLN-"

TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
BANDWIDTH_UNITS = {"GBps": 1.0, "GBs": 1.0, "GBpms": 1e3, "MBps": 1e-3}

#: Largest latency a table may hold, s.
_MAX_LATENCY_S = 1e6
Latencies = dict[Phase, Annotated[float, Field(ge=0, le=_MAX_LATENCY_S)]]


class TableSpec(PartSpec):
    latency_s: Latencies = quantity("s", "latency per operation, by phase")
    colocated_latency_s: Latencies = quantity(
        "s", "latency per operation when replay and learner share this device, by phase")
    max_w: float = quantity("W", "power at full load; 0 if not measured", ge=0, le=1e5,
                            plausible=(0.001, 10000))
    idle_w: float = quantity("W", "power when idle (≤ max_w); 0 if not measured", ge=0, le=1e5,
                             plausible=(0.0001, 10000))
    energy_accuracy: str = quantity("", "how the power numbers were obtained")
    price_usd: float = quantity("USD", "price of the device; 0 if not known", ge=0, le=1e7,
                                default=0.0, plausible=(0.01, 1e6))

    _idle_at_most_max = idle_at_most("idle_w", "max_w")


class TableModel(UtilisationPower):
    """Costs operations by looking their phase up in a measured table."""

    def __init__(self, spec: TableSpec) -> None:
        self.spec = spec
        self._alone = per_phase(spec.latency_s, np.nan)
        self._together = per_phase({**spec.latency_s, **spec.colocated_latency_s}, np.nan)

    def op_seconds(self, ops: OpColumns, colocated: bool = False) -> np.ndarray:
        """The table's latency for each operation's phase (co-located column if asked)."""
        out = (self._together if colocated else self._alone)[ops.phase]
        missing = np.isnan(out)
        if missing.any():
            phase = PHASE_NAMES[ops.phase[np.flatnonzero(missing)[0]]]
            have = ", ".join(sorted(self.spec.latency_s)) or "none"
            raise RldseError(f"table part '{self.spec.name}' has no latency for phase "
                             f"'{phase}' (it has: {have})")
        return out



def load_table_part(path: str | Path, device: str, *, unit: str = "ms", max_w: float = 0.0,
                    idle_w: float = 0.0) -> TableSpec:
    """Read ``device``'s row of a PEARL-style latency table (PT.csv)."""
    path = Path(path)
    scale = _unit(TIME_UNITS, unit, f"{path}: unit")
    header, rows = _read_csv(path)
    found = [(line, cells) for line, cells in rows if cells[0].strip() == device]
    if not found:
        raise RldseError(f"{path}: no row whose first cell is '{device}' (the table has "
                         f"{len(rows)} data rows)")
    line, cells = found[0]
    alone: dict[str, float] = {}
    together: dict[str, float] = {}
    for column, (col, cell) in enumerate(zip(header[1:], cells[1:], strict=False), start=2):
        col = col.strip()
        target = together if col.startswith(COLOCATED_PREFIX) else alone
        name = col.removeprefix(COLOCATED_PREFIX)
        phase = PEARL_PHASES.get(name, name)
        if phase not in PHASE_NAMES:
            raise RldseError(f"{path}: line 1, column {column}: expected an rldse phase or a "
                             f"PEARL primitive ({', '.join(PEARL_PHASES)}), optionally with "
                             f"the prefix {COLOCATED_PREFIX}")
        target[phase] = _number(cell, f"{path}: line {line}, column {column}", scale, 0.0,
                                _MAX_LATENCY_S, "s")
    values = {"name": device, "latency_s": alone, "colocated_latency_s": together,
              "max_w": max_w, "idle_w": idle_w,
              "energy_accuracy": "user-supplied power" if max_w else "power not measured (0 W)"}
    return build(TableSpec, values, where=f"{path}:{device}")


class LinkTable:
    """Links between table devices (PEARL's BW.csv), looked up in either order."""

    def __init__(self, links: dict[frozenset[str], LinkSpec]) -> None:
        self.links = links

    def get(self, a: str, b: str) -> LinkSpec:
        key = frozenset((a, b))
        if key not in self.links:
            pairs = ", ".join("-".join(sorted(k)) if len(k) > 1 else f"{next(iter(k))}-self"
                              for k in self.links)
            raise RldseError(f"link table has no link between '{a}' and '{b}' (has: {pairs})")
        return self.links[key]


def load_link_table(path: str | Path) -> LinkTable:
    """Read a PEARL-style link table (BW.csv): 'dev1,dev2', latency-UNIT, bandwidth-UNIT."""
    path = Path(path)
    header, rows = _read_csv(path)
    if len(header) != 3:
        raise RldseError(f"{path}: line 1: expected 3 columns (devices, latency-UNIT, "
                         f"bandwidth-UNIT), found {len(header)}")
    lat_scale = _column_unit(TIME_UNITS, header[1], "latency", f"{path}: line 1, column 2")
    bw_scale = _column_unit(BANDWIDTH_UNITS, header[2], "bandwidth",
                            f"{path}: line 1, column 3")
    links: dict[frozenset[str], LinkSpec] = {}
    for line, row in rows:
        devices = [d.strip() for d in row[0].split(",")]
        if len(devices) != 2 or len(row) < 3:
            raise RldseError(f"{path}: line {line}: expected 'A,B' (two devices) in column 1, "
                             "then a latency and a bandwidth")
        values = {"name": "-".join(devices),
                  "latency_s": _number(row[1], f"{path}: line {line}, column 2", lat_scale,
                                       0.0, 1.0, "s"),
                  "bandwidth_gbs": _number(row[2], f"{path}: line {line}, column 3", bw_scale,
                                           1e-3, 1e5, "GB/s")}
        links[frozenset(devices)] = build(LinkSpec, values, where=f"{path}: line {line}")
    return LinkTable(links)


#: Largest table file read (PEARL's tables are a few hundred bytes): a path to something
#: else is refused before it is read.
MAX_TABLE_BYTES = 1 << 20


def _read_csv(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the (line number, cells) of each non-blank data row. The file is
    data: no error quotes what it holds, only where (line, column) and what was expected,
    so a spec pointed at another file cannot print it."""
    if not path.is_file():
        raise RldseError(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_TABLE_BYTES:
        raise RldseError(f"{path}: {size:,} bytes: expected a latency table (a CSV file of "
                         f"at most {MAX_TABLE_BYTES:,} bytes)")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RldseError(f"{path}: byte {exc.start}: expected UTF-8 text (a CSV file)") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, list[str]]] = []
    try:
        for cells in reader:
            if any(c.strip() for c in cells):
                rows.append((reader.line_num, cells))
    except csv.Error:
        raise RldseError(f"{path}: line {max(reader.line_num, 1)}: expected CSV (comma-separated "
                         "cells, each quote closed)") from None
    if len(rows) < 2 or len(rows[0][1]) < 2:
        raise RldseError(f"{path}: expected a header row (a first cell, then a column per "
                         "phase) and at least one data row")
    return rows[0][1], rows[1:]


def _number(cell: str, where: str, scale: float, low: float, high: float, unit: str) -> float:
    """A cell's number times ``scale``, which must lie in [``low``, ``high``] ``unit`` (the
    bounds of the spec it fills, checked here so no error quotes the cell)."""
    try:
        value = float(cell) * scale
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise RldseError(f"{where}: expected a number from {low / scale:g} to {high / scale:g}"
                         f" (in the table's unit; {low:g} to {high:g} {unit})")
    return value


def _unit(units: dict[str, float], unit: str, where: str) -> float:
    if unit not in units:
        raise RldseError(f"{where} '{unit}' is unknown (allowed: {', '.join(units)})")
    return units[unit]


def _column_unit(units: dict[str, float], column: str, quantity_name: str, where: str) -> float:
    name, _, unit = column.strip().partition("-")
    if name != quantity_name or unit not in units:
        raise RldseError(f"{where}: expected the column name {quantity_name}-UNIT, UNIT one "
                         f"of {', '.join(units)}")
    return units[unit]


class TableRef(UserModel):
    """A SystemSpec section: replay manager and learner as rows of a measured latency table
    (PEARL's PT.csv).

    The file's path is relative to the spec file (absolute once loaded). The same row for
    both means co-located: the table's co-located (RPLN-) latencies apply, and the two
    run concurrently on that device, as PEARL measured them.
    """

    model_config = ConfigDict(extra="forbid")

    latency_csv: str
    unit: Literal["s", "ms", "us", "ns"] = "ms"
    replay: str = Field(description="table row that runs the replay manager")
    learn: str = Field(description="table row that runs the learner")
    max_w: dict[str, float] = Field(default_factory=dict, description="power per row, W")

    @property
    def colocated(self) -> bool:
        return self.replay == self.learn


def _table_instances(kind: PartKind, ref: Any, load: Loader, where: str) -> list[Instance]:
    """One device per row used; a row that runs replay and learner gets 2 lanes."""
    return [Instance(f"table:{row}", load_table_part(ref.latency_csv, row, unit=ref.unit,
                                                     max_w=ref.max_w.get(row, 0.0)),
                     row, lanes=2 if ref.colocated else None)
            for row in dict.fromkeys((ref.replay, ref.learn))]


register(PartKind(
    name="table", spec=TableSpec, model=lambda spec, ctx: TableModel(spec),
    description="rows of a latency table measured by the user (PEARL's PT.csv format)",
    serves={"replay": Runs.LOOKUP, "learn": Runs.LOOKUP}, presets=False, ref=TableRef,
    instances=_table_instances))
