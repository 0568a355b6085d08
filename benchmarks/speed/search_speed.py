"""Search trials/min on studies/examples/cpu_gpu_ratio.yaml: this tree against an older
commit, side by side in one run (prints; not a test).

Each tree runs the study in its own process (a fresh interpreter, this venv, the tree on
PYTHONPATH) twice: into an empty out/ (no results cache: every trial simulated or
estimated) and again under a new study name into the same out/ (every point a cache hit).
The older commit is checked out with ``git worktree add`` into a temporary folder and
removed afterwards. Default: 6f5675a, the commit before the first speed work (d8500c5).
The two trees alternate per repeat so load on a shared host hits both alike; the best of
the repeats is printed, with the ratio this tree / the older one. ``--this-tree-only``
skips the older commit (no git needed) and prints what the results cache buys: this
tree's warm / cold trials/min.

    python benchmarks/speed/search_speed.py [--commit 6f5675a] [--trials 38] [--repeats 2]
    python benchmarks/speed/search_speed.py --this-tree-only [--trials 38] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[2]
ONE_TREE = r"""
import json, sys, tempfile
from pathlib import Path
import yaml
from rldse.search import run_study
root, trials = Path(sys.argv[1]), int(sys.argv[2])
ex = root / "studies/examples/cpu_gpu_ratio.yaml"
body = yaml.safe_load(ex.read_text())
body["trace"] = str((ex.parent / body["trace"]).resolve())
body["trials"] = trials
out = {}
with tempfile.TemporaryDirectory() as tmp:
    for name in ("cold", "warm"):
        body["name"] = name
        p = Path(tmp) / "study.yaml"
        p.write_text(yaml.safe_dump(body, sort_keys=False))
        rep = run_study(p, workers=1, progress=False)
        out[name] = {"trials": rep.finished_now, "simulated": rep.simulated,
                     "hits": rep.cache_hits, "per_min": rep.trials_per_min}
print(json.dumps(out))
"""


def one(tree: Path, trials: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", ONE_TREE, str(tree), str(trials)],
                          env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def best_of(trees: list[tuple[str, Path]], trials: int, repeats: int) -> dict[str, dict]:
    """The fastest of ``repeats`` runs per tree and mode ("LABEL/cold", "LABEL/warm"), the
    trees alternating within each repeat."""
    best: dict[str, dict] = {}
    for _ in range(repeats):
        for label, tree in trees:
            for mode, r in one(tree, trials).items():
                key = f"{label}/{mode}"
                if key not in best or r["per_min"] > best[key]["per_min"]:
                    best[key] = r
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", default="6f5675a")
    ap.add_argument("--this-tree-only", action="store_true",
                    help="no older commit: this tree's cold and warm runs only")
    ap.add_argument("--trials", type=int, default=38)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    if args.this_tree_only:
        best = best_of([("this tree", ROOT)], args.trials, args.repeats)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            old = Path(tmp) / "old"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                            str(old), args.commit], check=True)
            try:
                best = best_of([(args.commit, old), ("this tree", ROOT)], args.trials,
                               args.repeats)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(old)], check=False)
    print(f"{args.trials} trials of cpu_gpu_ratio.yaml, 1 worker, best of {args.repeats}")
    for key, r in best.items():
        print(f"{key:>18}: {r['trials']} trials, {r['simulated']} simulated, {r['hits']} cache "
              f"hits, {r['per_min']:.1f} trials/min")
    warm = best["this tree/warm"]["per_min"] / best["this tree/cold"]["per_min"]
    print(f"results cache, this tree: warm / cold = {warm:.2f}x")
    if args.this_tree_only:
        return
    for mode in ("cold", "warm"):
        ratio = best[f"this tree/{mode}"]["per_min"] / best[f"{args.commit}/{mode}"]["per_min"]
        verdict = f" ({'PASS' if ratio >= 1.8 else 'FAIL'} against 1.8x)" if mode == "cold" \
            else " (cache hits: no target)"
        print(f"{mode}: this tree / {args.commit} = {ratio:.2f}x{verdict}")


if __name__ == "__main__":
    main()
