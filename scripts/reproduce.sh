#!/usr/bin/env bash
# The README's main command: set-up on first use, then the papermill batch reproduction.
# Usage: ./scripts/reproduce.sh [PARAM_SET]   (default | full | tiny; default: default)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec "$VENV_PY" experiments/batch.py --set "${1:-default}"
