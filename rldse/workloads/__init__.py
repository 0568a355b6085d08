"""Workloads: real RL training that records a Trace, beside the loop's simulated twin.

Each module exposes ``capture(cfg: CaptureConfig, progress: Progress) -> Trace``.
"""

from __future__ import annotations

from importlib import import_module

from rldse.threads import single_blas_thread
from rldse.trace import Trace
from rldse.workloads.base import CaptureConfig, Progress, no_progress

WORKLOADS = ("tabular", "dqn", "ddpg", "actor_learner")


def capture(cfg: CaptureConfig, progress: Progress = no_progress) -> Trace:
    """Run the real training `cfg` asks for and return its Trace."""
    with single_blas_thread():
        return import_module(f"rldse.workloads.{cfg.workload}").capture(cfg, progress)
