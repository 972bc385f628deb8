"""Stateful ETL tasks: Interpolation (fill filtered values) and Join (collect a message's fields).

In the ETL application, RangeFilter nulls out-of-range observations, Interpolation replaces the
nulls by the average of the last valid values of the same series, and Join, grouped by MSGID
(our ``seq``), reassembles the observations of one message into a single event.
"""

from __future__ import annotations

from typing import Any

from reuse.tasks.base import (
    Event,
    StatefulTask,
    as_float,
    config_dict,
    derive,
    group_key,
    snapshot,
    str_list,
    str_set,
    to_int,
)

__all__ = ["Interpolation", "Join"]


class Interpolation(StatefulTask):
    """Replace a missing (``None``) value by the mean of the last ``window`` valid values.

    Config keys: ``fields`` (``STATISTICS.INTERPOLATION.USE_MSG_FIELD[_LIST]``: series that are
    interpolated; others pass unchanged), ``window`` (``STATISTICS.INTERPOLATION.WINDOW_SIZE``),
    ``group_by`` (keys of a series, e.g. ``["obs"]``). With ``window`` 0 (TAXI's setting) or no
    history yet, the value stays ``None``: there is nothing to interpolate from.
    State: the last ``window`` valid values per series.
    """

    type_name = "Interpolation"
    partitioning = "keyed"  # the last values per series key; other fields pass untouched
    state_map = "history"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``fields`` as a set (sorted), ``window`` as an int, ``group_by`` written out."""
        c = config_dict(config)
        c["fields"] = str_set(c["fields"])
        c["window"] = to_int(c["window"])
        c["group_by"] = str_list(c.get("group_by", ["sensor", "obs"]))
        return c

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.fields = set(self._cfg("fields", required=True))
        self.window = int(self._cfg("window", required=True))
        self.group_by: list[str] = list(self._cfg("group_by", ["sensor", "obs"]))
        self.history: dict[str, list[float]] = {}

    def _fill(self, event: Event, obs: str, value: Any) -> tuple[Any, bool]:
        if obs not in self.fields:
            return value, False
        key = group_key(event, obs, self.group_by)
        hist = self.history.setdefault(key, [])
        num = as_float(value)
        if num is not None:
            if self.window > 0:
                hist.append(num)
                del hist[: -self.window]
            return value, False
        if hist:
            return sum(hist) / len(hist), True
        return value, False

    def process(self, event: Event) -> list[Event]:
        if "fields" in event:
            fields = {}
            for obs, val in event["fields"].items():
                fields[obs], _ = self._fill(event, obs, val)
            return [derive(event, fields=fields)]
        value, filled = self._fill(event, event.get("obs", ""), event.get("value"))
        out = derive(event, obs=event.get("obs"), value=value)
        if filled:
            out["interpolated"] = True
        return [out]

    def get_state(self) -> Any:
        return {"history": {k: list(v) for k, v in self.history.items()}}

    def set_state(self, state: Any) -> None:
        self.history = {k: [float(x) for x in v] for k, v in state["history"].items()}


class Join(StatefulTask):
    """Collect the observations of one message (same ``seq``) and emit them as one event.

    Config keys: ``fields`` (the observed fields a complete message has), ``max_count``
    (``JOIN.MAX_COUNT_VALUE``: emit anyway after this many observations), ``max_pending`` (bound
    on incomplete messages kept; the oldest is emitted as is when exceeded, so a lost observation
    cannot leak memory). Output: ``fields`` = ``{obs: value}``, plus sensor, meta and accounting
    keys of the message. Observations of fields not listed are ignored.
    State: the incomplete messages, in arrival order.
    """

    type_name = "Join"
    #: keyed by message (``src|seq``), but ``max_pending`` evicts the oldest incomplete message
    #: over all of them: split, each part would evict at other points, so the task is gathered
    partitioning = "global"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``max_count`` written out (its default is the length of ``fields`` as written,
        repeats included), then ``fields`` as a set (only its set and length are read);
        ``max_pending`` an int, default 1000."""
        c = config_dict(config)
        fields = str_list(c["fields"])
        c["max_count"] = to_int(c.get("max_count", len(fields)))
        c["fields"] = str_set(fields)
        c["max_pending"] = to_int(c.get("max_pending", 1000))
        return c

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.fields: list[str] = list(self._cfg("fields", required=True))
        self._wanted = set(self.fields)
        self.max_count = int(self._cfg("max_count", len(self.fields)))
        self.max_pending = int(self._cfg("max_pending", 1000))
        self.pending: dict[str, dict[str, Any]] = {}

    def _emit(self, key: str) -> Event:
        msg = self.pending.pop(key)
        head = msg["head"]
        return derive(head, fields=msg["fields"])

    def process(self, event: Event) -> list[Event]:
        obs = event.get("obs")
        if obs not in self._wanted:
            return []
        key = f"{event.get('src')}|{event.get('seq')}"
        if key not in self.pending:
            head = {k: event[k] for k in ("src", "seq", "ts", "sensor", "meta") if k in event}
            self.pending[key] = {"head": head, "fields": {}, "count": 0}
        msg = self.pending[key]
        msg["fields"][obs] = event.get("value")
        msg["count"] += 1
        out = []
        if len(msg["fields"]) == len(self._wanted) or msg["count"] >= self.max_count:
            out.append(self._emit(key))
        while len(self.pending) > self.max_pending:
            out.append(self._emit(next(iter(self.pending))))
        return out

    def get_state(self) -> Any:
        return snapshot({"pending": [[k, v] for k, v in self.pending.items()]})

    def set_state(self, state: Any) -> None:
        self.pending = {k: v for k, v in snapshot(state["pending"])}
