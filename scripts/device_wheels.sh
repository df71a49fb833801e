#!/usr/bin/env bash
# Downloads into .whl/ (git-ignored) the wheels that the lent GPU machines lack, for their python3 (3.12,
# manylinux x86_64): FA3 (fa3-fwd) and quaere's own needs that the machine's image does not hold (pydantic
# and its parts, cryptography and its parts). Versions are the ones this checkout's .venv holds, so the
# device runs what the tests here ran. A device call then carries .whl and starts with
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#   export PYTHONPATH=$PWD/src:/tmp/site
# (scripts/gpu_validate.sh does this itself). Without these, `quaere eval` there stops at `import pydantic`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "device_wheels: no .venv here; run scripts/setup.sh first" >&2; exit 1; }
version() { "$PY" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p'; }
mkdir -p .whl
PLAT=(--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64
      --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64)
get() {  # NAME==VERSION; another version of NAME already in .whl/ goes (two stop the device's install)
  local norm
  norm=$(echo "${1%%==*}" | tr '-' '_')
  find .whl -maxdepth 1 -iname "${norm}-*.whl" ! -iname "${norm}-${1##*==}-*" -print -delete
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLAT[@]}" -d .whl "$1" 2>&1 | grep -v '^WARNING: Location' || true
  ls .whl | grep -qi "^${norm}-${1##*==}-" \
    || { echo "device_wheels: $1 was not downloaded" >&2; exit 1; }
}
get fa3-fwd==0.0.3
for name in pydantic pydantic_core annotated_types typing_inspection typing_extensions cryptography cffi pycparser; do
  v=$(version "$name")
  [ -n "$v" ] || { echo "device_wheels: $name is not in .venv" >&2; exit 1; }
  get "$name==$v"
done
echo "device_wheels: $(ls .whl | wc -l) wheels in .whl ($(du -sh .whl | cut -f1)); name .whl in the device call's carry"
