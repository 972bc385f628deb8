#!/usr/bin/env bash
# The README's test command: set-up on first use, then lint, type-check and the test suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
# the visualizer's end-to-end test drives Debian's chromium (installed here if missing)
bash "$ROOT/scripts/install-browser.sh"
"$ROOT/.venv/bin/ruff" check reuse tests benchmarks
"$ROOT/.venv/bin/mypy" --no-error-summary reuse
exec "$VENV_PY" -m pytest -p no:cacheprovider "$@"
