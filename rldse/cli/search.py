"""`rldse search`: an Optuna study over SystemSpec paths."""

from __future__ import annotations

import argparse

from rldse.cli.common import presets_option, progress_option


def cmd_search(args: argparse.Namespace) -> None:
    from rldse.search import run_study

    report = run_study(args.study, trials=args.trials, workers=args.workers,
                       storage=args.storage, resume=args.resume, allow_long=args.allow_long,
                       progress=args.progress)
    print(report.summary())


def add_parser(sub) -> None:
    se = sub.add_parser(
        "search", help="search the machine design: an Optuna study over SystemSpec paths",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="across machines: make a PostgreSQL database reachable from each, put its\n"
               "password in PGPASSWORD or ~/.pgpass (not on the command line), then run\n"
               "  rldse search STUDY.yaml --storage postgresql://USER@HOST/DB --workers 8\n"
               "on the first machine and the same with --resume on every other one.")
    se.add_argument("study", help="study file (YAML): trace, base spec, space, objectives, ...")
    se.add_argument("--trials", type=int, help="total finished trials (default: the file's)")
    se.add_argument("--workers", type=int, default=1, help="worker processes on this machine "
                    "(at most its cores, unless --allow-long)")
    se.add_argument("--storage", metavar="URL",
                    help="shared study database, e.g. postgresql://user@host/db with the "
                         "password in PGPASSWORD or ~/.pgpass (default: $RLDSE_STORAGE, else "
                         "the study file's storage:, else out/journal.log beside the study)")
    se.add_argument("--resume", action="store_true",
                    help="continue an interrupted study, or join one in --storage")
    se.add_argument("--allow-long", action="store_true",
                    help="run trials whose simulation is estimated over 10 minutes or half "
                         "of RAM (otherwise they are invalid trials, not runs)")
    presets_option(se)
    progress_option(se)
    se.set_defaults(func=cmd_search)
