#!/usr/bin/env bash
# Build the documentation site (docs/, mkdocs.yml) with --strict: a broken link or page fails.
#   bash scripts/docs.sh            (the site goes to site/, which git ignores)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=.venv-docs
python="${PYTHON:-python3.11}"
if ! "$venv/bin/python" -c "import mkdocs, material" 2>/dev/null; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # The `docs` extra of pyproject.toml, without installing the package itself.
  "$venv/bin/python" - <<'PY' > "$venv/docs-requirements.txt"
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["docs"]))
PY
  "$venv/bin/python" -m pip install --quiet -r "$venv/docs-requirements.txt" 2>&1 \
    | { grep -v "^WARNING: Location 'file:.*' is ignored" || true; }
fi
NO_MKDOCS_2_WARNING=1 "$venv/bin/mkdocs" build --strict --quiet --site-dir site
echo "== docs: mkdocs build --strict passed ($(find site -name '*.html' | wc -l) pages)"
