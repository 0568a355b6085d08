"""`rldse dashboard STUDY`: optuna-dashboard on a study's storage, on this machine only.

It listens on 127.0.0.1 (a study's storage URL may carry a password, and the dashboard
can edit notes): reach it from elsewhere through an SSH tunnel. optuna-dashboard is an
optional extra, `pip install 'rldse[dashboard]'`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rldse.cli.common import presets_option
from rldse.errors import RldseError

HOST = "127.0.0.1"


def cmd_dashboard(args: argparse.Namespace) -> None:
    import optuna

    from rldse.search import load_study_file
    from rldse.search.storage import open_storage, storage_ref

    if not 1 <= args.port <= 65535:
        raise RldseError(f"--port {args.port}: expected a TCP port, 1 to 65535")
    try:
        from optuna_dashboard import run_server
    except ImportError:
        raise RldseError("rldse dashboard needs optuna-dashboard: "
                         "pip install 'rldse[dashboard]'") from None
    study_file = load_study_file(args.study)
    ref = storage_ref(study_file.out_dir, args.storage, study_file.storage_url,
                      f"{args.study}: storage")
    if ref.embedded and not Path(ref.url).is_file():
        raise RldseError(f"{args.study}: no study has run yet ({ref.shown} does not exist): "
                         f"run rldse search {args.study} first")
    storage = open_storage(ref)
    if study_file.study_name not in optuna.get_all_study_names(storage):
        raise RldseError(f"{args.study}: study '{study_file.study_name}' is not in "
                         f"{ref.shown}: run rldse search {args.study} first")
    print(f"optuna-dashboard for study '{study_file.study_name}' ({ref.shown}) on "
          f"http://{HOST}:{args.port}/ (Ctrl-C stops it)", flush=True)
    run_server(storage, host=HOST, port=args.port)


def add_parser(sub) -> None:
    da = sub.add_parser("dashboard", help="browse a search study in optuna-dashboard "
                        "(on 127.0.0.1; pip install 'rldse[dashboard]')")
    da.add_argument("study", help="study file (YAML) that rldse search ran")
    da.add_argument("--port", type=int, default=8080, help="TCP port (default 8080)")
    da.add_argument("--storage", metavar="URL",
                    help="the study's database, when rldse search was given --storage")
    presets_option(da)
    da.set_defaults(func=cmd_dashboard)
