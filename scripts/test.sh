#!/usr/bin/env bash
# The README's test command: set-up on first use, then lint, type-check, the docs build and the
# test suite (pytest arguments pass through).
#   ./scripts/test.sh           everything: two pytest processes at once, the Spark and browser
#                               tests in this one (slowest 20 listed; those that start several
#                               JVMs last), the others beside it; under 15 minutes of pytest
#                               on this 2-core machine, idle or under two busy loops where it
#                               runs as root (each pass's times: BENCHMARKS.md, from
#                               docs/bench/fresh_clone.json)
#   ./scripts/test.sh --fast    no Spark, no browser, no notebook batch: the developer's loop
#                               (about 3.5 minutes)
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
    exec "$VENV_PY" -m pytest -p no:cacheprovider -m "not spark and not browser and not notebooks" "$@"
fi
# the visualizer's end-to-end test drives Debian's chromium (installed here if missing)
bash "$ROOT/scripts/install-browser.sh"
# the documentation site: a broken link or a page missing from the nav fails the run
NO_MKDOCS_2_WARNING=1 "$ROOT/.venv/bin/mkdocs" build --strict --quiet --site-dir "$ROOT/site"
# Two pytest processes. The Spark and browser tests run one after another in the foreground:
# they share one Spark session, and two at once on two cores starve each other (an operation
# outlasts the lead its test allows). Every other test (CPU-bound, a few minutes) runs beside
# them in the background, at a third of their CPU weight: on an idle machine it takes the core
# the Spark tests leave idle (they mostly wait for a paced replay) and a quarter of one they
# want. Where the runner may raise a priority (root, as on CI and this machine) the Spark lane
# runs at nice -5 and the others at 0; elsewhere at 0 and 5 (the same ratio of weights). On a
# machine loaded by other busy processes at nice 0 the difference shows: at 0 and 5 the
# Spark lane shared its core with them and the others got a fifth of a core, so a pass under
# two busy loops took 16:13 and 18:18 (2026-11-28, docs/bench/fresh_clone.json); at -5 and 0
# the Spark lane keeps its core and the others get a share like the busy loops': 13:24 and
# 10:42 (the same day, the same record). (At nice 19 the others got nothing: 21 min 51 s,
# 2026-11-27.) Once the Spark lane is done the others keep their priority: where it was
# lowered (5), raising it back needs the root this runner lacks. Its report is printed at the
# end. (pytest-xdist's --dist loadgroup would do this in one command, but with pytest 9 it
# ignores the groups.) The tests that start several JVMs (`many_jvms`) stay in the Spark
# lane, last. Run beside the other Spark tests in a process of their own (2026-11-29) they
# made the suite shorter (about 10 minutes against 15) but not reliable: both recorded passes
# were red, on tests whose drivers step by the wall clock (a trace nearly over before the
# first outputs), a live view's refresh and a notebook cell's 4 s limit (the passes of
# 9b7feec and 291ca6d in docs/bench/fresh_clone.json). Exit code 5, "no test collected", is a
# pass: arguments may select tests of one kind only.
# Every JVM the tests start (sessions, `reuse run` drivers, instances, a cluster's master and
# workers) compiles with C1 only: a test's JVM lives a minute or two, where C2's compiling
# costs more CPU than it saves (a local[2] session with one short query: 9 s of CPU against
# 16 s, 2026-11-28). Correctness does not depend on it; the benchmarks leave the JVM's default.
# They also map Spark's classes from a class-data-sharing archive (scripts/spark_cds.py: written
# once per venv, JDK and pyspark, about 40 s on a fresh clone) instead of loading and verifying
# them again: they start sooner, on less CPU (benchmarks/jvm_cds.py, in BENCHMARKS.md). Without
# the archive (it could not be written) they start as before.
JVM_OPTS="-XX:TieredStopAtLevel=1"
CDS_LOG="$ROOT/.venv/spark-cds.log"
if CDS="$(PYSPARK_PYTHON="$VENV_PY" SPARK_SUBMIT_OPTS="$JVM_OPTS" \
        "$VENV_PY" "$ROOT/scripts/spark_cds.py" "$ROOT/.venv/spark-cds" 2>"$CDS_LOG" | tail -n 1)" \
        && [ -f "$CDS" ]; then
    JVM_OPTS="$JVM_OPTS -XX:SharedArchiveFile=$CDS -Xlog:cds=off -Xlog:cds+dynamic=off"
else
    echo "[test] no class-data archive for the JVMs (see $CDS_LOG): they start without one" >&2
fi
export SPARK_SUBMIT_OPTS="${SPARK_SUBMIT_OPTS:-$JVM_OPTS}"
export SPARK_DAEMON_JAVA_OPTS="${SPARK_DAEMON_JAVA_OPTS:-$JVM_OPTS}"
OUT="$(mktemp -d)"
if [ "$(nice -n -5 nice 2>/dev/null)" = "$(( $(nice) - 5 ))" ]; then
    SPARK_NICE=-5 REST_NICE=0
else
    SPARK_NICE=0 REST_NICE=5
fi
nice -n "$REST_NICE" "$VENV_PY" -m pytest -p no:cacheprovider -q -m "not spark and not browser" \
    --basetemp="$OUT/basetemp" "$@" >"$OUT/rest.txt" 2>&1 &
REST=$!
trap 'kill "$REST" 2>/dev/null || true' EXIT
set +e
nice -n "$SPARK_NICE" "$VENV_PY" -m pytest -p no:cacheprovider -m "spark or browser" \
    --durations=20 "$@"
SPARK=$?
wait "$REST"
OTHERS=$?
set -e
trap - EXIT
echo "======== the tests without Spark or a browser, run beside the above ========"
cat "$OUT/rest.txt"
rm -rf "$OUT"
[ "$SPARK" = 5 ] && SPARK=0
[ "$OTHERS" = 5 ] && OTHERS=0
echo "Spark and browser tests: exit $SPARK; the others: exit $OTHERS"
[ "$SPARK" = 0 ] && [ "$OTHERS" = 0 ]
