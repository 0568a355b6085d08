#!/usr/bin/env bash
# The slow checks (marked `slow`): longer learning runs and timing checks, and every
# property test again under hypothesis's `slow` profile (tests/conftest.py: ten times the
# default suite's examples, freshly drawn).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
exec python -m pytest -q -m "slow or hypothesis" --hypothesis-profile slow "$@"
