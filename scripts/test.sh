#!/usr/bin/env bash
# The whole default test suite (lint + pytest) in the project's own virtual environment.
# Slow checks are marked `slow` and run with scripts/test-slow.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
ruff check rldse tests benchmarks
set +e
# two workers, each running whole files in their order (loadfile): on a 2-core host beside
# two busy processes they get half the CPU where one process gets a third
python -m pytest -q -n 2 --dist loadfile "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi
exit "$rc"
