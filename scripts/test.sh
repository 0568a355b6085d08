#!/usr/bin/env bash
# The whole default test suite (lint + pytest) in the project's own virtual environment.
# Slow checks are marked `slow` and run with scripts/test-slow.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
ruff check rldse tests benchmarks
# compiled once here, so the suite's subprocesses (search workers, killed study runs) do
# not each recompile rldse where PYTHONDONTWRITEBYTECODE is set, as on CI's image
python -m compileall -q -j 0 rldse >/dev/null
set +e
# one worker per CPU (at most 4: each holds torch and a study's data), each starting on a
# contiguous run of the tests (so a file's module fixtures mostly run once) and taking
# half of a busier worker's rest when it runs out; RLDSE_TEST_WORKERS=0 runs in-process
python -m pytest -q -n "${RLDSE_TEST_WORKERS:-auto}" --maxprocesses 4 --dist worksteal "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi
exit "$rc"
