"""Measure SwiftRL's compiled CPU baseline once and store it as data.

``rldse study run swiftrl_pim`` times nothing (two runs must give the same claims.csv); it
reads ``rldse/studies/ckernel/measurements.json``. This script builds ``tabular_update.c``
with the system C compiler, times it on every dataset the study reads (the fastest of five
repeats of at least 1e6 updates each), and writes that file with its provenance: host, its
clock, the compiler's version, the flags and the UTC date. Run it on a quiet host:

    python benchmarks/external/swiftrl_cpu_baseline.py [--study studies/swiftrl_pim] [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rldse.errors import RldseError
from rldse.files import atomic_write_text
from rldse.studies import ckernel
from rldse.studies.swiftrl_pim import measure_cpu_baselines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", type=Path, default=Path("studies/swiftrl_pim"))
    parser.add_argument("--dry-run", action="store_true",
                        help="print the measurements instead of storing them")
    args = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="rldse-ckernel-") as cache:
            table = measure_cpu_baselines(args.study, Path(cache))
    except RldseError as exc:
        print(f"rldse: error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(table, indent=1) + "\n"
    print(text if args.dry_run else atomic_write_text(ckernel.SHIPPED, text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
