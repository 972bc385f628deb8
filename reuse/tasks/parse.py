"""Parse-category tasks: SenMLParse, Annotate and CsvToSenML (all stateless, 1:1 or 1:N).

SenMLParse splits a SenML message into one event per observed field, like RIoTBench's
(MSGID, SENSORID, META, OBSTYPE, OBSVAL) tuples; Annotate adds static metadata looked up by the
sensor id; CsvToSenML serialises a joined message back to SenML for publishing.
"""

from __future__ import annotations

import json
from typing import Any

from reuse.core.paths import riotbench_dir
from reuse.tasks.base import (
    Event,
    Task,
    TaskError,
    as_float,
    config_dict,
    data_path,
    derive,
    observations,
    require,
    str_list,
    str_set,
)
from reuse.tasks.resources import read_metadata_map

__all__ = ["SenMLParse", "Annotate", "CsvToSenML", "parse_senml_line"]


def parse_senml_line(line: str) -> tuple[int | None, dict[str, Any]]:
    """Split a data-file line ``<epoch_ms>,{SenML JSON}`` into its time and decoded message.

    A bare JSON message (no time prefix) is accepted too and returns ``None`` as the time.
    """
    text = line.strip()
    if text.startswith("{"):
        return None, json.loads(text)
    head, body = text.split(",", 1)
    return int(head), json.loads(body)


def _senml_value(entry: dict[str, Any]) -> Any:
    """A SenML entry's value: ``v`` as float (strings like "8" in the data), ``sv`` as str."""
    if "v" in entry:
        val = as_float(entry["v"])
        return val if val is not None else entry["v"]
    if "sv" in entry:
        return str(entry["sv"])
    if "bv" in entry:
        return bool(entry["bv"])
    return None


class SenMLParse(Task):
    """Parse a SenML payload into one event per observed field.

    A payload that is not SenML (not JSON, not an object, entries that are not objects: what a
    broken or hostile sensor sends through a well-formed MQTT message) gives no observations.
    RIoTBench's bolt would throw, and Storm would fail the tuple; here the parse runs inside
    the one shared query that serves every tenant, where an exception fails the batch, and the
    re-run fails again on the same event: one bad message would stop every dataflow. Dropping
    it is what the reference execution does too (it runs this code), so outputs stay exact.

    Config keys: ``id_field`` (the field that identifies the sensor, ``PARSE.ID_FIELD_SCHEMA``),
    ``meta_fields`` (``PARSE.META_FIELD_SCHEMA``: carried in ``meta``, not emitted),
    ``fields`` (observed fields to emit, in order). The workload passes every schema field that
    is not a meta field, as the original's bolt does, so an id field that is not a meta field
    (TAXI's ``taxi_identifier``) is emitted as an observation too, beside being ``sensor``.
    Fields a message lacks are not emitted (the original emits them with a null value).
    Input: an event with ``payload`` (the SenML JSON, optionally prefixed with ``<epoch_ms>,``).
    """

    type_name = "SenMLParse"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``meta_fields`` as a set (they only key the ``meta`` dict; default ``[]`` written
        out); ``fields`` keep their order, which is the order of the emitted events."""
        c = config_dict(config)
        require(c, "id_field")
        c["meta_fields"] = str_set(c.get("meta_fields", []))
        c["fields"] = str_list(c["fields"])
        return c

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.id_field: str = self._cfg("id_field", required=True)
        self.meta_fields: list[str] = list(self._cfg("meta_fields", []))
        self.fields: list[str] = list(self._cfg("fields", required=True))
        self._wanted = set(self.fields)

    def process(self, event: Event) -> list[Event]:
        payload = event.get("payload")
        if not isinstance(payload, str):
            raise TaskError(f"SenMLParse: event seq={event.get('seq')} has no str payload")
        try:  # a payload that is not SenML: no observations, never an exception (see below)
            _, msg = parse_senml_line(payload)
            entries = msg.get("e", [])
            values = {e.get("n"): _senml_value(e) for e in entries}
        except (ValueError, TypeError, AttributeError, RecursionError):
            return []
        meta: dict[str, Any] = {m: values[m] for m in self.meta_fields if m in values}
        if "timestamp" in self.meta_fields and "timestamp" not in meta and "bt" in msg:
            meta["timestamp"] = as_float(msg["bt"])
        sensor = values.get(self.id_field)
        base: dict[str, Any] = {k: event[k] for k in ("src", "seq", "ts") if k in event}
        out = []
        for name in self.fields:
            if name in values:
                out.append(
                    {**base, "sensor": sensor, "meta": meta, "obs": name, "value": values[name]}
                )
        return out


class Annotate(Task):
    """Add static metadata for the event's sensor, loaded from a metadata file at start-up.

    Config keys: ``file`` (base name of the ``ANNOTATE.ANNOTATE_FILE_PATH`` file, lines
    ``id:v1,v2``), ``fields`` (names for v1, v2, ...: the annotation fields of the schema).
    A joined message gets the values in ``fields``; a single observation gets them in ``meta``.
    Unknown sensors get ``None`` values (the message still flows, as in RIoTBench).
    """

    type_name = "Annotate"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``file`` as a normalised relative path; ``fields`` keep their order (they name the
        file's columns)."""
        c = config_dict(config)
        c["file"] = data_path(c["file"])
        c["fields"] = str_list(c["fields"])
        return c

    def __init__(self, config: Any, data_dir: Any = None) -> None:
        super().__init__(config)
        self.fields: list[str] = list(self._cfg("fields", required=True))
        path = riotbench_dir(data_dir) / self._cfg("file", required=True)
        self.table = read_metadata_map(path)

    def process(self, event: Event) -> list[Event]:
        vals = self.table.get(str(event.get("sensor")), [])
        notes = {f: (vals[i] if i < len(vals) else None) for i, f in enumerate(self.fields)}
        if "fields" in event:
            return [derive(event, fields={**event["fields"], **notes})]
        out = derive(event, meta={**event.get("meta", {}), **notes})
        for k in ("obs", "value"):
            if k in event:
                out[k] = event[k]
        return [out]


class CsvToSenML(Task):
    """Serialise a (joined, annotated) message to a SenML JSON string in ``payload``.

    Config keys: ``id_field``, ``schema`` (list of ``[name, unit, kind]`` from the schema file with
    annotation fields, ``kind`` "v" or "sv"). Values come from the observations, the meta fields or
    the sensor id; fields the message lacks are left out, as SenML allows.
    """

    type_name = "CsvToSenML"

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.id_field: str = self._cfg("id_field", required=True)
        self.schema: list[list[str]] = [list(s) for s in self._cfg("schema", required=True)]

    def process(self, event: Event) -> list[Event]:
        values = {**event.get("meta", {}), **observations(event), self.id_field: event.get("sensor")}
        entries = []
        for name, unit, kind in self.schema:
            if name not in values or values[name] is None:
                continue
            val = values[name]
            key = "v" if kind == "v" and as_float(val) is not None else "sv"
            entries.append({"n": name, "u": unit, key: val if key == "v" else str(val)})
        msg = {"e": entries, "bt": event.get("meta", {}).get("timestamp", event.get("ts"))}
        return [derive(event, payload=json.dumps(msg, sort_keys=True))]
