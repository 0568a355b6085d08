"""`rldse validate external`: rldse's predictions of real machines against published
measurements of them.

Each data set is a module of this package that registers a ``Dataset``: where its
measurements come from (shipped compact in ``rldse/external/data/`` with their licence and
citation, so nothing outside the package is needed) and a ``rows()`` that predicts every
measurement from spec-sheet presets with the same part models the simulator uses. Rows
share one form (``ROW_COLUMNS``); ``summary`` reduces them per data set, device and
regime to n, signed median error, median and p90 |error| and the worst case.

Which preset each device is (``Dataset.part_of``) lets a preset say what it has been
checked against: ``rldse validate external --checked FILE`` writes the per-part summary,
the shipped one (``data/checked.csv``) is what ``rldse parts show`` prints.

Error is ``predicted / measured − 1`` (positive: rldse predicts slower, or more, than was
measured). Where a shared coefficient is fitted on the data set itself, its ``rows()``
reports leave-one-device-out predictions: the device predicted was not in the fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rldse.errors import RldseError

if TYPE_CHECKING:  # on use: `rldse parts show` reads checked.csv without pandas
    import pandas as pd

#: One row per measurement: which data set, device and regime; the case (a shape, a
#: worker count); what was measured and what rldse predicts, in ``unit``.
ROW_COLUMNS = ("dataset", "device", "regime", "case", "measured", "predicted", "unit")
#: Optional column: a finer split of a row's regime ("" none) that ``summary`` reports as
#: well, as the regime "REGIME; SUBSET", beside the whole regime's row.
SUBSET = "subset"
SUMMARY_COLUMNS = ("dataset", "device", "regime", "n", "median_err", "median_abs_err",
                   "p90_abs_err", "worst_err", "worst_case")


@dataclass(frozen=True)
class Dataset:
    name: str
    description: str
    citation: str
    rows: Callable[[], pd.DataFrame]
    part_of: Callable[[str], str]  # a row's device → the part it predicts, "KIND/PRESET"
    #: where given: a line saying whether its predictions ran the code ``rldse simulate``
    #: prices the same work with (checked each run, not assumed)
    same_path: Callable[[], str] | None = None


DATASETS: dict[str, Dataset] = {}


def register(dataset: Dataset) -> Dataset:
    if dataset.name in DATASETS:
        raise ValueError(f"data set {dataset.name!r} registered twice")
    DATASETS[dataset.name] = dataset
    return dataset


def _load_all() -> None:
    """Import every data set module (each registers itself)."""
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


def datasets() -> dict[str, Dataset]:
    _load_all()
    return DATASETS


def predictions(names: list[str] | None = None,
                each: Callable[[str], None] = lambda name: None) -> pd.DataFrame:
    """Every row of the named data sets (default: all), in ROW_COLUMNS (and ``SUBSET`` where
    a data set gives one) plus ``error``; ``each(name)`` is called as each data set is done
    (a progress bar's hook)."""
    import pandas as pd

    known = datasets()
    for name in names or []:
        if name not in known:
            raise RldseError(f"--dataset {name}: unknown (expected one of "
                             f"{', '.join(sorted(known))})")
    frames = []
    for name in names or sorted(known):
        frames.append(known[name].rows())
        each(name)
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=list(ROW_COLUMNS))
    rows["error"] = relative_error(rows["predicted"], rows["measured"])
    return rows


def relative_error(predicted, measured) -> np.ndarray:
    """predicted / measured − 1 (NaN where nothing positive was measured)."""
    p, m = np.asarray(predicted, float), np.asarray(measured, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m > 0, p / m - 1.0, np.nan)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per data set, device and regime, and per regime's subset (``SUBSET``): n, signed
    median error, median and p90 |error|, the worst (largest |error|) case and its error."""
    import pandas as pd

    rows = rows.dropna(subset=["error"])
    groups = list(rows.groupby(["dataset", "device", "regime"]))
    if SUBSET in rows:
        split = rows[rows[SUBSET].fillna("") != ""]
        groups += [((dataset, device, f"{regime}; {subset}"), g) for (dataset, device, regime,
                   subset), g in split.groupby(["dataset", "device", "regime", SUBSET])]
    out = []
    for key, g in sorted(groups, key=lambda kg: kg[0]):
        err = g["error"].to_numpy()
        worst = int(np.argmax(np.abs(err)))
        out.append((*key, len(g), float(np.median(err)), float(np.median(np.abs(err))),
                    float(np.quantile(np.abs(err), 0.9)), float(err[worst]),
                    str(g["case"].iloc[worst])))
    return pd.DataFrame(out, columns=list(SUMMARY_COLUMNS))


#: Per part: which data set and regime checked it, and how closely (``checked``).
CHECKED_COLUMNS = ("part", "dataset", "regime", "n", "median_err", "median_abs_err",
                   "p90_abs_err")
#: The shipped per-part summary ``rldse parts show`` prints.
CHECKED_FILE = Path(__file__).with_name("data") / "checked.csv"


def checked(table: pd.DataFrame) -> pd.DataFrame:
    """``summary`` rows keyed by the part each device is (``Dataset.part_of``)."""
    known = datasets()
    part = [known[r.dataset].part_of(r.device) for r in table.itertuples(index=False)]
    return table.assign(part=part)[list(CHECKED_COLUMNS)].round(6).sort_values(
        ["part", "dataset", "regime"], ignore_index=True)


def checked_lines(part: str, path: Path = CHECKED_FILE) -> list[str]:
    """What ``part`` ("KIND/PRESET") has been checked against, one line per data set and
    regime, from the shipped summary; one line saying so where it has not been."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["part"] == part]
    if not rows:
        return [f"checked against real machines: not yet ({part} is in no data set of "
                "'rldse validate external')"]
    out = ["checked against real machines ('rldse validate external', error = predicted / "
           "measured - 1):"]
    for r in rows:
        out.append(f"  {r['dataset']}, {r['regime']}: n {r['n']}, signed median "
                   f"{100 * float(r['median_err']):+.1f} %, median |error| "
                   f"{100 * float(r['median_abs_err']):.1f} %, p90 "
                   f"{100 * float(r['p90_abs_err']):.1f} %")
    return out


#: The summary table's first row (``rldse validate external --doc`` finds it by this).
TABLE_HEADER = "| data set | device | regime | n | signed median | median abs | p90 abs | worst |"


def format_summary(table: pd.DataFrame) -> str:
    """The summary as a Markdown table (percentages), for the terminal and docs/validation.md."""
    head = TABLE_HEADER + "\n|---|---|---|---|---|---|---|---|"
    lines = [head]
    for r in table.itertuples(index=False):
        lines.append(f"| {r.dataset} | {r.device} | {r.regime} | {r.n} | "
                     f"{100 * r.median_err:+.1f} % | {100 * r.median_abs_err:.1f} % | "
                     f"{100 * r.p90_abs_err:.1f} % | {100 * r.worst_err:+.1f} % "
                     f"({r.worst_case}) |")
    return "\n".join(lines)
