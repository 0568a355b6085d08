"""AMPER (Li et al., ICCAD 2022, arXiv 2207.07791): prioritized replay whose sum-tree
sampling is replaced by nearest-neighbour searches over quantized priorities in TCAM.

Runs (``runs``). Part 1 (latency): for buffer sizes 2^13..2^20 and several batch sizes, the
AMPER sampler (rldse.workloads.offpolicy.amper) runs on priorities drawn from a real PER
buffer and counts its TCAM searches and candidate-set entries; each TCAM preset turns those
counts into latency and energy (rldse.models.tcam: every search's H-tree key broadcast,
array search and match merge, the random numbers and the candidate-buffer reads), and each
GPU preset costs PER's sum-tree descent (rldse.models.gpu.sumtree_seconds). Part 2
(learning): DQN on CartPole with uniform, PER, AMPER-k and AMPER-fr replay, same seeds;
final returns and learning curves. Part 3: the shipped capture of the AMPER-k run
(study.yaml's end_to_end.trace: timed once, so the study times nothing live) replayed by
the engine with replay on CPU, GPU and TCAM.

Report (``report``, ``figures``): the GPU/TCAM latency ratio set beside the published
55×–270× per configuration, and AMPER's learning beside PER's.
"""

from __future__ import annotations

from pathlib import Path

from rldse.studies.amper_replay import report
from rldse.studies.amper_replay.runs import collect, plan
from rldse.studies.report import Report

__all__ = ["plan", "run"]


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    """Run the study into ``out`` (the study run's new outputs folder): every learning run,
    latency point and engine replay (results.csv and the others), then the report with its
    figures."""
    return report.build(collect(study_dir, out, progress), out)
