"""The shared query's input from a broker: the source events an MQTT ingest appended to the bus.

With ``source="mqtt://host:port"`` (``reuse run --source``) the shared query does not generate
its source events: an :class:`~reuse.runtime.dataplane.ingest.Ingest` in the driver appends each
``sensors/<source>`` topic's messages to the bus topic ``src:<source>`` (frames in arrival
order, ``seq`` increasing, each frame's ``hw`` its last ``seq``), and each shard reads the
events of its batch range ``[lo, hi)`` from there (:func:`read_events`).

**Exactly once, as with replay.** A batch reads by ``seq``, not by arrival: the events of a
source with ``lo <= seq < hi``, found from a *cursor* (the bus id of the last frame whose
events all lie below ``lo``) that the driver saves with the task states after every batch. A
batch re-run after a failure starts from the same saved cursor and reads the same range, so it
sees the same events; frames are never rewritten (the bus is append-only and idempotent per
producer key).

**When a range may be claimed** (:func:`ready_seq`). The shared query's clock is no longer the
replay's nominal emit time but what has arrived: a batch may claim ``seq < ready``, where
``ready`` is the smallest, over the sources the deployment reads, of the first ``seq`` not yet on
the bus (a source read only from its join point ``J`` on does not hold back the ``seq`` below
``J``). An event that arrives after its ``seq`` was claimed would be missed, and the ingest
promises increasing ``seq`` per topic, so once a source's ``hw`` passed a ``seq`` no later
event of that source has it. A ``seq`` that never arrives (a message the broker lost) is
counted by the ingest as ``missed`` and is simply absent from every batch and from the
reference execution (:func:`load_recorded`): outputs are checked on the events the bus
recorded.

Nothing here imports Spark; :class:`~reuse.runtime.dataplane.bus.FileBus` and ``RedisBus`` both
work (the file bus only where every executor sees the driver's disk).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from reuse.runtime.dataplane.bus import Bus
from reuse.runtime.dataplane.frames import decode_frame, peek_frame
from reuse.runtime.dataplane.mqtt import bus_topic

__all__ = ["end_offset", "last_seq", "read_events", "ready_seq", "dump_recorded", "load_recorded",
           "RECORDED"]

#: The run directory's folder of recorded source events (one ``<source>.jsonl`` each).
RECORDED = "recorded"


def end_offset(bus: Bus) -> str:
    """The largest offset of a bus (every key sorts at or below it)."""
    return "+" if bus.kind == "redis" else "\uffff"


def last_seq(bus: Bus, source: str) -> int:
    """The last ``seq`` of ``source`` on the bus (``-1``: nothing yet), from the newest frame's
    header."""
    topic = bus_topic(source)
    key = bus.latest(topic)
    if not key:
        return -1
    for k, frame in bus.read(topic, _before(bus, key), key):
        return peek_frame(frame, topic=topic, key=k)[0]
    return -1


def _before(bus: Bus, key: str) -> str:
    """An offset just below ``key`` (so ``read(topic, _before(k), k)`` yields ``k`` alone)."""
    if bus.kind == "redis":
        ms, n = (int(x) for x in key.split("-"))
        return f"{ms}-{n - 1}" if n else (f"{ms - 1}-18446744073709551615" if ms else "")
    return key[:-1] + chr(ord(key[-1]) - 1) if key else ""


def read_events(bus: Bus, source: str, after: str, lo: int, hi: int,
                ) -> tuple[list[dict[str, Any]], str]:
    """The events of ``source`` with ``lo <= seq < hi``, in ``seq`` order, reading the frames
    after offset ``after``; and the new cursor: the offset of the last frame whose events all
    lie below ``hi`` (``after`` when there is none), where the next range's read starts.

    Frames hold increasing ``seq`` (the ingest's promise), so the read stops at the first frame
    that reaches ``hi - 1``.

    Examples
    --------
    >>> import tempfile
    >>> from reuse.runtime.dataplane.bus import FileBus
    >>> from reuse.runtime.dataplane.frames import encode_frame
    >>> b = FileBus(tempfile.mkdtemp())
    >>> b.publish("src:S", "000001-000000001", encode_frame(1, ['{"seq":0}', '{"seq":1}']))
    >>> b.publish("src:S", "000001-000000002", encode_frame(3, ['{"seq":2}', '{"seq":3}']))
    >>> evs, cur = read_events(b, "S", "", 1, 3)
    >>> [e["seq"] for e in evs], cur
    ([1, 2], '000001-000000001')
    >>> [e["seq"] for e in read_events(b, "S", cur, 3, 9)[0]]
    [3]
    """
    topic = bus_topic(source)
    out: list[dict[str, Any]] = []
    cursor = after
    if hi <= lo:
        return out, cursor
    for key, frame in bus.read(topic, after, end_offset(bus)):
        got = decode_frame(frame, topic=topic, key=key)
        for text in got.values:
            ev = json.loads(text)
            if lo <= ev["seq"] < hi:
                out.append(ev)
        if got.hw < hi:
            cursor = key
        if got.hw >= hi - 1:
            break
    return out, cursor


def ready_seq(needed: Mapping[str, int], arrived: Mapping[str, int], *, floor: int) -> int:
    """The first ``seq`` a batch may not yet claim.

    Parameters
    ----------
    needed
        Source -> the first ``seq`` the deployment reads it from (its earliest live source
        task's join point).
    arrived
        Source -> its last ``seq`` on the bus (``-1``: none).
    floor
        What is claimable when no source is needed (the largest ``seq`` arrived on any topic,
        plus one), and the least this returns: a range with no reader is free to pass.

    Examples
    --------
    >>> ready_seq({"A": 0, "B": 0}, {"A": 9, "B": 4}, floor=10)
    5
    >>> ready_seq({"A": 0, "B": 12}, {"A": 9, "B": 4}, floor=10)  # B is read from 12 on
    10
    >>> ready_seq({}, {"A": 9}, floor=10)
    10
    """
    if not needed:
        return floor
    return min(max(j, arrived.get(s, -1) + 1) for s, j in needed.items())


def dump_recorded(bus: Bus, sources: Iterable[str], folder: str | os.PathLike[str],
                  upto: int) -> dict[str, int]:
    """Write every event of ``sources`` with ``seq < upto`` that the bus holds to
    ``<folder>/<source>.jsonl`` (atomically): what the reference execution replays for a
    broker-fed run. Returns the events written per source."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}
    for source in sorted(set(sources)):
        topic = bus_topic(source)
        lines: list[str] = []
        for key, frame in bus.read(topic, "", end_offset(bus)):
            got = decode_frame(frame, topic=topic, key=key)
            lines += [str(t) for t in got.values if json.loads(t)["seq"] < upto]
            if got.hw >= upto - 1:
                break
        path = root / f"{source}.jsonl"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(tmp, path)
        written[source] = len(lines)
    return written


def load_recorded(folder: str | os.PathLike[str]) -> dict[str, dict[int, dict[str, Any]]]:
    """Source -> ``seq`` -> event, as :func:`dump_recorded` wrote them."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for path in sorted(Path(folder).glob("*.jsonl")):
        evs: dict[int, dict[str, Any]] = {}
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    ev = json.loads(line)
                    evs[int(ev["seq"])] = ev
        out[path.name[: -len(".jsonl")]] = evs
    return out
