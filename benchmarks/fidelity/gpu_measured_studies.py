"""Re-run the seed-paper studies with the GPU constants measured on a real GPU, and list
every verdict that moved.

The studies' GPUs (A100, V100, RTX A6000) were never measured here; what was measured,
on an H200 (benchmarks/results/h200-2026-11-26, preset ``h200-measured``), are the
constants that belong to the framework and the driver more than to the board: the host's
dispatch time per PyTorch operator, the device time of a minimal kernel, and the operators
an eager sum-tree level takes. Each study GPU gets a copy of its datasheet preset with
those three replaced (``NAME-h200c``; every other number, ranges included, as packaged),
each study runs on both, and the claims are compared row by row.

``--dispatch-s`` replaces the measured floor (6.9 µs per operator in a tight loop) with
another value, e.g. the per-operator host time of the GPU DQN learn step captured on the
same host (about 40 µs: benchmarks/fidelity/gpu_vs_h200.py), to show which verdicts hang on it.

    python benchmarks/fidelity/gpu_measured_studies.py [--dispatch-s S] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from rldse.calibrate.preset_file import preset_document, write_preset_file
from rldse.models import presets
from rldse.models.spec import Param

ROOT = Path(__file__).resolve().parents[2]
MEASURED = "h200-measured"
CONSTANTS = ("dispatch_s", "kernel_overhead_s", "sumtree_ops_per_level")
STUDY_GPUS = ("a100-40g", "v100-sxm2", "rtx-a6000")


def measured_variants(out: Path, dispatch_s: float | None) -> dict[str, str]:
    """Write NAME-h200c presets to ``out``; returns {packaged name: variant name}."""
    measured = presets.get_preset("gpu", MEASURED).params
    names = {}
    for name in STUDY_GPUS:
        params = dict(presets.get_preset("gpu", name).params)
        for field in CONSTANTS:
            params[field] = measured[field]
        if dispatch_s is not None:
            params["dispatch_s"] = Param(dispatch_s, "s", f"--dispatch-s {dispatch_s:g} "
                                         "(benchmarks/fidelity/gpu_measured_studies.py)")
        variant = f"{name}-h200c"
        doc = preset_document("gpu", variant, f"{name} with {MEASURED}'s {', '.join(CONSTANTS)}",
                              params, {"base": name, "constants_from": MEASURED})
        write_preset_file(out, variant, doc)
        names[name] = variant
    return names


def run_studies(root: Path, preset_dir: Path | None) -> pd.DataFrame:
    cmd = [sys.executable, "-m", "rldse.cli", "study", "run", "--all", "--root", str(root)]
    if preset_dir is not None:
        cmd += ["--presets", str(preset_dir)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    frames = []
    for claims in sorted(root.glob("*/out/claims.csv")):
        df = pd.read_csv(claims)
        df["claim"] = df["claim"].str.replace("-h200c", "", regex=False)  # same key in both
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def copy_studies(dest: Path, rename: dict[str, str]) -> Path:
    shutil.copytree(ROOT / "studies", dest, ignore=shutil.ignore_patterns("out"))
    for yaml_file in dest.rglob("*.yaml"):
        text = yaml_file.read_text()
        for old, new in rename.items():
            text = text.replace(f": {old}", f": {new}").replace(f"[{old}", f"[{new}") \
                .replace(f", {old}]", f", {new}]")
        yaml_file.write_text(text)
    # relative paths to traces and data still resolve from the copy
    (dest.parent / "traces").symlink_to(ROOT / "traces")
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dispatch-s", type=float, help="dispatch_s for every variant instead "
                    f"of {MEASURED}'s")
    ap.add_argument("--keep", type=Path, help="folder to keep both runs' claims.csv in")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        names = measured_variants(tmp_path / "presets", args.dispatch_s)
        base = run_studies(copy_studies(tmp_path / "a" / "studies", {}), None)
        new = run_studies(copy_studies(tmp_path / "b" / "studies", names), tmp_path / "presets")
    keys = ["study", "claim"]
    both = base.merge(new, on=keys, suffixes=("_datasheet", "_measured"))
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        both.to_csv(args.keep / "claims_datasheet_vs_measured.csv", index=False)
    moved = both[both["verdict_datasheet"] != both["verdict_measured"]]
    print(f"{len(both)} claims; GPU constants from {MEASURED}"
          + (f", dispatch_s {args.dispatch_s:g} s" if args.dispatch_s else ""))
    for r in both.itertuples(index=False):
        mark = "MOVED" if r.verdict_datasheet != r.verdict_measured else "     "
        print(f"{mark} {r.study:14} {r.claim[:70]:70} p50 {r.p50_datasheet!s:>10} -> "
              f"{r.p50_measured!s:>10}  {r.verdict_datasheet} -> {r.verdict_measured}")
    print(f"{len(moved)} verdict(s) moved")


if __name__ == "__main__":
    main()
