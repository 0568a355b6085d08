"""`rldse study run` and `study list`: the studies found under --root (every folder with a
study.yaml naming its module, rldse.studies.discovery); a run ends with its headline."""

from __future__ import annotations

import argparse
from pathlib import Path

from rldse.cli.common import presets_option, progress_option
from rldse.errors import RldseError

#: the study report's table of claims (rldse.studies.report) and a search's summary
#: (rldse.search.report), whose headlines close a study's run
CLAIMS = "claims.csv"
SEARCH_SUMMARY = "summary.json"


def cmd_study_run(args: argparse.Namespace) -> None:
    from rldse.sim.budget import Limits
    from rldse.studies import run_study
    from rldse.studies.discovery import find_studies, find_study, study_names
    from rldse.studies.plan import estimate_studies

    if args.all and args.name:
        raise RldseError(f"study run: name a study or pass --all, not both ({args.name})")
    if not args.all and not args.name:
        raise RldseError("study run: name a study or pass --all "
                         f"(studies: {', '.join(study_names(args.root))})")
    # every named folder is checked before any study runs: a broken one fails in one line
    studies = (find_studies(args.root, args.modules) if args.all
               else [find_study(args.name, args.root, args.modules)])
    # and every study's planned work priced: over the limit, none runs (rldse.studies.plan)
    for study, cost in estimate_studies(studies, Limits(allow_long=args.allow_long)):
        name = study.name
        print(f"== study {name}", flush=True)
        print(f"estimate: {cost.describe()}" if cost is not None else
              "estimate: none (the study's module has no plan())", flush=True)
        report = run_study(name, root=args.root, modules=args.modules, progress=args.progress)
        print(f"wrote {report}")
        for path in sorted(report.parent.iterdir()):
            if path != report:
                print(f"wrote {path}")
        print(headline(report.parent), flush=True)


def cmd_study_list(args: argparse.Namespace) -> None:
    from rldse.studies.discovery import find_studies

    for study in find_studies(args.root, args.modules):
        print(f"{study.name:<16} {study.module:<32} {study.title}")


def headline(out_dir: Path) -> str:
    """What a study found, in a few lines: its verdicts with rldse's band on each banded
    claim, then the best design of each search it ran (feasible, with its throughput,
    steps/J and power)."""
    import pandas as pd

    from rldse.search.report import StudyReport

    lines = []
    claims_file = out_dir / CLAIMS
    if claims_file.is_file():
        claims = pd.read_csv(claims_file)
        counts = claims["verdict"].value_counts()
        lines.append(f"headline: {len(claims)} claims: "
                     + ", ".join(f"{n} {v}" for v, n in counts.items()))
        for row in claims.itertuples(index=False):
            band = (f": {row.p50:.4g} (p5-p95 {row.p5:.4g}-{row.p95:.4g})"
                    if pd.notna(row.p50) else "")
            lines.append(f"  {row.verdict}: {row.claim}{band}")
    for summary in sorted(out_dir.rglob(SEARCH_SUMMARY)):
        report = StudyReport.model_validate_json(summary.read_text())
        lines.append(f"search '{report.name}' ({report.budget} trials): {report.headline()}")
    return "\n".join(lines) if lines else f"headline: {out_dir} holds no {CLAIMS}"


def add_parser(sub) -> None:
    st = sub.add_parser("study", help="reproduce the seed papers")
    ssub = st.add_subparsers(dest="study_command", required=True, metavar="ACTION")
    sr = ssub.add_parser("run", help="run a study (or --all); writes studies/NAME/out/")
    sr.add_argument("name", nargs="?", help="a folder of --root holding a study.yaml "
                    "(`rldse study list` shows them)")
    sr.add_argument("--all", action="store_true", help="run every study, in name order")
    sr.add_argument("--root", default="studies", help="folder holding the study folders")
    sr.add_argument("--allow-long", action="store_true",
                    help="run even when the studies' planned simulations are estimated "
                         "over 10 minutes in all")
    modules_option(sr)
    presets_option(sr)
    progress_option(sr)
    sr.set_defaults(func=cmd_study_run)
    sl = ssub.add_parser("list", help="the studies under --root: name, module, title")
    sl.add_argument("--root", default="studies", help="folder holding the study folders")
    modules_option(sl)
    sl.set_defaults(func=cmd_study_list)


def modules_option(parser) -> None:
    parser.add_argument("--modules", action="append", default=[], metavar="DIR",
                        help="a folder of study modules that study.yaml's module: may name "
                             "(repeatable); without it only rldse's own studies run, since "
                             "a study runs its module's code")
