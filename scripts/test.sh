#!/usr/bin/env bash
# The whole default test suite (lint + pytest) in the project's own virtual environment.
# Slow checks are marked `slow` and run with scripts/test-slow.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
ruff check rldse tests benchmarks
# compiled once here, so the suite's subprocesses (search workers, killed study runs) do
# not each recompile rldse where PYTHONDONTWRITEBYTECODE is set, as on CI's image
python -m compileall -q rldse >/dev/null
set +e
python -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi
exit "$rc"
