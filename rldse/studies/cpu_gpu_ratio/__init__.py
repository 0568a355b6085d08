"""Inci et al., "The Architectural Implications of Distributed Reinforcement Learning on
CPU-GPU Systems" (EMC2 2020, arXiv 2012.04210): the CPU/GPU ratio of an actor-learner
system, actors on CPU cores, learner and batched inference on the GPU.

The ratio is provisioned hardware: r actors per GPU each get a core of their own, and the
CPU is bought with r + 1 cores per GPU (the learner's dispatch keeps one) of the DGX-1's
part, the Xeon E5-2698 v4, on the fewest sockets (never more than the part's 20 cores per
socket nor the DGX-1's two sockets), so every core adds its price and its idle power
(docs/architecture.md, "Provisioned cores"). Part 1 sweeps r with one V100 (the machine, trace
and workload are the `base` of the study's search file) for each environment in
study.yaml, each with its own capture (CartPole-v1 with an MLP; ALE Pong with the Nature
CNN, whose env steps cost about 60 times more), the actors' and learner's costs from the
captures' per-op CPU time (rldse.trace.host_cost_s). It records throughput, steps per
joule and the engine's bottleneck, and the optimal ratio (most steps/J) with its band:
every ranged preset number sampled by rldse.sim.bands' Latin hypercube, the same draws at
every ratio, so each draw has its own optimum. Part 2 computes, from the same unit costs
the simulation books (`rldse.workloads.actor_learner.program.unit_costs.unit_costs`), the actors'
production rate and the learner's consumption rate, and the knee where they meet: a
consistency check of the simulation against closed-form rates, not a published value.
Part 3 runs the search file (an Optuna study, `rldse.search.run_study`) for the best
design under a power cap. Inci et al.'s readable publication here is the abstract: only
what it states is compared with (``ABSTRACT``); other rows say that nothing can be.

The parts: ``params`` (study.yaml), ``machine`` (the provisioned host per ratio), ``rates``
(the analytic rates), ``runs`` (the sweep, its bands and the search), ``report`` and
``figures``.
"""

from __future__ import annotations

from pathlib import Path

from rldse.studies.cpu_gpu_ratio import report
from rldse.studies.cpu_gpu_ratio.runs import collect, plan
from rldse.studies.report import Report

__all__ = ["plan", "run"]


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    """Run the study into ``out`` (the study run's new outputs folder): the sweep, its bands
    and the search (results.csv, out/search/), then the report with its figures."""
    return report.build(collect(study_dir, out, progress), out)
