"""TimeRL / Tempo (Silvestre and Pietzuch, arXiv 2501.05408): on-policy rollout storage
against GPU memory, in TimeRL's own program.

TimeRL runs REINFORCE and PPO as one compiled program with the environment on the GPU
(rldse.workloads.timerl.program: observations are born in device memory). Part 1 (PPO,
256 envs × 1,000 steps, fp32 observations of 3×64², 3×128², 3×256² on a 48 GiB RTX
A6000): which sizes the baselines' buffers do not fit without swapping, and whether
Tempo's swapping completes them within TimeRL's 384 GiB host. Part 2 (REINFORCE,
3×256²): Monte-Carlo keeps the whole rollout and swaps it out and back over the host
link; n-step TD frees each stored step after its backward, n + 1 steps later. Every
time is the part models' (GPU roofline, dispatch and kernel counts, host-link copies),
with a band over every ranged preset number (rldse.sim.bands' Latin hypercube); no
published time is an input.

Parameters (``params``), the runs in closed form and at the band draws, and each
configuration booked once on a Machine for its busy time and energy (``runs``), the
claims (``claims``), the figures (``figures``) and the report (``report``).
"""

from __future__ import annotations

from pathlib import Path

from rldse.studies.report import Report
from rldse.studies.timerl_memory import report
from rldse.studies.timerl_memory.runs import collect, plan

__all__ = ["plan", "run"]


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    """Run the study into ``out``: every run (results.csv, events.csv), then the report
    and its figures."""
    return report.build(collect(study_dir, out, progress), out)
