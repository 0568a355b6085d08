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
  # --no-compile: the installed packages are byte-compiled once at the end, on every CPU
  # (pip compiles one file at a time: two thirds of a fresh install's CPU time)
  .venv/bin/python -m pip install -q --no-compile --upgrade pip >/dev/null
  # torch first, pinned: the extras then find it satisfied instead of pulling CUDA wheels
  .venv/bin/python -m pip install -q --no-compile torch==2.13.0
  # every other dependency at the version constraints.txt locks, installed by uv (pinned):
  # the same versions as pip resolves from the same constraints, in a tenth of the time;
  # it leaves the torch above in place, which satisfies the pin
  # (pip, slower, if uv cannot be had or cannot reach the package index)
  if ! { .venv/bin/python -m pip install -q --no-compile uv==0.13.8 &&
         .venv/bin/uv pip install -q --python .venv/bin/python -c constraints.txt -e '.[test]'; }
  then
    echo "venv.sh: uv failed (above); installing with pip instead" >&2
    .venv/bin/python -m pip install -q --no-compile -c constraints.txt -e '.[test]'
  fi
  # packages' own test suites (a quarter of the bytes) are never imported here and stay
  # uncompiled; as with pip's own compile, files that are not this Python's syntax (torch's
  # tests of Python 3.12 syntax) do too: compileall reports them, so its status is not used
  .venv/bin/python -m compileall -q -j 0 -x '/(tests|testing/_internal)/' "$(.venv/bin/python \
    -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null 2>&1 || true
  echo "$want" > "$stamp"
fi
# shellcheck disable=SC1091
source .venv/bin/activate
