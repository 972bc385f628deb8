"""A live run's per-step row: what ``reuse run`` writes to its CSV, the journal keeps, the
notebooks plot and the accounting charges (one definition, for every driver).

A row is a :class:`StepRow`: the keys every driver fills, then the ones only the shared query
and the query-per-DAG engines measure (a run across applications leaves them out: its
instances' processes are not this driver's). ``lost`` and ``duplicated`` are ``None`` until
the outputs are checked (:func:`reuse.runtime.accounting.charge_to_steps`), ``gap_s`` until
the batch log is read. Nothing here imports Spark.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["CSV_COLUMNS", "CpuColumns", "StepRow"]


class _Filled(TypedDict):
    """The keys every driver fills."""

    step: int
    op: str
    dag: str
    running_tasks: int
    paused_tasks: int
    replica_tasks: int
    queries: int
    cores: float
    cores_steady: float | None
    p50_latency_ms: float | None
    p99_latency_ms: float | None
    events_in: int | None
    events_out: int
    lost: int | None
    duplicated: int | None
    cut: int | None
    op_seconds: float
    measured_s: float
    failures: int
    gap_s: float | None
    t_start_ms: int
    t_end_ms: int


class CpuColumns(TypedDict):
    """A step's CPU seconds by process kind (:meth:`reuse.runtime.measure.StepWindow.cpu_columns`)."""

    cpu_driver: float
    cpu_jvm: float
    cpu_python_workers: float
    cpu_other: float


class StepRow(_Filled, total=False):
    """One step of a live run (see the module docstring); the CPU split by process kind, the
    bus's lag and throttling, and malformed broker messages are the one-application drivers'."""

    cpu_driver: float
    cpu_jvm: float
    cpu_python_workers: float
    cpu_other: float
    max_lag_events: int | None
    throttled: int | None
    malformed: int | None


#: the CSV's columns, in order
CSV_COLUMNS = ["step", "op", "dag", "running_tasks", "paused_tasks", "replica_tasks", "queries",
               "cores", "cores_steady", "p50_latency_ms", "p99_latency_ms", "events_in",
               "events_out", "lost", "duplicated", "cut", "op_seconds", "measured_s",
               "cpu_driver", "cpu_jvm", "cpu_python_workers", "cpu_other", "failures", "gap_s",
               "max_lag_events", "throttled", "malformed", "t_start_ms", "t_end_ms"]
