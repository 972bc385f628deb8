#!/usr/bin/env bash
# Run a command on a loaded machine: N busy loops (default: one per core) compete with it for
# the CPU from its start to its end, then are stopped by PID. For checking that the tests do
# not depend on timing:  ./scripts/with-cpu-hog.sh ./scripts/test.sh
set -euo pipefail
N="${HOG:-$(nproc)}"
pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq "$N"); do
    (while :; do :; done) &
    pids+=($!)
done
echo "[hog] $N busy loops: ${pids[*]}" >&2
"$@"
