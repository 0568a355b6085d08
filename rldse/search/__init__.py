"""Search the machine design: Optuna studies over SystemSpec paths.

`load_study_file(path)` checks a study file (rldse.search.study_file); `run_study(path,
...)` runs it to its budget and writes the trials table, figures and best SystemSpecs
(rldse.search.report). `rldse search STUDY.yaml` is `run_study` on the command line.
Imported on first use, so that reading ``rldse.search.metrics`` (`rldse metrics`) does not
load Optuna and pandas.
"""

from importlib import import_module

_API = {
    "StudyFile": "rldse.search.study_file",
    "StudyReport": "rldse.search.report",
    "load_study_file": "rldse.search.study_file",
    "run_study": "rldse.search.run",
}
__all__ = list(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'rldse.search' has no attribute {name!r}")
    return getattr(import_module(_API[name]), name)
