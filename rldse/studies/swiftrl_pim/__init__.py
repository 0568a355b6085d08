"""SwiftRL (Gogineni et al., ISPASS 2024, arXiv 2405.03967): offline tabular Q-learning and
SARSA on UPMEM processing-in-memory, the experience dataset split over DPUs.

Data (``data``): per environment, a dataset of transitions from a uniform-random behaviour
policy, generated at study time from the Gymnasium env's own transition model (seeded; as
SwiftRL's published datasets are made), or SwiftRL's files when study.yaml names them.

Runs (``runs``). Learning, real: ``tabular.train_offline`` runs the split-and-average scheme
(each agent learns over its contiguous chunk, the host averages the tables) in INT32 fixed
point and FP32, for one agent over the whole dataset and for the DPU counts of
``learning.dpus``; each greedy policy is evaluated exactly and set beside the optimal
policy's. These runs are also the traces the twin replays. Time, simulated:
``tabular.program`` replays the traces on upmem-p21 for every DPU count of
``scaling.dpus`` with the paper's program, SwiftRL's released kernel
(``workload.pim_kernel: released``: uint8 table, emulated FP64, no tasklet split, one
gather; Q-learning), and as a labelled what-if rldse's split INT32 and FP32 kernels; beside
them an 8-core xeon-silver-4110 running the compiled loop and an a100-40g with as many
agents (the same computation). SwiftRL's multi-agent reference (1,000 agents × 10 passes ×
10k FrozenLake transitions, tables averaged on the host) is learned and timed too.

Report (``report``, ``figures``): every claim judged per configuration under the strict
rule of rldse.studies.report; the released kernel's rows are reproductions, the split
kernel's rows are of kind "what-if".
"""

from __future__ import annotations

from pathlib import Path

from rldse.studies.report import Report
from rldse.studies.swiftrl_pim import report
from rldse.studies.swiftrl_pim.runs import collect, measure_cpu_baselines, plan

__all__ = ["measure_cpu_baselines", "plan", "run"]


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    """Run the study into ``out`` (the study run's new outputs folder): every learned and
    simulated point (results.csv, learning.csv), then the report with its figures."""
    return report.build(collect(study_dir, out, progress), out)
