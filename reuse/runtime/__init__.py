"""Live Spark runtime that enacts the manager's plan deltas (Section 4.3 of the paper).

Two engines share one decision layer and one data plane (nothing here imports Spark or touches
the disk at import time); each folder imports only from the ones above it in this list:

- :mod:`reuse.runtime.common`: what both engines share. :mod:`~reuse.runtime.common.policy`
  (mode, merge, unmerge: which engine and how it enacts), :mod:`~reuse.runtime.common.planners`
  (what a submit or remove means in runtime tasks, Reuse or Default),
  :mod:`~reuse.runtime.common.execution` (how one task runs, the same for every engine and the
  reference), :mod:`~reuse.runtime.common.files` and :mod:`~reuse.runtime.common.states` (the
  run directory's files, task states per batch).
- :mod:`reuse.runtime.dataplane`: the stream bus (:mod:`~reuse.runtime.dataplane.bus`, file
  topics or :mod:`~reuse.runtime.dataplane.redis_bus`), its :mod:`~reuse.runtime.dataplane.frames`,
  backpressure and retention (:mod:`~reuse.runtime.dataplane.flow_control`,
  :mod:`~reuse.runtime.dataplane.retention`), the Spark data sources that read them
  (:mod:`~reuse.runtime.dataplane.sources`: source replay, bus reader, the shared query's tick),
  and the MQTT path: :mod:`~reuse.runtime.dataplane.mqtt` (broker URLs, topics, decoding, the
  ingest into the bus), :mod:`~reuse.runtime.dataplane.publish` (the paced replay into a
  broker) and :mod:`~reuse.runtime.dataplane.mosquitto` (a local broker, by PID).
- :mod:`reuse.runtime.control` (beside the data plane): k-safety across applications, on
  Redis: the operation journal whose cuts every instance applies
  (:mod:`~reuse.runtime.control.oplog`), the instances' registry and heartbeats
  (:mod:`~reuse.runtime.control.registry`), de-duplicated sink outputs
  (:mod:`~reuse.runtime.control.outputs`).
- :mod:`reuse.runtime.engines.partial`: the paper's enactment, a query per partial DAG
  (``--merge partial`` or ``relaunch``): :mod:`~reuse.runtime.engines.partial.engine`
  (:class:`~reuse.runtime.engines.partial.engine.Runtime`),
  :mod:`~reuse.runtime.engines.partial.dag` (one partial DAG's query),
  :mod:`~reuse.runtime.engines.partial.queries`, :mod:`~reuse.runtime.engines.partial.upkeep`.
- :mod:`reuse.runtime.engines.shared`: the shared query (``--merge inplace``):
  :mod:`~reuse.runtime.engines.shared.engine`
  (:class:`~reuse.runtime.engines.shared.engine.InplaceRuntime`),
  :mod:`~reuse.runtime.engines.shared.deploy` (the deployment, pure data),
  :mod:`~reuse.runtime.engines.shared.shard` (one shard's batch),
  :mod:`~reuse.runtime.engines.shared.split` (key parallelism: a running DAG over several
  partitions, pure data; not used by the engine yet). The two engines never import each other.
- A run, over either engine: :mod:`~reuse.runtime.session` (the SparkSession),
  :mod:`~reuse.runtime.cluster` (a standalone cluster), :mod:`~reuse.runtime.run` (live trace
  replay to CSV), :mod:`~reuse.runtime.journal` (resume after a driver crash),
  :mod:`~reuse.runtime.measure` (CPU and latency), :mod:`~reuse.runtime.spread` (the spread
  of repeated runs and a verdict per comparison), :mod:`~reuse.runtime.accounting` (the
  reference execution and event accounting), :mod:`~reuse.runtime.floor` (the no-Spark floors,
  per event and columnar), :mod:`~reuse.runtime.progress`. The ``run`` and ``cluster``
  commands are :mod:`reuse.cli.runtime`.
"""

from __future__ import annotations

from reuse.core.errors import ReuseError

__all__ = ["SparkRuntimeError"]


class SparkRuntimeError(ReuseError):
    """The Spark runtime cannot do what was asked (bad option, query failure, cluster problem)."""
