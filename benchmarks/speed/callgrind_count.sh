#!/usr/bin/env bash
# Deterministic instruction count of one fixed small simulate call (prints; not a test):
# a noise-free figure to compare commits. Needs valgrind (valgrind --tool=callgrind).
#   bash benchmarks/speed/callgrind_count.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
command -v valgrind >/dev/null || { echo "valgrind not installed"; exit 0; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
  "$PY" -c "
from rldse.sim import simulate
from rldse.system import load_spec
from rldse.trace import load_trace
t = load_trace('traces/actor_learner_cartpole_2.parquet')
r = simulate(t, load_spec('examples/dgx1_like.yaml', {'workload.env_steps': 20000}))
print(r.env_steps_per_s)
" 2>"$out/log"
grep -o "Collected : [0-9]*" "$out/log" | awk '{print "instructions (Ir), imports + one 20k-step simulate:", $3}'
