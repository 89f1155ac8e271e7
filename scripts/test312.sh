#!/usr/bin/env bash
# The Python 3.12 leg: verl main's GPU image and Ascend's 9.1.0 image are Python 3.12, and megatron-core 0.17
# and later install only there. A fresh venv (.venv-py3.12 in the repo root) with this package, WITHOUT torch:
# its own dependencies, verl --no-deps (its config YAML files; nothing of verl is imported to compose), the
# newest megatron-core --no-deps (its version picks the shipped field list; it is not imported), pytest and
# hypothesis; then the tests marked py312 (tests/integration/test_py312.py: every preset composes and
# dry-runs). Prints the wall time of the install and of the tests.
#
#   bash scripts/test312.sh [pytest args...]      (PYTHON=... to choose the interpreter)
set -euo pipefail
unset PYTHONDONTWRITEBYTECODE  # the venv keeps the bytecode of what the tests import (see scripts/test.sh)
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=.venv-py3.12
python="${PYTHON:-python3.12}"
export PYENV_VERSION="${PYENV_VERSION:-3.12.1}"
verl_version=$(sed -n 's/^verl==//p' constraints/verl-0.9.txt)
start=$(date +%s)

rm -rf "$venv"
"$python" -m venv "$venv"
# pip -q still warns about each package that this machine's local extra indexes lack: drop that noise.
"$venv/bin/python" -m pip install --quiet --no-compile -e . pytest hypothesis 2>&1 \
  | { grep -v "^WARNING: Location 'file:.*' is ignored" || true; }
"$venv/bin/python" -m pip install --quiet --no-compile --no-deps "verl==${verl_version}" megatron-core 2>&1 \
  | { grep -v "^WARNING: Location 'file:.*' is ignored" || true; }
"$venv/bin/python" - <<'PY'
import importlib.util
import sys
from importlib.metadata import version

print(f"   Python         {sys.version.split()[0]}")
for name in ("verl", "megatron-core", "hydra-core", "omegaconf"):
    print(f"   {name:14} {version(name)}")
if importlib.util.find_spec("torch") is not None:
    sys.exit("torch is installed: the 3.12 leg runs without it")
if sys.version_info < (3, 12):
    sys.exit("not Python 3.12")
PY
installed=$(date +%s)
echo "== Python 3.12 install: $((installed - start)) s"

status=0
"$venv/bin/python" -m pytest -q -p no:cacheprovider -m py312 tests/integration/test_py312.py "$@" || status=$?
echo "== Python 3.12 tests: $(($(date +%s) - installed)) s (install + tests: $(($(date +%s) - start)) s)"
exit "$status"
