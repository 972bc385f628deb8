"""What the engine contract does not hide yet, and the check that each engine meets it.

Above both engines (it names them), unlike :mod:`reuse.runtime.engines.contract`, which they
use. :class:`SharedQueryEngine` lists the shared query's internals that the live engine and an
instance of a run across applications reach into today: each should become an
:class:`~reuse.runtime.engines.contract.Engine` member that any engine answers, or move into
the engine (issue 32, "two-way coupling"). The conformance check at the bottom is static:
mypy verifies it, nothing runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from reuse.runtime.engines.contract import (
    Configuration,
    CountsAndLedger,
    Engine,
    LedgerTask,
    Operations,
    Progress,
    Recovery,
    Stopping,
)

if TYPE_CHECKING:
    import threading

    from reuse.runtime.engines.partial.engine import Runtime
    from reuse.runtime.engines.shared.broker_input import BrokerInput
    from reuse.runtime.engines.shared.deploy import Deployment
    from reuse.runtime.engines.shared.engine import InplaceRuntime
    from reuse.runtime.engines.shared.handler import BatchHooks, ShardHandler

__all__ = ["SharedQueryEngine"]


@runtime_checkable
class SharedQueryEngine(Engine, Protocol):
    """The shared query's internals that drivers reach into today: not the contract.

    The live engine (:class:`reuse.live.engine.Engine`) and an instance of a run across
    applications (:mod:`reuse.runtime.apps.instance`) wrap the shared query only, and read
    these; each should become an :class:`Engine` member that any engine answers, or move
    into the engine (issue 32, "two-way coupling").

    ``broker``
        The broker input (:class:`~reuse.runtime.engines.shared.broker_input.BrokerInput`),
        ``None`` on a replay: ``live_run`` and the live engine add its ``pids`` to the CPU
        meter, the live engine shows its per-topic ``counts()`` (``malformed()`` answers the
        total).
    ``shards``, ``max_events``
        The shared query's partitions and batch bound (``live_run`` journals them; the live
        engine warms a worker per shard).
    ``tasks``
        Runtime id -> :class:`LedgerTask` (the live engine walks a dataflow's ancestors, an
        instance the live tasks' parents); untyped ``dict`` values today. The
        query-per-DAG engine keeps ``TaskInfo`` objects instead: the ledger's ``tasks`` is
        the common view.
    ``deployment``
        What runs in which shard (the live engine's task table, an instance's frontier).
    ``handler``
        The query's ``foreachBatch`` handler (``None`` before the query starts): the live
        engine reads ``batches``, an instance ``processed``.
    ``lock``
        The engine's lock (an instance reads the deployment and ``tasks`` under it).
    ``hooks``
        Set by an instance: its per-batch calls
        (:class:`~reuse.runtime.engines.shared.handler.BatchHooks`).
    ``follow``
        An instance's ready file (``None``: not an instance).
    ``start_following(start_seq)``
        Start an instance's query at ``start_seq`` (or from its checkpoint).
    """

    @property
    def broker(self) -> BrokerInput | None: ...

    @property
    def shards(self) -> int: ...

    @property
    def max_events(self) -> int: ...

    @property
    def tasks(self) -> Mapping[str, LedgerTask]: ...

    @property
    def deployment(self) -> Deployment: ...

    @property
    def handler(self) -> ShardHandler | None: ...

    @property
    def lock(self) -> threading.RLock: ...

    hooks: BatchHooks | None

    @property
    def follow(self) -> str | None: ...

    def start_following(self, start_seq: int) -> None: ...


# --- conformance (static: mypy checks it, nothing runs) -----------------------------------------

if TYPE_CHECKING:
    # Each role on its own first, so that mypy names the members in conflict (it lists at
    # most two per protocol), then the whole contract.

    def _shared_configuration(e: InplaceRuntime) -> Configuration:
        return e

    def _shared_operations(e: InplaceRuntime) -> Operations:
        return e

    def _shared_progress(e: InplaceRuntime) -> Progress:
        return e

    def _shared_counts_and_ledger(e: InplaceRuntime) -> CountsAndLedger:
        return e

    def _shared_recovery(e: InplaceRuntime) -> Recovery:
        return e

    def _shared_stopping(e: InplaceRuntime) -> Stopping:
        return e

    def _shared(e: InplaceRuntime) -> Engine:
        return e

    def _shared_internals(e: InplaceRuntime) -> SharedQueryEngine:
        return e

    def _partial_configuration(e: Runtime) -> Configuration:
        return e

    def _partial_operations(e: Runtime) -> Operations:
        return e

    def _partial_progress(e: Runtime) -> Progress:
        return e

    def _partial_counts_and_ledger(e: Runtime) -> CountsAndLedger:
        return e

    def _partial_recovery(e: Runtime) -> Recovery:
        return e

    def _partial_stopping(e: Runtime) -> Stopping:
        return e

    def _partial(e: Runtime) -> Engine:
        return e
