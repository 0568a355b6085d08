#!/usr/bin/env bash
# The main job: one complete example study, end to end, on shipped data, with the
# embedded (Optuna journal file) storage. Makes its own virtual environment on first use.
#   Inci et al.'s CPU/GPU-ratio study: sweep actors and cores per GPU of a DGX-1-like
#   machine from the shipped PPO trace, find the knee and the best ratio, then an Optuna
#   search for the best ratio under a power cap. Writes studies/cpu_gpu_ratio/out/ and
#   ends with the headline: the claims' verdicts (with rldse's band where banded), the
#   best feasible design with its throughput, steps/J and power, and one recommendation
#   with the rule that chose it, the binding constraint and each constraint's slack.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
rldse study run "${1:-cpu_gpu_ratio}"
