"""Sink tasks: MQTTPublish (and a generic Sink) that collect what a dataflow outputs.

The workbench has no broker: publishing means recording the message under its topic, which is
what the runtime and the tests need (outputs to compare between default and reuse execution).
A sink keeps a count and a bounded tail of its messages so a long run cannot exhaust memory.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from reuse.tasks.base import Event, Task, to_int

__all__ = ["MQTTPublish", "Sink"]


class Sink(Task):
    """Consume events and keep the last ``keep`` of them; produces no output events.

    Config: the constant ``"sink"`` (the paper's sink config) or a dict with optional ``topic``
    and ``keep`` (default 1000).
    """

    type_name = "Sink"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``topic`` as a string and ``keep`` as an int, both written out; a config that is not
        a dict (``"sink"``) means the defaults, as the constructor reads it."""
        c = dict(config) if isinstance(config, dict) else {}
        c["topic"] = str(c.get("topic", "sink"))
        c["keep"] = to_int(c.get("keep", 1000))
        return c

    def __init__(self, config: Any = "sink") -> None:
        super().__init__(config)
        self.topic: str = str(self._cfg("topic", "sink"))
        self.count = 0
        self.published: deque[Event] = deque(maxlen=int(self._cfg("keep", 1000)))

    def process(self, event: Event) -> list[Event]:
        self.count += 1
        self.published.append(event)
        return []


class MQTTPublish(Sink):
    """Publish each event to an MQTT topic (recorded locally; no network).

    The recorded message is the event's SenML ``payload`` when it has one, else the event itself.
    """

    type_name = "MQTTPublish"

    def process(self, event: Event) -> list[Event]:
        self.count += 1
        self.published.append({"topic": self.topic, "message": event.get("payload", event),
                               **{k: event[k] for k in ("src", "seq", "ts") if k in event}})
        return []
