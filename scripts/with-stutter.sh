#!/usr/bin/env bash
# Run a command as a starved process runs: in its own process group (every server and process it
# starts inherits it), stopped for $STOP_S seconds (default 2) of every $STOP_S + $RUN_S (RUN_S
# default 1), until it ends. It shows that a command survives pauses, only slower; it does not
# find the `realtime` tests (docs/development.md): it pauses a test and the servers and threads
# it started together, where a nice-19 lane beside busy Spark lanes starves each of them on its
# own schedule. The Spark-free set passed under it (2026-11-29):
#   ./scripts/with-stutter.sh .venv/bin/python -m pytest -m "not spark and not browser"
set -euo pipefail
STOP_S="${STOP_S:-2}"
RUN_S="${RUN_S:-1}"
setsid "$@" &
PID=$!
stutter() {
    while kill -0 "$PID" 2>/dev/null; do
        sleep "$RUN_S"
        kill -STOP -- "-$PID" 2>/dev/null || return 0
        sleep "$STOP_S"
        kill -CONT -- "-$PID" 2>/dev/null || return 0
    done
}
stutter &
STUTTER=$!
trap 'kill "$STUTTER" 2>/dev/null; kill -CONT -- "-$PID" 2>/dev/null; kill -- "-$PID" 2>/dev/null || true' INT TERM
echo "[stutter] process group $PID: stopped ${STOP_S} s of every $((STOP_S + RUN_S))" >&2
set +e
wait "$PID"
RC=$?
set -e
kill "$STUTTER" 2>/dev/null || true
wait "$STUTTER" 2>/dev/null || true
exit "$RC"
