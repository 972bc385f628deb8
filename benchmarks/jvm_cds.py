"""A Spark JVM's start-up with and without the class-data-sharing archive the tests use
(``scripts/spark_cds.py``, issue 34's quicker suite), into ``docs/bench/jvm_cds.json``.

Each run is a fresh Python process that starts a local[2] session as the workbench does
(:func:`reuse.runtime.session.get_session`), runs one batch job and a streaming query for
three one-second batches, and stops. It reports its wall time to the query's end and the CPU
of itself and of its JVM up to then (``psutil``, read just before the session stops). The two
arms are interleaved, ``plain cds plain cds ...``, each with ``-XX:TieredStopAtLevel=1`` as
``scripts/test.sh`` gives the tests' JVMs; ``cds`` adds the archive. A difference is decided
by the spread rule (:mod:`reuse.runtime.spread`, ranges over the repetitions).

    .venv/bin/python benchmarks/jvm_cds.py [--reps 3] [--json docs/bench/jvm_cds.json]

Run it alone: it times JVM start-ups on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.provenance import raw_file  # noqa: E402

BASE = "-XX:TieredStopAtLevel=1"
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"

#: what one run does (a child process); prints one JSON line
_CHILD = r"""
import json, os, sys, time
t0 = time.time()
import psutil
from pyspark import SparkContext
from reuse.runtime.session import get_session, stop_session
spark = get_session("local[2]")
spark.range(1000).selectExpr("sum(id)").collect()
seen = []
q = (spark.readStream.format("rate").option("rowsPerSecond", 10).load().writeStream
     .trigger(processingTime="1 second").foreachBatch(lambda df, _: seen.append(df.count()))
     .start())
while len(seen) < 3:
    time.sleep(0.05)
q.stop()
wall = time.time() - t0
jvm = psutil.Process(SparkContext._gateway.proc.pid)
cpu = sum(p.cpu_times().user + p.cpu_times().system for p in [jvm, psutil.Process()])
stop_session(spark)
print(json.dumps({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}))
"""


def _archive() -> Path:
    """The tests' archive, written by ``scripts/spark_cds.py`` if missing (its path printed)."""
    env = {**os.environ, "SPARK_SUBMIT_OPTS": BASE, "PYSPARK_PYTHON": sys.executable}
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "spark_cds.py"),
                          str(ROOT / ".venv" / "spark-cds")], env=env, capture_output=True,
                         text=True, check=True)
    path = Path(out.stdout.strip().splitlines()[-1])
    assert path.is_file(), path
    return path


def one(arm: str, archive: Path) -> dict[str, Any]:
    """One fresh process and JVM of ``arm`` (``plain`` or ``cds``)."""
    opts = BASE if arm == "plain" else f"{BASE} -XX:SharedArchiveFile={archive} {QUIET}"
    env = {**os.environ, "SPARK_SUBMIT_OPTS": opts}
    t = time.time()
    got = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    if got.returncode != 0:
        raise SystemExit(f"jvm_cds: a {arm} run failed: {got.stderr.strip()[-500:]}")
    row = json.loads(got.stdout.strip().splitlines()[-1])
    return {"arm": arm, **row, "process_s": round(time.time() - t, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", type=Path, default=ROOT / "docs" / "bench" / "jvm_cds.json")
    args = ap.parse_args(argv)
    from reuse.runtime.spread import compare

    archive = _archive()
    runs = []
    for i in range(args.reps):
        for arm in ("plain", "cds"):
            runs.append({"rep": i + 1, **one(arm, archive)})
            print(json.dumps(runs[-1]), flush=True)
    verdicts = {}
    for key in ("wall_s", "cpu_s", "process_s"):
        v = compare("cds", [r[key] for r in runs if r["arm"] == "cds"],
                    "plain", [r[key] for r in runs if r["arm"] == "plain"], unit="s")
        verdicts[key] = v.to_dict()
        print(key, v.outcome, v.lower if v.outcome == "lower" else "")
    raw_file(args.json, {"runs": runs, "verdicts": verdicts},
             args={"reps": args.reps, "base_opts": BASE, "archive_mb":
                   round(archive.stat().st_size / 2**20)})
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
