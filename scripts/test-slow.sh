#!/usr/bin/env bash
# The slow checks (marked `slow`): longer learning runs and timing checks.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
exec python -m pytest -q -m slow "$@"
