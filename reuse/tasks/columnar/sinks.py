"""Kernels of the sinks (issue 35): Sink and MQTTPublish.

A sink emits nothing; what it keeps is a count and the tail of what it received (the last
``keep`` events, or records of them). A batch adds its length to the count, and only its last
``keep`` rows become Python objects: the rows before them would be pushed out of the deque by
the time ``process`` had appended the batch, so building them is work the per-event task does
and throws away. The task's ``count`` and ``published`` end as ``process`` leaves them.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from reuse.tasks.base import ACCOUNTING_KEYS, Event
from reuse.tasks.columnar.batch import Batch
from reuse.tasks.columnar.kernel import Kernel
from reuse.tasks.sinks import Sink

__all__ = ["MQTTPublishKernel", "SinkKernel"]


class SinkKernel(Kernel):
    """Sink a batch at a time: the count in one addition, the tail in one ``take``."""

    type_name = "Sink"

    def run(self, batch: Batch) -> Batch:
        sink = cast(Sink, self.task)
        sink.count += batch.n
        keep = sink.published.maxlen
        tail = batch.n if keep is None else min(keep, batch.n)
        if tail:
            rows = batch.take(np.arange(batch.n - tail, batch.n)).to_events()
            sink.published.extend(map(self._record, rows))
        return Batch.empty()

    def _record(self, event: Event) -> Any:
        """What the task keeps of an event: the event itself."""
        return event


class MQTTPublishKernel(SinkKernel):
    """MQTTPublish a batch at a time; it keeps a record per event (topic, message, accounting
    keys) where Sink keeps the event."""

    type_name = "MQTTPublish"

    def _record(self, event: Event) -> Any:
        sink = cast(Sink, self.task)
        return {"topic": sink.topic, "message": event.get("payload", event),
                **{k: event[k] for k in ACCOUNTING_KEYS if k in event}}
