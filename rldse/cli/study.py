"""`rldse study run`: reproduce the seed papers, and end with each study's headline."""

from __future__ import annotations

import argparse
from pathlib import Path

from rldse.cli.common import presets_option
from rldse.errors import RldseError

#: the study report's table of claims (rldse.studies.report) and a search's summary
#: (rldse.search.report), whose headlines close a study's run
CLAIMS = "claims.csv"
SEARCH_SUMMARY = "summary.json"


def cmd_study_run(args: argparse.Namespace) -> None:
    from rldse.studies import STUDIES, run_study

    names = list(STUDIES) if args.all else [args.name]
    if not names or names == [None]:
        raise RldseError("study run: name a study or pass --all "
                         f"(studies: {', '.join(STUDIES)})")
    for name in names:
        print(f"== study {name}", flush=True)
        report = run_study(name, root=args.root)
        print(f"wrote {report}")
        for path in sorted(report.parent.iterdir()):
            if path != report:
                print(f"wrote {path}")
        print(headline(report.parent), flush=True)


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
    sr.add_argument("name", nargs="?", help="pearl_mapping, swiftrl_pim, amper_replay, "
                    "cpu_gpu_ratio or timerl_memory")
    sr.add_argument("--all", action="store_true", help="run every study")
    sr.add_argument("--root", default="studies", help="folder holding the study folders")
    presets_option(sr)
    sr.set_defaults(func=cmd_study_run)
