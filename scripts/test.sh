#!/usr/bin/env bash
# Install the project and its test extra (which holds the launch extra: verl's runtime) into a fresh
# virtualenv, then run the whole test suite, on every core (pytest-xdist; TEST_WORKERS=N to choose, 0 for one
# process).
#
#   bash scripts/test.sh [0.9|0.8] [pytest args...]     (default 0.9; pytest args alone work too)
#   bash scripts/test.sh 0.8 -m each_verl                (what CI runs on the second verl: what differs by verl)
#
# The venv is .venv-verl<version> in the repo root. It is reused while the constraints file and
# pyproject.toml are unchanged (their digest is kept in the venv); otherwise, or when it is missing
# or broken, it is removed and made anew, so nothing installed by hand outlives a change. torch is
# pinned through constraints/verl-<version>.txt (an unpinned torch pulls a multi-GB CUDA build);
# for 0.8 the constraints also pin verl==0.8.0. FRESH=1 forces a new venv; INSTALL_ONLY=1 stops after the install.
set -euo pipefail
# Let Python keep the bytecode of what the tests import in the venv. Containers often export
# PYTHONDONTWRITEBYTECODE=1 (this machine's image does); then every test process compiles torch, megatron-core
# and verl from source again: `import torch, megatron.core, verl.trainer.main_ppo` takes ~13 s that way, ~5.5 s
# from the cache.
unset PYTHONDONTWRITEBYTECODE

version=0.9
case "${1:-}" in
  0.9 | 0.8) version="$1"; shift ;;
  0.* | 1.*) echo "usage: $0 [0.9|0.8] [pytest args...]: verl $1 is not one CI tests" >&2; exit 2 ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")/.."
constraints="constraints/verl-${version}.txt"
venv=".venv-verl${version}"
python="${PYTHON:-python3.11}"

seconds() { date +%s; }
start=$(seconds)

# pip -q still warns about each package that this machine's local extra indexes lack: drop that noise.
pip_install() {
  "$venv/bin/python" -m pip install --quiet "$@" 2>&1 \
    | { grep -v "^WARNING: Location 'file:.*' is ignored: it is neither a file nor a directory" || true; }
}
digest=$(cat "$constraints" pyproject.toml | sha256sum | cut -d' ' -f1)
stamp="$venv/.verl_qwen35_inputs"
if [ "${FRESH:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] && "$venv/bin/python" -c "import verl_qwen35" 2>/dev/null; then
  echo "== verl ${version}: reusing ${venv} (constraints and pyproject.toml unchanged)"
else
  echo "== verl ${version}: fresh ${venv} ($("$python" --version))"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  pip_install --upgrade pip
  # --no-compile: pip would byte-compile every installed module (torch, Ray, ...), most of which no test imports;
  # Python compiles what is imported, once.
  pip_install --no-compile -c "$constraints" -e '.[test]'
  echo "$digest" > "$stamp"
fi

"$venv/bin/python" - "$version" <<'EOF'
import sys
from importlib.metadata import version

for name in ("verl", "torch", "megatron-core", "hydra-core", "omegaconf"):
    print(f"   {name:14} {version(name)}")
wanted = sys.argv[1]
if not version("verl").startswith(wanted + "."):
    sys.exit(f"expected verl {wanted}.x, got {version('verl')}")
EOF
installed=$(seconds)
if [ "${INSTALL_ONLY:-0}" = 1 ]; then
  echo "== verl ${version}: installed in $((installed - start)) s (INSTALL_ONLY=1: no tests)"
  exit 0
fi
echo "== installed in $((installed - start)) s; running pytest"

status=0
# Lint first (ruff is in the test extra): its findings fail the run, the tests still run.
"$venv/bin/ruff" check --quiet . && "$venv/bin/ruff" format --check --quiet . || status=1
# pytest's own exit code, then os._exit: the suite has run Ray, torch and megatron in this process, and
# their threads have once crashed the interpreter's teardown (exit 139) after every test had passed.
workers="${TEST_WORKERS:-auto}"
"$venv/bin/python" -X faulthandler -c '
import os, sys
import pytest
code = int(pytest.main(sys.argv[1:]))
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
' -n "$workers" "$@" || status=$?
echo "== verl ${version}: install $((installed - start)) s, tests $(($(seconds) - installed)) s, exit ${status}"
exit "$status"
