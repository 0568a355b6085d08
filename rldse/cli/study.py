"""`rldse study run`: reproduce the seed papers."""

from __future__ import annotations

import argparse

from rldse.cli.common import presets_option
from rldse.errors import RldseError


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
