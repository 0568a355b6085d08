# Sourced by the other scripts: make (or reuse) .venv with rldse and its test tools installed.
# Reinstalls only when pyproject.toml changed since the last install.
set -euo pipefail
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.rldse-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # torch first, pinned: the extras then find it satisfied instead of pulling CUDA wheels
  .venv/bin/python -m pip install -q torch==2.13.0
  .venv/bin/python -m pip install -q -e '.[test]'
  echo "$want" > "$stamp"
fi
# shellcheck disable=SC1091
source .venv/bin/activate
