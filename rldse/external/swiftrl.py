"""Data set "swiftrl": SwiftRL's CPU baseline (Gogineni et al., ISPASS 2024, arXiv
2405.03967), the compiled single-threaded double-precision loop of its multi-agent reference
(1,000 agents × 10k FrozenLake transitions × 10 passes = 1e8 Q-learning updates), predicted
on the ``xeon-silver-4110`` preset.

Basis. SwiftRL published no CPU time for it, only that PIM was faster (studies/swiftrl_pim/
README.md), so there is no published measurement to compare against: the row's
``measured`` is empty and the summary leaves it out. The prediction is rldse's own
measurement of the same loop (``rldse/studies/ckernel``: ``tabular_update.c``, ``cc -O2``,
the fastest repeat, shipped in measurements.json) × the CPU model's single-thread scale
from the development host to the Xeon with one core busy (its single-core turbo:
``CpuModel.single_thread_scale(1)``, clock × instructions per clock). The host's clock is
the one measured by benchmarks/external/envpool_capture.py (a chain of one-cycle adds) where that
capture has it: the development VM's /proc/cpuinfo shows the nominal clock only.
"""

from __future__ import annotations

import pandas as pd

from rldse.external import ROW_COLUMNS, Dataset, register
from rldse.external.envpool import host_model
from rldse.studies.ckernel import stored

KEY = "FrozenLake-v1 multi-agent/q_learning"  # measurements.json's key for the reference
UPDATES = 100_000_000
PRESET = "xeon-silver-4110"


def rows() -> pd.DataFrame:
    ns = stored(KEY).best_ns
    predicted_s = UPDATES * ns * 1e-9 * host_model(PRESET).single_thread_scale(1)
    return pd.DataFrame([("swiftrl", PRESET, "compiled loop, one thread",
                          f"{UPDATES:.0e} double Q-updates (FrozenLake, 1,000 agents)",
                          float("nan"), predicted_s, "s")], columns=list(ROW_COLUMNS))


register(Dataset(
    name="swiftrl",
    description="SwiftRL's compiled CPU loop (1e8 double Q-updates) predicted on the Xeon "
                "Silver 4110 from the development host's measurement; SwiftRL published no "
                "CPU time to compare against",
    citation="Gogineni et al., SwiftRL, ISPASS 2024, arXiv 2405.03967",
    rows=rows,
    part_of=lambda device: f"cpu/{device}"))
