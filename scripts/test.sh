#!/usr/bin/env bash
# The README's test command: set-up on first use, then lint, type-check, the docs build and the
# test suite (pytest arguments pass through).
#   ./scripts/test.sh           everything, slowest 20 listed: two pytest processes (xdist),
#                               the Spark and browser tests one after another in one of them,
#                               every other test in the other meanwhile (tests/conftest.py)
#   ./scripts/test.sh --fast    no Spark, no browser: the developer's loop (about a minute)
# $REUSE_REQUIRE=redis,browser,data,mqtt,namespaces (.ci/run sets it) fails the tests that would skip for want
# of one of those real parts.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FAST=0
if [ "${1:-}" = "--fast" ]; then
    FAST=1
    shift
fi
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
"$ROOT/.venv/bin/ruff" check reuse tests benchmarks experiments mkdocs_hooks.py
"$ROOT/.venv/bin/mypy" --no-error-summary reuse
"$VENV_PY" "$ROOT/benchmarks/report.py" --check
if [ "$FAST" = 1 ]; then
    exec "$VENV_PY" -m pytest -p no:cacheprovider -n 2 -m "not spark and not browser" "$@"
fi
# the visualizer's end-to-end test drives Debian's chromium (installed here if missing)
bash "$ROOT/scripts/install-browser.sh"
# the documentation site: a broken link or a page missing from the nav fails the run
NO_MKDOCS_2_WARNING=1 "$ROOT/.venv/bin/mkdocs" build --strict --quiet --site-dir "$ROOT/site"
exec "$VENV_PY" -m pytest -p no:cacheprovider -n 2 --dist loadgroup --durations=20 "$@"
