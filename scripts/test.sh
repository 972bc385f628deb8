#!/usr/bin/env bash
# The README's test command: set-up on first use, then lint, type-check and the test suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
"$ROOT/.venv/bin/ruff" check reuse tests benchmarks
"$ROOT/.venv/bin/mypy" --no-error-summary reuse
exec "$VENV_PY" -m pytest -p no:cacheprovider "$@"
