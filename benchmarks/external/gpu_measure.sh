#!/usr/bin/env bash
# The GPU-measurement run as done on a lent GPU machine (see benchmarks/external/gpu_measure.py):
# Tempo's kernel under JAX in its own process first (JAX and PyTorch then never share the
# GPU's memory), then every PyTorch section; everything ends up in DEST/gpu_measure.tgz,
# the log beside it.   bash benchmarks/external/gpu_measure.sh DEST [SECONDS]
set -uo pipefail
dest=${1:?usage: gpu_measure.sh DEST [SECONDS]}
limit=${2:-330}
work=$(mktemp -d)/gpu_measure
mkdir -p "$work" "$dest"
export PYTHONUNBUFFERED=1
timeout 60 python3 benchmarks/external/gpu_measure.py --out "$work" --only tempo_jax >"$work/jax.log" 2>&1
echo "tempo_jax exit $?" >>"$work/jax.log"
timeout "$limit" python3 benchmarks/external/gpu_measure.py --out "$work" 2>&1 | tee "$work/log.txt"
tar czf "$dest/gpu_measure.tgz" -C "$(dirname "$work")" gpu_measure
cp "$work/log.txt" "$work/jax.log" "$dest/"
