"""The CPU/GPU-ratio study draws its sweep figure."""

from __future__ import annotations


def test_cpu_gpu_ratio_sweep_figure_is_written(ratio_out):
    assert (ratio_out / "ratio.png").stat().st_size > 10_000
