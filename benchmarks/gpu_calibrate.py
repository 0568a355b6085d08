"""Measure a real NVIDIA GPU: now `rldse calibrate gpu` (rldse/calibrate/gpu.py, which holds
every measurement this script made, plus the measurement → preset field table).

Kept as a thin wrapper, so old notes still work:

    python benchmarks/gpu_calibrate.py --name h100-here -o presets/   # = rldse calibrate gpu ...
"""

from __future__ import annotations

import sys

from rldse.cli import main

if __name__ == "__main__":
    sys.exit(main(["calibrate", "gpu", *sys.argv[1:]]))
