"""A run's ledger, typed: what an engine writes to ``<root>/ledger.json``.

The accounting, the billing and the apps coordinator read it, and the reference execution
recomputes every expected output from it alone, so its keys are one definition here, used by
both engines (:mod:`reuse.runtime.engines.contract`) and by the code below them that writes
parts of it (:mod:`reuse.runtime.common.sink_history`). Keys only one engine writes are
marked as such. Nothing here imports Spark.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["Ledger", "LedgerDag", "LedgerReplica", "LedgerSource", "LedgerTask", "TaskOptions"]


class _TaskOptionsRequired(TypedDict):
    data_dir: str
    pi_iterations: int
    record: str
    limit: int | None


class TaskOptions(_TaskOptionsRequired, total=False):
    """How a task is built (:func:`reuse.runtime.common.execution.build_task`); the engines'
    ``opts`` and the ledger's ``opts``.

    Both engines write ``data_dir``, ``pi_iterations``, ``record`` and ``limit``; the shared
    query without a shared disk also ``data_file`` (the replay data Spark ships). The shared
    query writes ``columnar`` (its spec's: whether its shards run the tasks a batch at a time
    on columns, :func:`reuse.runtime.common.window.run_window`); not an option of how a task
    is built, it never reaches a task (nor the reference execution, which runs per event).
    """

    data_file: str
    columnar: bool


class _LedgerTaskRequired(TypedDict):
    type: str
    config: object  # the task's config: a JSON value
    parents: list[str]
    kind: str  # "source" | "task" | "sink"
    topic: str
    start: int
    end: int | None


class LedgerTask(_LedgerTaskRequired, total=False):
    """A running task in the ledger (``tasks``: runtime id -> this): what the reference
    execution runs, over ``[start, end)``.

    Both engines write the required keys. Only the shared query writes ``takes_over`` (the
    task a re-plan's task continues) and ``absorbs`` (the wide tasks whose state it adds),
    for the tasks a re-planning remove starts (:func:`reuse.runtime.common.sink_history.
    ledger_removal`); the accounting reads them with ``.get``.
    """

    takes_over: str | None
    absorbs: list[str]


class _LedgerDagRequired(TypedDict):
    dag: str
    J: int
    R: int | None
    sinks: dict[str, str]
    tasks: list[str]
    reused: list[str]


class LedgerDag(_LedgerDagRequired, total=False):
    """One submitted incarnation of a dataflow (``dags``: incarnation -> this), with its
    window ``[J, R)`` (``R`` ``None``: still running).

    Both engines write the required keys. ``sink_history`` (``[cut, running id]`` pairs per
    sink) is written by a re-planning remove, on the shared query only
    (:mod:`reuse.runtime.common.sink_history`).
    """

    sink_history: dict[str, list[list[int | str]]]


class LedgerReplica(TypedDict):
    """A k-safety replica (``replicas``: replica id -> this): the task it copies, its level,
    and its own window (the shared query's deployment writes them)."""

    of: str
    level: int
    start: int
    end: int | None


class _LedgerSourceRequired(TypedDict):
    kind: str  # "replay" | "mqtt"


class LedgerSource(_LedgerSourceRequired, total=False):
    """Where the source events came from. ``kind`` ``"replay"``: generated (the reference
    generates them too). ``"mqtt"`` (the shared query, broker-fed): ``broker`` (its URL),
    ``counts`` (per MQTT topic, :meth:`reuse.runtime.dataplane.ingest.TopicCounts.to_dict`),
    ``published`` (output topic -> outputs published), ``recorded`` (the directory of
    the events received, which the reference runs on) and ``restarts`` (the run's own servers
    found dead and started again, :class:`reuse.runtime.dataplane.keeper.Restart` as dicts)."""

    broker: str
    counts: dict[str, dict[str, int | str]]
    published: dict[str, int]
    recorded: str
    restarts: list[dict[str, int | str | None]]


class _LedgerRequired(TypedDict):
    engine: str  # "inplace" | "queries"
    mode: str
    match: str
    merge: str
    unmerge: str
    source: LedgerSource
    t0: int
    rate: float
    limit: int | None
    data_dir: str
    opts: TaskOptions
    tasks: dict[str, LedgerTask]
    dags: dict[str, LedgerDag]
    log: list[dict[str, object]]
    replicas: dict[str, LedgerReplica]


class Ledger(_LedgerRequired, total=False):
    """A run's ledger (:meth:`reuse.runtime.engines.contract.CountsAndLedger.ledger`, ``<root>/ledger.json``): everything
    the accounting needs to recompute the expected outputs, and the billing to charge them.

    Read by :mod:`reuse.runtime.accounting` (``tasks``, ``opts``, ``t0``, ``rate``,
    ``data_dir``, ``dags``, ``source``, ``replicas``), :func:`reuse.runtime.run.run_trace`
    (``replicas``), :mod:`reuse.analysis.billing_live` (``engine``, ``log``, ``dags``,
    ``tasks``) and the apps coordinator (``dags``).

    Required, every engine writes them: the keys above. Today the shared query writes all of
    them; the query-per-DAG engine writes no ``engine`` (must be ``"queries"``), no
    ``merge`` (its policy's), no ``source`` (must be ``{"kind": "replay"}``) and no
    ``replicas`` (must be ``{}``).

    Optional, one engine's own: ``shards``, ``split``, ``shared_disk``, ``k_safe`` and
    ``replicate_min_users`` (the shared query only); ``sources`` (Default's sources,
    ``"private"`` or ``"shared"``) and ``bus`` (the read limit and retention counters) (the
    query-per-DAG engine only).
    """

    shards: int
    split: bool
    shared_disk: bool
    k_safe: int
    replicate_min_users: int
    sources: str
    bus: dict[str, str | int | float]
