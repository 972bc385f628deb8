"""The dataflows a run across applications is given while it runs (a live engine's submits).

A run started from a trace knows every dataflow up front: each instance's spec holds them.
A live engine (``reuse.live.Engine`` with ``replicas="apps"``) learns them one submit at a
time, so the proposer writes each submit's dataflow here, under the operation's proposal key,
before it proposes the operation; an instance applying a submit reads its dataflow here first,
then from its spec. Keyed by proposal, not by dataflow id: a dataflow removed and submitted
again with other tasks is two entries, and a replacement instance replaying the journal from
its start applies each submit with the dataflow it had.

Redis key (under ``reuse:ctl:<run>:``): ``flows``, a hash from proposal key to the dataflow's
JSON. Nothing here imports Spark.
"""

from __future__ import annotations

import json

from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.runtime.control.common import RedisPart

__all__ = ["FlowBook"]


class FlowBook(RedisPart):
    """One run's dataflows by proposal key (see the module docstring)."""

    def put(self, key: str, flow: Dataflow) -> None:
        """Keep ``flow`` as the dataflow of the submit proposed under ``key``."""
        self.client.hset(self.key("flows"), key, json.dumps(flow.to_dict(),
                                                            separators=(",", ":")))

    def get(self, key: str) -> Dataflow | None:
        """The dataflow of the submit proposed under ``key``; ``None`` if none was kept (a
        trace's run: its instances' specs hold them)."""
        if not key:
            return None
        raw = self.client.hget(self.key("flows"), key)
        return None if raw is None else parse_dataflow(json.loads(raw))
