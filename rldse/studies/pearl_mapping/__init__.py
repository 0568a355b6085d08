"""PEARL (Meng et al., arXiv 2311.09445): which device runs the replay manager, the learner
and the data storage.

Runs (``runs``). Part 1 replays DQN through the engine with PEARL's own measured tables as
table-driven parts, for every replay-manager/learner pair, and keeps the fastest, as
PEARL's system composer (SysCon.py) does from its analytical model; then places the data
storage with PEARL's traffic model (``storage``: hops × (latency + bytes / bandwidth); two
accelerators talk through the CPU). Part 2 lets rldse's spec-based parts choose the
placement for DQN and DDPG traces captured by rldse, and compares with the "CPU-GPU
library" mapping, at the presets' values and banded.

Report (``report``, ``figures``): the three part-1 claims are consistency checks (PEARL's
formula on PEARL's numbers); the platform's throughput and performance per watt are
reproductions, each workload judged on its own band.
"""

from __future__ import annotations

from pathlib import Path

from rldse.studies.pearl_mapping import report
from rldse.studies.pearl_mapping.runs import collect, plan
from rldse.studies.report import Report

__all__ = ["plan", "run"]


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    """Run the study into ``out`` (the study run's new outputs folder): every simulation
    (results.csv, fpga_platform.csv), then the report with its figures."""
    return report.build(collect(study_dir, out, progress), out)
