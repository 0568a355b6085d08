"""Search trials/min on studies/examples/cpu_gpu_ratio.yaml, without the results cache (an
empty out/) and with it (the same out/, a new study name: every point a cache hit).
Prints; not a test.   python benchmarks/search_cache.py [TRIALS]"""
import sys
import tempfile
from pathlib import Path

import yaml

import rldse
from rldse.search import run_study

root = Path(rldse.__file__).parents[1]

ex = root / "studies/examples/cpu_gpu_ratio.yaml"
body = yaml.safe_load(ex.read_text())
body["trace"] = str((ex.parent / body["trace"]).resolve())
trials = int(sys.argv[1]) if len(sys.argv) > 1 else 38
body["trials"] = trials
with tempfile.TemporaryDirectory() as tmp:
    for name in ("cold", "warm"):
        body["name"] = name
        p = Path(tmp) / "study.yaml"
        p.write_text(yaml.safe_dump(body, sort_keys=False))
        rep = run_study(p, workers=1, progress=False)
        print(f"{name}: {rep.finished_now} trials, {rep.simulated} sim, {rep.cache_hits} hits, {rep.elapsed_s:.1f}s, {rep.trials_per_min:.1f} trials/min")
