"""Search the machine design: Optuna studies over SystemSpec paths.

`load_study_file(path)` checks a study file (rldse.search.study_file); `run_study(path,
...)` runs it to its budget and writes the trials table, figures and best SystemSpecs
(rldse.search.report). `rldse search STUDY.yaml` is `run_study` on the command line.
"""

from rldse.search.report import StudyReport
from rldse.search.run import run_study
from rldse.search.study_file import StudyFile, load_study_file

__all__ = ["StudyFile", "StudyReport", "load_study_file", "run_study"]
