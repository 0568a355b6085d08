# Sourced by the other scripts: make (or reuse) .venv with rldse and its test tools installed.
# Reinstalls only when pyproject.toml or constraints.txt changed since the last install.
set -euo pipefail
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.rldse-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # torch first, pinned: the extras then find it satisfied instead of pulling CUDA wheels
  .venv/bin/python -m pip install -q torch==2.13.0
  # every other dependency at the version constraints.txt locks
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[test]'
  echo "$want" > "$stamp"
fi
# shellcheck disable=SC1091
source .venv/bin/activate
