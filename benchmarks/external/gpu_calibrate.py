"""Measure a real NVIDIA GPU: now `rldse calibrate gpu` (rldse/calibrate/gpu.py, which holds
every measurement this script made, plus the measurement → preset field table).

Kept as a thin wrapper, so old notes still work:

    # the same as rldse calibrate gpu ...
    python benchmarks/external/gpu_calibrate.py --name h100-here -o presets/
"""

from __future__ import annotations

import sys

from rldse.cli import main

if __name__ == "__main__":
    sys.exit(main(["calibrate", "gpu", *sys.argv[1:]]))
