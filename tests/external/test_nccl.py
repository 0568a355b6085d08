"""Data set "nccl": every published row is predicted, the regimes split by size, and the
issue's must-show holds: all-reduce bandwidth-bound median |error| within 15 % per system."""

import numpy as np

from rldse.external import predictions, summary
from rldse.external.nccl import SYSTEMS, regime


def test_regimes_split_at_one_and_sixty_four_mb():
    assert regime(524_288) == "latency-bound"
    assert regime(8 * 2**20) == "transition"
    assert regime(2**26) == "bandwidth-bound"


def test_all_reduce_bandwidth_bound_within_15_percent_on_every_system():
    rows = predictions(["nccl"])
    assert set(rows["device"]) == set(SYSTEMS)
    assert np.isfinite(rows["predicted"]).all() and (rows["predicted"] > 0).all()
    table = summary(rows)
    bound = table[table["regime"] == "bandwidth-bound; all-reduce"]
    assert set(bound["device"]) == set(SYSTEMS)
    assert (bound["median_abs_err"] <= 0.15).all(), bound
    assert (table["regime"].str.startswith("latency-bound")).any()
