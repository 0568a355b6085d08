"""Split `rldse validate external --csv` GEMM errors by K alignment and footprint.

Why: to see whether a shared K-not-a-multiple-of-4 penalty or a footprint term could
close the leave-one-GPU-out miss on Pascal; this prints the signed median error per GPU
for each split so the effect can be compared across boards.

Usage:

    rldse validate external --csv rows.csv
    python benchmarks/fidelity/gpu_alignment_residuals.py rows.csv
"""

import csv
import math
import statistics
import sys
from collections import defaultdict

REGIME = "linear+bmm, all dims >= 512"
BYTES_PER_FP32 = 4
LARGE_FOOTPRINT_GB = 3.0


def _splits(case: str) -> dict[str, bool]:
    """Name -> membership for one 'op B,M,K,N' case."""
    batch, m, k, n = (int(x) for x in case.split(" ")[1].split(","))
    footprint_gb = BYTES_PER_FP32 * batch * (m * k + k * n + m * n) / 1e9
    return {"K%4==0": k % 4 == 0, "K%4!=0": k % 4 != 0,
            f"footprint>{LARGE_FOOTPRINT_GB:g}GB": footprint_gb > LARGE_FOOTPRINT_GB}


def main(path: str) -> None:
    logs: dict[tuple[str, str], list[float]] = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["regime"] != REGIME:
                continue
            for name, member in _splits(row["case"]).items():
                if member:
                    logs[(row["device"], name)].append(math.log1p(float(row["error"])))
    for (device, name), values in sorted(logs.items()):
        median = math.expm1(statistics.median(values))
        print(f"{device:16s} {name:18s} n={len(values):5d} signed median {median:+.1%}")


if __name__ == "__main__":
    main(sys.argv[1])
