#!/usr/bin/env bash
# Idempotent set-up shared by the README's two commands: Java check, .venv/, the project's data.
# Sourced, not run: it leaves VENV_PY pointing at the venv's interpreter.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"

say() { printf '[setup] %s\n' "$*" >&2; }

# 1. Java 17+ (Spark 4 needs it).
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1; }
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "Java 17+ missing: installing Debian's openjdk-17-jre-headless"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    else
        echo "setup: Java 17 or newer is required by Spark 4 (install openjdk-17-jre-headless)" >&2
        exit 1
    fi
fi

# 1b. redis-server for `reuse run --bus redis` (optional: only that bus and its test need it).
if ! command -v redis-server >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's redis-server (for --bus redis; the project starts it itself)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; } \
        || say "note: apt-get install redis-server failed; the Redis bus test will be skipped"
fi

# 1c. mosquitto for `reuse broker` and `reuse publish` (optional: only the MQTT path and its tests
# need it; Debian puts it in /usr/sbin, which a non-root PATH may lack).
if ! command -v mosquitto >/dev/null 2>&1 && [ ! -x /usr/sbin/mosquitto ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's mosquitto (for reuse broker; the project starts it itself)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto >/dev/null; } \
        || say "note: apt-get install mosquitto failed; the MQTT tests will be skipped"
fi

# 2. The virtual environment, reinstalled when pyproject.toml changes.
if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV"
    python3 -m venv "$VENV"
fi
STAMP="$VENV/.installed-$(sha1sum "$ROOT/pyproject.toml" | cut -c1-12)"
if [ ! -f "$STAMP" ]; then
    say "installing the project and its dependencies into .venv (first run builds pyspark: a few minutes)"
    if ! { "$VENV/bin/python" -m pip install --upgrade pip \
           && "$VENV/bin/python" -m pip install -e "$ROOT[dev]"; } >"$VENV/install.log" 2>&1; then
        tail -n 20 "$VENV/install.log" >&2
        echo "setup: installing the project into .venv failed (full log: .venv/install.log)" >&2
        exit 1
    fi
    rm -f "$VENV"/.installed-*
    touch "$STAMP"
fi
VENV_PY="$VENV/bin/python"
export VENV_PY

# 3. Data (third-party, never committed): each missing part of data/ is copied from
# $REUSE_SHARED_DATA or ../shared/data when there, else downloaded from its upstream repository
# at pinned commits ($REUSE_DATA_MIRROR overrides the base URL) and checked against the SHA-256
# sums in reuse/workloads/datasets.tsv. See reuse/workloads/datasets.py; data/README.md records the provenance.
if [ ! -d "$ROOT/data/opmw" ] || [ ! -d "$ROOT/data/riotbench" ]; then
    (cd "$ROOT" && "$VENV_PY" -m reuse.workloads.datasets fetch --data "$ROOT/data")
fi
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$VENV_PY"
