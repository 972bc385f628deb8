"""Kernels of the sinks (issue 35): Sink and MQTTPublish.

A sink emits nothing; what it keeps is a count and the tail of what it received (the last
``keep`` events, or records of them). A batch adds its length to the count, and only its last
``keep`` rows become Python objects: the rows before them would be pushed out of the deque by
the time ``process`` had appended the batch, so building them is work the per-event task does
and throws away. The task's ``count`` and ``published`` end as ``process`` leaves them.

With the default ``keep`` (1000) and batches no larger, every row of a batch is kept, so the
cost is building those dicts: ``dict(zip(keys, row))`` per row, in C, where no row lacks a key
(else :meth:`Batch.to_events`); MQTTPublish's records take the payload column as their
message and never build the event itself, unless a row has no payload.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, cast

import numpy as np

from reuse.tasks.base import ACCOUNTING_KEYS
from reuse.tasks.columnar.batch import MISSING, Batch
from reuse.tasks.columnar.kernel import Kernel
from reuse.tasks.sinks import Sink

__all__ = ["MQTTPublishKernel", "SinkKernel"]


def _complete(col: list[Any]) -> bool:
    """Whether no row of a column lacks its key."""
    return type(MISSING) not in set(map(type, col))


def _dicts(batch: Batch) -> list[dict[str, Any]]:
    """The batch's events (as :meth:`Batch.to_events`), in one C-level pass per column when
    no row lacks a key."""
    names = list(batch.cols)
    cols = [batch.cols[k].tolist() for k in names]
    if not names or not all(_complete(c) for c in cols):
        return batch.to_events()
    return list(map(dict, map(zip, repeat(names), zip(*cols, strict=True))))


class SinkKernel(Kernel):
    """Sink a batch at a time: the count in one addition, the tail in one ``take``."""

    type_name = "Sink"

    def run(self, batch: Batch) -> Batch:
        sink = cast(Sink, self.task)
        sink.count += batch.n
        keep = sink.published.maxlen
        tail = batch.n if keep is None else min(keep, batch.n)
        if tail:
            sink.published.extend(self._records(batch.take(np.arange(batch.n - tail, batch.n))))
        return Batch.empty()

    def _records(self, tail: Batch) -> list[Any]:
        """What the task keeps of these events: the events themselves."""
        return _dicts(tail)


class MQTTPublishKernel(SinkKernel):
    """MQTTPublish a batch at a time; it keeps a record per event (topic, message, accounting
    keys) where Sink keeps the event."""

    type_name = "MQTTPublish"

    def _records(self, tail: Batch) -> list[Any]:
        topic = cast(Sink, self.task).topic
        payload = tail.cols.get("payload")
        messages = payload.tolist() if payload is not None else [MISSING] * tail.n
        if not _complete(messages):  # event.get("payload", event): the event itself
            events = _dicts(tail)
            messages = [e if m is MISSING else m for m, e in zip(messages, events, strict=True)]
        keys = ["topic", "message"]
        cols: list[list[Any]] = [[topic] * tail.n, messages]
        for k in ACCOUNTING_KEYS:
            if k in tail.cols:
                keys.append(k)
                cols.append(tail.cols[k].tolist())
        if all(_complete(c) for c in cols[2:]):
            return list(map(dict, map(zip, repeat(keys), zip(*cols, strict=True))))
        return [{k: v for k, v in zip(keys, row, strict=True) if v is not MISSING}
                for row in zip(*cols, strict=True)]
