"""The engine contract (issue 32): what every engine offers the code that drives it.

A driver (:func:`reuse.runtime.run.run_trace` and :func:`~reuse.runtime.run.live_run`, a
resumed run, the live :class:`reuse.live.engine.Engine`, an instance of a run across
applications, :mod:`reuse.testing`) holds an engine as an :class:`Engine` and uses nothing
else. Both engines implement it:

- :class:`~reuse.runtime.engines.shared.engine.InplaceRuntime`, the shared query
  (``--merge inplace``);
- :class:`~reuse.runtime.engines.partial.engine.Runtime`, a query per partial DAG
  (``--merge partial`` or ``relaunch``).

A capability one engine lacks is not probed for (no attribute lookups by name, no "is it
there?"): it is a member of the contract with a uniform answer, e.g. :meth:`Progress.take_lag`
is ``(None, None)`` on the shared query, which has no bus, and :meth:`Progress.malformed` is
``None`` on a replayed run. The members are grouped by role, one protocol per role, and
:class:`Engine` is all of them:

========================  ==============================================================
role                      members
========================  ==============================================================
:class:`Configuration`    ``policy``, ``root``, ``mode``, ``match``, ``source``, ``t0``,
                          ``rate``, ``trigger_s``, ``limit``, ``data_dir``, ``opts``,
                          ``sources``
:class:`Operations`       ``planner``, ``start_sources``, ``submit``, ``remove``,
                          ``defragment``
:class:`Progress`         ``bound``, ``arrival_rate``, ``poll``, ``qhw``, ``warm``,
                          ``wait_processed``, ``wait_stopped``, ``take_lag``, ``malformed``
:class:`CountsAndLedger`  ``counts``, ``dags``, ``log``, ``ledger``, ``save_ledger``
:class:`Recovery`         ``failures``, ``on_op``, ``start_seq``, ``replay``
:class:`Stopping`         ``close``
========================  ==============================================================

The bound and the cut. ``bound()`` is the largest source ``seq`` emitted (or, broker-fed,
received) so far; a cut is a ``seq`` every operation takes effect at: ``submit`` and
``remove`` take one (``at``, in the future: ``> bound()``) or choose the next one, and answer
it (``J`` or ``R``). Every dataflow's outputs over its window ``[J, R)`` equal the reference
execution's (:func:`reuse.runtime.accounting.reference_records`) over the engine's ledger.

The ledger (:class:`Ledger`) is what an engine writes to ``<root>/ledger.json`` and what the
accounting, the billing and the apps coordinator read; its keys are typed here, with those
only one engine writes marked as such.

:mod:`reuse.runtime.engines.conformance` (above the engines: it names them) holds the static
conformance check, which mypy verifies (each engine class is an :class:`Engine`, and each
role), and :class:`~reuse.runtime.engines.conformance.SharedQueryEngine`, the shared query's
internals that drivers still reach into: not the contract.
``tests/runtime/engines/test_contract.py`` checks the members' presence and parameters at run
time, without Spark. This module sits below the engines, so that they can use its types;
nothing here imports Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypedDict, runtime_checkable

from reuse.runtime.common.ledger import (
    Ledger,
    LedgerDag,
    LedgerReplica,
    LedgerSource,
    LedgerTask,
    TaskOptions,
)

if TYPE_CHECKING:
    from pathlib import Path

    from reuse.core.dataflow import Dataflow
    from reuse.runtime.common.planners import Planner
    from reuse.runtime.common.policy import Policy
    from reuse.runtime.common.recovery import Failures

__all__ = [
    "Configuration",
    "Counts",
    "CountsAndLedger",
    "Engine",
    "JournalOp",
    "Ledger",
    "LedgerDag",
    "LedgerReplica",
    "LedgerSource",
    "LedgerTask",
    "Operations",
    "Progress",
    "Recovery",
    "RemoveResult",
    "Stopping",
    "SubmitResult",
    "TaskOptions",
]


# --- answers -------------------------------------------------------------------------------------

class SubmitResult(TypedDict):
    """What :meth:`Operations.submit` answers (both engines write these keys today).

    ``dag``: the dataflow; ``J``: its join point (the cut its first events are at);
    ``started``: the runtime tasks the submit started; ``reused``: the running tasks it
    reuses; ``sinks``: sink -> the running task computing it; ``seconds``: the call's time.
    """

    dag: str
    J: int
    started: list[str]
    reused: list[str]
    sinks: dict[str, str]
    seconds: float


class RemoveResult(TypedDict):
    """What :meth:`Operations.remove` answers.

    ``dag``; ``R``: its end cut; ``stop``: the runtime tasks that end at ``R``;
    ``started``: the tasks a re-plan (issue 36) starts at ``R``; ``replanned``: incarnation
    -> sink -> the running task computing it from ``R`` on; ``seconds``.

    The shared query writes every key. The query-per-DAG engine does not re-plan and writes
    no ``started`` and no ``replanned`` today: it must answer ``[]`` and ``{}``.
    """

    dag: str
    R: int
    stop: list[str]
    started: list[str]
    replanned: dict[str, dict[str, str]]
    seconds: float


class Counts(TypedDict):
    """What :meth:`CountsAndLedger.counts` answers: the deployed tasks now.

    ``running_tasks`` (sources are streams, not tasks), ``paused_tasks`` (ended but still
    deployed: the paper's ``pause``; always 0 on the shared query), ``queries`` (streaming
    queries active) and ``replica_tasks`` (k-safety's live replicas). The query-per-DAG
    engine writes no ``replica_tasks`` today: it must answer 0.
    """

    running_tasks: int
    paused_tasks: int
    queries: int
    replica_tasks: int


class JournalOp(TypedDict):
    """One operation of a run's journal, as :meth:`Recovery.replay` enacts it again
    (:class:`reuse.runtime.journal.JournalState` ``ops``; a record may hold more keys,
    e.g. ``step``)."""

    op: str  # "submit" | "remove"
    dag: str
    cut: int


# --- the contract, by role ----------------------------------------------------------------------

class Configuration(Protocol):
    """What the engine was configured with (read only).

    ``policy``
        The live mode (:class:`~reuse.runtime.common.policy.Policy`); a driver prints its
        ``label``. Both engines.
    ``root``
        The run directory (ledger, sink records, checkpoints). Both engines.
    ``mode``, ``match``
        ``"reuse"`` or ``"default"``; what Reuse merges by (``"exact"``, ``"semantic"``).
        Both engines.
    ``source``
        ``"replay"`` or the broker URL (``mqtt://host:port``). The shared query has it; the
        query-per-DAG engine runs replayed sources only and must answer ``"replay"``.
    ``t0``, ``rate``, ``trigger_s``, ``limit``
        Nominal emit time (ms) of ``seq`` 0, events per second per source, the trigger
        interval (s), and the end of the sources (``None``: forever). Both engines.
    ``data_dir``
        The RIoTBench data directory. Both engines.
    ``opts``
        How tasks are built (:class:`TaskOptions`). Both engines (typed
        ``dict[str, object]`` today: they must declare it a :class:`TaskOptions`).
    ``sources``
        Source stream -> the query generating it; a step's ``events_in`` is its length times
        the ``seq`` emitted. Both engines.
    """

    @property
    def policy(self) -> Policy: ...

    @property
    def root(self) -> Path: ...

    @property
    def mode(self) -> str: ...

    @property
    def match(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def t0(self) -> int: ...

    @property
    def rate(self) -> float: ...

    @property
    def trigger_s(self) -> float: ...

    @property
    def limit(self) -> int | None: ...

    @property
    def data_dir(self) -> str: ...

    @property
    def opts(self) -> TaskOptions: ...

    @property
    def sources(self) -> Mapping[str, str]: ...


class Operations(Protocol):
    """Submits and removes, each at a cut.

    ``planner``
        What a submit or remove means in runtime tasks
        (:class:`~reuse.runtime.common.planners.Planner`); a driver reads its ``instances``
        (the dataflows present) to refuse a double submit before the engine changes. Both
        engines.
    ``start_sources(types)``
        Make the run's source streams ready before the first submit (the shared query starts
        its query; the query-per-DAG engine its shared replays). Both engines.
    ``submit(flow, *, at=None)``
        Merge (Reuse) or deploy (Default) ``flow`` with join point ``at`` (in the future) or
        the next cut; answers a :class:`SubmitResult`. It calls ``on_op("submit", dag, J)``
        (:class:`Recovery`) once the planner accepted it and before anything is deployed. Both
        engines (answering an untyped ``dict`` today).
    ``remove(dag_id, *, at=None)``
        Unmerge (Reuse) or undeploy (Default) with end cut ``at`` or the next cut; answers a
        :class:`RemoveResult`; calls ``on_op("remove", dag, R)`` likewise. Both engines.
    ``defragment(*, at=None)``
        Regroup what runs (the query-per-DAG engine relaunches a running DAG spread over
        several queries as one; the shared query rebalances its shards by one move); answers
        what it did, which drivers only log. Both engines.
    """

    @property
    def planner(self) -> Planner: ...

    def start_sources(self, types: Iterable[str]) -> None: ...

    def submit(self, flow: Dataflow, *, at: int | None = None) -> SubmitResult: ...

    def remove(self, dag_id: str, *, at: int | None = None) -> RemoveResult: ...

    def defragment(self, *, at: int | None = None) -> Mapping[str, object]: ...


class Progress(Protocol):
    """The bound, what has been processed, and waiting for it; a step's own counters.

    ``bound()``
        The largest source ``seq`` emitted so far (nominally; broker-fed: received). A cut
        is always above it. Both engines.
    ``arrival_rate()``
        Source ``seq`` per second the input brings now: ``rate`` on a replay; broker-fed,
        what arrived lately. The shared query has it; the query-per-DAG engine must answer
        ``rate``.
    ``poll()``
        The upkeep a driver calls every quarter second: restart failed queries from their
        checkpoints (counted in ``failures``), stop what has drained, rebalance, retention;
        raises a one-line error only when recovery gives up. Both engines.
    ``qhw()``
        Every source ``seq <=`` this has been processed by the whole engine (``-1``:
        nothing yet). The shared query has it (``qhw(qname="shared")``); the query-per-DAG
        engine has ``qhw(qname)`` for one query only: called with no argument it must answer
        the minimum over its live partial queries.
    ``warm()``
        Whether the engine's input has run its first batch: the JVM, the executors and
        their Python workers are up. A run's warm-up lasts until then (however long a cold
        cluster or a loaded machine takes), so its first step is not charged with it and
        its wall-clock steps do not pass before anything ran. Both engines.
    ``wait_processed(seq, timeout_s)``
        Block, polling, until every ``seq <=`` ``seq`` is processed; an error only when
        nothing moves for ``timeout_s``. Both engines.
    ``wait_stopped(timeout_s)``
        Block until what drains (removed tasks' queries) has stopped; at once where nothing
        drains (the shared query). Both engines.
    ``take_lag()``
        ``(largest consumer lag in events, partial queries throttled)`` sampled since the
        last call (a step's ``max_lag_events`` and ``throttled``); ``(None, None)`` where
        there is no bus. The query-per-DAG engine has it; the shared query must answer
        ``(None, None)``.
    ``malformed()``
        Malformed messages received so far over every broker topic (a step's
        ``malformed``); ``None`` on a replayed run. Neither engine has it: the shared query
        must answer the sum of its broker input's ``counts()`` ``malformed`` (``None``
        without a broker), the query-per-DAG engine ``None``.
    """

    def bound(self) -> int: ...

    def arrival_rate(self) -> float: ...

    def poll(self) -> None: ...

    def qhw(self) -> int: ...

    def warm(self) -> bool: ...

    def wait_processed(self, seq: int, timeout_s: float = ...) -> None: ...

    def wait_stopped(self, timeout_s: float = ...) -> None: ...

    def take_lag(self) -> tuple[int | None, int | None]: ...

    def malformed(self) -> int | None: ...


class CountsAndLedger(Protocol):
    """What runs now, and the record of the run.

    ``counts()``
        The deployed tasks now (:class:`Counts`). Both engines (answering
        ``dict[str, int]`` today; the query-per-DAG engine without ``replica_tasks``).
    ``dags``
        Incarnation -> :class:`LedgerDag`, every dataflow submitted so far with its window
        (a driver lists the live ones, ``R`` ``None``). Both engines (with
        untyped ``dict`` values today).
    ``log``
        The run's events in order (``{"event": "submit" | "remove" | "launch" | "failure" |
        "restart" | ..., "ms": ...}``); a driver rebuilds the operations enacted from it.
        Both engines.
    ``ledger()``
        The run's :class:`Ledger`. Both engines (answering an untyped ``dict`` today, with
        different keys: see :class:`Ledger`).
    ``save_ledger()``
        Write the ledger to ``<root>/ledger.json`` (atomically) and answer the path. Both
        engines.
    """

    def counts(self) -> Counts: ...

    @property
    def dags(self) -> Mapping[str, LedgerDag]: ...

    @property
    def log(self) -> Sequence[Mapping[str, object]]: ...

    def ledger(self) -> Ledger: ...

    def save_ledger(self) -> Path: ...


class Recovery(Protocol):
    """Failures the engine recovers from, and a run that outlives its driver.

    ``failures``
        Every failure recovered so far (:class:`~reuse.runtime.common.recovery.Failures`,
        sized: a step's ``failures`` is the growth of its length). Both engines (always
        there: a driver never asks whether it is).
    ``on_op``
        Set by a journaling driver: called as ``on_op(op, dag, cut)`` by ``submit`` and
        ``remove`` once the planner accepted the operation and before anything is
        deployed (the journal's write-ahead record); ``None``: no journal. The shared query
        has it; the query-per-DAG engine must have it too (``None`` until set, and called).
    ``start_seq``
        The first ``seq`` the engine processes (the journal's start record, with ``t0``). The
        shared query has it; the query-per-DAG engine must answer the first ``seq`` its
        sources emit (0 before they start).
    ``replay(ops, flows, *, start_seq)``
        Rebuild a dead driver's engine: enact the journaled operations at their recorded
        cuts, then start from the checkpoints at ``start_seq``. The shared query has it
        (``flows`` typed ``dict[str, Dataflow]``: it must take a ``Mapping``; ``ops`` as
        untyped ``dict`` records: it must take :class:`JournalOp`); the query-per-DAG
        engine must have it (until it can resume, raising a one-line error).
    """

    @property
    def failures(self) -> Failures: ...

    on_op: Callable[[str, str, int], None] | None

    @property
    def start_seq(self) -> int: ...

    def replay(self, ops: Iterable[JournalOp], flows: Mapping[str, Dataflow], *,
               start_seq: int) -> None: ...


class Stopping(Protocol):
    """The end of a run.

    ``close(*, clean=False)``
        Stop everything the engine started (its queries, a broker input and its Redis; not
        the Spark session, which its owner stops), save the ledger, and with ``clean``
        remove the run directory. Both engines.
    """

    def close(self, *, clean: bool = False) -> None: ...


@runtime_checkable
class Engine(Configuration, Operations, Progress, CountsAndLedger, Recovery, Stopping, Protocol):
    """An engine, as every driver holds it: the union of the roles.

    - configuration (:class:`Configuration`): ``policy``, ``root``, ``mode``, ``match``,
      ``source``, ``t0``, ``rate``, ``trigger_s``, ``limit``, ``data_dir``, ``opts``,
      ``sources``;
    - operations (:class:`Operations`): ``planner``, ``start_sources``, ``submit``,
      ``remove``, ``defragment``;
    - progress, the bound and the cut (:class:`Progress`): ``bound``, ``arrival_rate``,
      ``poll``, ``qhw``, ``warm``, ``wait_processed``, ``wait_stopped``, ``take_lag``,
      ``malformed``;
    - counts and ledger (:class:`CountsAndLedger`): ``counts``, ``dags``, ``log``,
      ``ledger``, ``save_ledger``;
    - recovery (:class:`Recovery`): ``failures``, ``on_op``, ``start_seq``, ``replay``;
    - stop (:class:`Stopping`): ``close``.

    What each engine must do, member by member, is in the role's docstring. ``isinstance``
    checks that every member is there (not their types: that is mypy's conformance check).
    """
