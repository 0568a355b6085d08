"""Seed-paper studies: each reproduces one paper's claims from spec-sheet parameters.

A study is a folder `studies/NAME/` (study.yaml with `module:` naming the module that runs
it and then its parameters, README.md with the claim and its source, out/ for what a run
writes) and that module, with `run(study_dir: Path, out: Path, progress: bool) -> Report`
that writes its files into `out` (a fresh folder swapped in for out/ when the run ends),
and optionally `plan(study_dir)`, the work `study run` prices first (rldse.studies.plan);
studies are found from their folders (rldse.studies.discovery). Every number in a report is
produced by the run that wrote it; `out/claims.csv` holds its claims as data, from which
`python -m rldse.studies.claims` builds the claims table of docs/validation.md.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures are files; no display needed

from rldse.errors import RldseError  # noqa: E402
from rldse.files import folder_lock, replaced_folder  # noqa: E402
from rldse.studies.discovery import find_study  # noqa: E402
from rldse.studies.report import Report  # noqa: E402


def run_study(name: str, root: str | Path = "studies", progress: bool = True,
              modules: tuple[str | Path, ...] = ()) -> Path:
    """Run one study; write out/results.csv, figures, out/claims.csv and out/report.md;
    return the report (``modules``: the folders a study's module may come from besides
    rldse's, rldse.studies.discovery). The new outputs are built beside out/ and swapped in at the end
    (rldse.files.replaced_folder): a failed or killed run leaves the previous ones whole."""
    from rldse.search.report import relocate_reports

    study = find_study(name, root, modules)
    path = study.path
    out = path / "out"
    if out.is_symlink() and not out.resolve().is_relative_to(path.resolve()):
        raise RldseError(f"{out}: a link to {out.resolve()}, outside the study folder; "
                         "a study run writes (and replaces) only inside it")
    module = study.load()
    with folder_lock(path, f"{path}: being run by another process (pid {{pid}}); wait "
                     "for it to finish"):
        with replaced_folder(out, path) as new:
            report: Report = module.run(path, new, progress=progress)
            report.write(new)
            relocate_reports(new, out)
        return out / "report.md"
