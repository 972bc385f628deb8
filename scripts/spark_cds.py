"""Write a class-data-sharing archive of Spark's JVM classes for the tests' JVMs (``scripts/
test.sh`` makes it once per venv, then passes it to every JVM the tests start).

Why: a test's JVM lives a minute or two, and a third of its start-up CPU goes to loading and
verifying Spark's classes, again in every one. A dynamic archive (JDK 13+:
``-XX:ArchiveClassesAtExit``) written by one short session that loads what the tests' JVMs load
(a local session, a streaming query, ``mapInPandas`` and ``foreachBatch``) is mapped by the
next JVMs instead, which start sooner and on less CPU (``benchmarks/jvm_cds.py`` measures it
into ``docs/bench/jvm_cds.json``; BENCHMARKS.md shows it). A JVM whose classpath or
JDK does not match the archive ignores it (the tests pass ``-Xlog:cds=off``), so a stale
archive costs time, not correctness; the file name carries a hash of the JDK's version and
pyspark's, so a new JDK or pyspark gets an archive of its own.

    python scripts/spark_cds.py DIR    # prints DIR/<key>.jsa, written first if missing (about
                                       # 170 MB, 40 s); exit 1 with one line if it cannot be
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def archive_path(folder: Path) -> Path:
    """Where the archive of this JDK and this pyspark lives."""
    import pyspark

    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) \
        if os.environ.get("JAVA_HOME") else shutil.which("java")
    version = subprocess.run([java or "java", "-version"], capture_output=True, text=True,
                             check=True).stderr
    key = hashlib.sha256(f"{java}\n{version}\n{pyspark.__version__}".encode()).hexdigest()[:16]
    return folder / f"spark-{pyspark.__version__}-{key}.jsa"


def main(folder: Path) -> int:
    archive = archive_path(folder)
    if archive.is_file():
        print(archive)
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    part = archive.with_suffix(".part")
    part.unlink(missing_ok=True)
    os.environ["SPARK_SUBMIT_OPTS"] = (
        f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:ArchiveClassesAtExit={part} "
        "-Xlog:cds=off -Xlog:cds+dynamic=off").strip()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers need the venv's
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("cds")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.range(1000).selectExpr("sum(id)").collect()
    spark.range(100).mapInPandas(lambda it: it, "id long").collect()
    seen: list[int] = []
    stream = spark.readStream.format("rate").option("rowsPerSecond", 10).load()
    query = (stream.writeStream.trigger(processingTime="1 second")
             .foreachBatch(lambda df, _: seen.append(df.count())).start())
    deadline = time.time() + 60
    while len(seen) < 3 and time.time() < deadline:
        time.sleep(0.2)
    query.stop()
    gateway = SparkContext._gateway
    spark.stop()
    # the JVM writes the archive as it exits, which it does once its stdin closes
    assert gateway is not None
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=300)
    if not part.is_file():
        print(f"spark_cds: the JVM wrote no archive at {part}", file=sys.stderr)
        return 1
    part.replace(archive)
    print(archive)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
