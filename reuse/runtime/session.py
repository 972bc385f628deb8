"""The SparkSession the runtime uses, configured for many small streaming queries on 2 cores.

Why these settings (measured on this machine, see the shared folder's
``SPARK-ON-THIS-MACHINE.md``):

- ``SPARK_LOCAL_IP=127.0.0.1`` and ``PYSPARK_PYTHON=sys.executable`` must be set before the JVM
  starts, or Spark binds another interface and Python workers run the system interpreter.
- ``spark.sql.shuffle.partitions=1`` and ``spark.default.parallelism=2``: batches are tiny; every
  extra partition is an extra task per micro-batch.
- UI off, and one Python worker process reused across batches
  (``spark.python.worker.reuse``) so tasks built once (trained models) stay cached in it.
- ``spark.sql.streaming.noDataMicroBatches.enabled=false``: a query runs a batch only when its
  input has new data.

Async progress tracking (``asyncProgressTrackingEnabled``) is *not* used: Spark documents it as
giving up exactly-once on restart, and our stop/relaunch and restart guarantees rely on the offset
log being written before a batch runs.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "spark_conf", "get_session", "stop_session"]

DEFAULT_MASTER = "local[2]"


def spark_conf(master: str = DEFAULT_MASTER, *, ui: bool = False,
               extra: dict[str, str] | None = None, host: str = "127.0.0.1") -> dict[str, str]:
    """The Spark settings of a runtime session (pure; returned so they can be shown and tested).

    ``host``: the address the driver binds and gives its executors (a cluster's own address
    when it listens beyond loopback: :func:`reuse.runtime.cluster.client`).

    Examples
    --------
    >>> spark_conf()["spark.sql.shuffle.partitions"]
    '1'
    """
    conf = {
        "spark.master": master,
        "spark.app.name": "reuse-runtime",
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "1",
        "spark.default.parallelism": "2",
        "spark.python.worker.reuse": "true",
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
        "spark.sql.streaming.minBatchesToRetain": "20",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.bindAddress": host,
        "spark.driver.host": host,
        "spark.sql.ansi.enabled": "false",
        "spark.log.level": "WARN",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }
    if master.startswith("spark://"):
        # each worker's executor takes all its cores (the standalone default): one 2-core
        # executor on `reuse cluster start`, one 1-core executor per worker with --workers 2
        # --cores 1 (k-safety's anti-affinity)
        conf["spark.cores.max"] = "2"
        conf["spark.executor.memory"] = "2g"
    conf.update(extra or {})
    return conf


def get_session(master: str = DEFAULT_MASTER, *, ui: bool = False,
                extra: dict[str, str] | None = None, host: str = "127.0.0.1",
                properties: Path | None = None) -> SparkSession:
    """Start (or return the active) SparkSession with :func:`spark_conf` and our data sources.

    The environment variables are set here, not at import, because they must precede the JVM
    launch and should not leak into processes that never start Spark. ``properties``: a
    properties file the JVM reads at launch (an authenticated cluster's secret: PySpark puts
    the builder's settings on the JVM's command line, where any local user sees them, so a
    secret goes through a file of mode 0600 instead).
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for k, v in spark_conf(master, ui=ui, extra=extra, host=host).items():
        builder = builder.config(k, v)
    before = os.environ.get("PYSPARK_SUBMIT_ARGS")
    if properties is not None:
        os.environ["PYSPARK_SUBMIT_ARGS"] = (
            f"--properties-file {shlex.quote(str(properties))} pyspark-shell")
    try:
        spark = builder.getOrCreate()
    finally:  # only this launch reads it: a later session in this process starts plain
        if before is None:
            os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
        else:
            os.environ["PYSPARK_SUBMIT_ARGS"] = before
    spark.sparkContext.setLogLevel("ERROR")
    from reuse.runtime.dataplane.sources import register_sources

    register_sources(spark)
    return spark


def stop_session(spark: SparkSession) -> None:
    """Stop every streaming query of the session, then the session (and its JVM)."""
    for q in list(spark.streams.active):
        try:
            q.stop()
        except Exception:  # noqa: BLE001 - best effort on shutdown
            pass
    spark.stop()
