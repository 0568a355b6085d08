#!/usr/bin/env bash
# Run a command with the host loaded as in CI: two busy Python loops beside it (unpinned),
# killed (by their own process ids) when the command ends, however it ends.
#   benchmarks/probes/with_busy_loops.sh python benchmarks/fidelity/fidelity_dqn.py --no-isolated
set -u
python="${PYTHON:-python}"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
for _ in 1 2; do
    "$python" -c 'while True: pass' &
    pids+=("$!")
done
"$@"
