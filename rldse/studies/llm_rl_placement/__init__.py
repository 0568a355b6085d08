"""verl's DAPO on Qwen2.5-Math-7B over H20 nodes (verl-project/verl
docs/advance/fully_async.md): how to divide the GPUs between rollout engines and the
trainer, colocated against split, from the llm_rl family's models (docs/llm-rl.md).

Every configuration is one ``rldse.simulate`` of the llm_rl trace on the study's system
file with the page's columns (``runs``); the claims set the simulated ratios against the
page's (``report``). The mean response length, which the page does not publish, is the
one inferred number (from the 32-GPU colocated row, as the verl validation infers it).
"""

from __future__ import annotations

from pathlib import Path

from rldse.studies.llm_rl_placement import report
from rldse.studies.llm_rl_placement.runs import collect, plan
from rldse.studies.report import Report

__all__ = ["plan", "run"]


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    """Run the study into ``out``: every configuration (results.csv), the bands of the
    claimed ones (bands.csv), then the report and its figures."""
    return report.build(collect(study_dir, out, progress), out)
