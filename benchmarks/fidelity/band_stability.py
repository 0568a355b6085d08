"""How stable are a study's bands between Latin-hypercube seeds? Runs a study twice in
temporary copies of its folder (run from the repository root), with ``--draws`` draws and
band seeds 0 and 1, and prints every banded claim's p5 and p95 from both runs with their
relative difference (target: within 5 %), plus the worst. Used to pick each study.yaml's draw count.

    python benchmarks/fidelity/band_stability.py timerl_memory --draws 64
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from rldse.studies import run_study

#: where each study keeps its draw count and band seed: (file, key path, seed key path)
DRAWS = {
    "timerl_memory": ("study.yaml", ("bands",), ("seed",)),
    "pearl_mapping": ("study.yaml", ("fpga_platform", "bands"), ("fpga_platform", "seed")),
    "cpu_gpu_ratio": ("study.yaml", ("bands",), None),  # seed: search.yaml's
    "amper_replay": ("study.yaml", ("latency", "bands"), ("latency", "bands_seed")),
    "swiftrl_pim": ("study.yaml", ("scaling", "bands"), ("scaling", "bands_seed")),
}


def _set(doc: dict, path: tuple[str, ...], value) -> None:
    for key in path[:-1]:
        doc = doc[key]
    if path[-1] not in doc:
        raise SystemExit(f"{'.'.join(path)}: not in the study's file")
    doc[path[-1]] = value


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def run(name: str, draws: int, seed: int, root: Path) -> pd.DataFrame:
    src = Path("studies") / name
    (root / "traces").symlink_to(Path("traces").resolve())  # studies name ../../traces/...
    root = root / "studies"
    dst = root / name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("out"))
    file, draws_at, seed_at = DRAWS[name]
    doc = yaml.safe_load((dst / file).read_text())
    _set(doc, draws_at, draws)
    if seed_at is not None:
        _set(doc, seed_at, seed)
    (dst / file).write_text(yaml.safe_dump(doc, sort_keys=False))
    if seed_at is None:  # cpu_gpu_ratio: the band seed is the search file's seed
        search = yaml.safe_load((dst / "search.yaml").read_text())
        search["seed"] = seed
        (dst / "search.yaml").write_text(yaml.safe_dump(search, sort_keys=False))
    run_study(name, root, progress=False)
    return pd.read_csv(dst / "out" / "claims.csv")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", choices=sorted(DRAWS))
    parser.add_argument("--draws", type=int, required=True)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rldse-bands-") as tmp:
        a, b = (run(args.study, args.draws, s, _mkdir(Path(tmp) / f"seed{s}")) for s in (0, 1))
    rows = []
    for (_, x), (_, y) in zip(a.iterrows(), b.iterrows(), strict=True):
        if pd.isna(x.p5) or x.p5 == x.p95:
            continue
        d5 = abs(y.p5 - x.p5) / abs(x.p5) if x.p5 else float("inf")
        d95 = abs(y.p95 - x.p95) / abs(x.p95) if x.p95 else float("inf")
        rows.append({"claim": x.claim[:60], "p5 s0": x.p5, "p5 s1": y.p5, "dp5": d5,
                     "p95 s0": x.p95, "p95 s1": y.p95, "dp95": d95,
                     "verdicts": f"{x.verdict} / {y.verdict}"})
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    worst = max(table.dp5.max(), table.dp95.max()) if len(table) else 0.0
    print(f"{args.study}: {args.draws} draws, worst p5/p95 change between seeds 0 and 1: "
          f"{worst:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
