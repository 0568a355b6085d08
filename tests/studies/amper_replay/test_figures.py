"""The AMPER study draws its three figures."""

from __future__ import annotations


def test_amper_figures_are_written(amper_out):
    for name in ("latency_vs_buffer.png", "latency_ratio.png", "learning_curves.png"):
        assert (amper_out / name).stat().st_size > 0
