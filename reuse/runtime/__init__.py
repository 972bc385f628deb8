"""Live Spark runtime that enacts the manager's plan deltas (Section 4.3 of the paper).

Submodules (nothing here imports Spark or touches the disk at import time):

- :mod:`reuse.runtime.session`: the SparkSession (local[2] or ``--master URL``) and its settings.
- :mod:`reuse.runtime.bus`: the stream bus (embedded file topics, Redis Streams) and the
  deterministic, rate-paced source replay, both as Python Data Sources.
- :mod:`reuse.runtime.partial`: one partial DAG = one streaming query whose tasks run together in
  one Python operator per micro-batch; task state kept per batch beside the checkpoint.
- :mod:`reuse.runtime.runtime`: :class:`Runtime`, enacting submits/removes in Reuse or Default
  mode, unmerge by pause or stop, and defragment.
- :mod:`reuse.runtime.accounting`: the pure-Python reference execution and event accounting.
- :mod:`reuse.runtime.measure`: CPU (psutil over JVMs and Python workers) and latency.
- :mod:`reuse.runtime.run`: live trace replay to CSV; :mod:`reuse.runtime.cluster`: standalone
  cluster start/stop/status; :mod:`reuse.cli.runtime`: the ``run`` and ``cluster`` subcommands.
"""

from __future__ import annotations

from reuse.core.errors import ReuseError

__all__ = ["SparkRuntimeError"]


class SparkRuntimeError(ReuseError):
    """The Spark runtime cannot do what was asked (bad option, query failure, cluster problem)."""
