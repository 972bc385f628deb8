"""Kernels of the parse family (issue 35): SenMLParse, Annotate and CsvToSenML.

SenMLParse is the most expensive task of the RIoT workload (every source event goes through it
once per dataflow), and almost all of its per-event cost is Python around the JSON parse: a
decoder called through ``json``'s Python layer, a dict per entry, a function call per value,
an output dict per observation. Here each payload is parsed once with ``orjson`` (1.7 to 2.2
times cheaper than ``json.loads`` on the RIoTBench payloads), the entries of the whole batch are read as flat lists by
C-level ``map`` calls, the value conversions run over a batch column at a time, and the output
rows are numpy takes over message and entry indices.

Exact, not approximate: ``orjson`` is trusted only where it reads a payload as ``json.loads``
does. Every payload it rejects (NaN and infinity literals, lone surrogates, numbers beyond
double range, nesting beyond 1024), every message whose shape the batch path does not read
(not an object, entries that are not a list of objects, values that are lists or objects)
and every message holding a float that could be an integer literal orjson read beyond 64
bits runs through the task's own ``process``, in place. What is left (the whole of the
RIoTBench data) gives the same observations, bit for bit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from itertools import chain, compress, repeat
from json.encoder import encode_basestring_ascii
from operator import is_not, not_
from typing import Any, Final, cast

import numpy as np
import orjson

from reuse.tasks.base import Event, Task, as_float
from reuse.tasks.columnar.batch import MISSING, Batch, object_column
from reuse.tasks.columnar.kernel import Kernel
from reuse.tasks.parse import Annotate, CsvToSenML, SenMLParse

__all__ = ["AnnotateKernel", "CsvToSenMLKernel", "SenMLParseKernel", "merge_rows", "narrowed"]


class _Absent:
    """What ``dict.get`` gives for a key an entry lacks (``None`` is a value of its own); a
    type of its own, so one ``set(map(type, ...))`` pass tells whether any entry lacks it."""


_ABSENT: Final = _Absent()

#: ``orjson`` reads an integer literal outside [-2**63, 2**64) as a float, where ``json`` keeps
#: the int (``str`` of the two differ): such a float is at least this large, so a message with a
#: float this large where the kernel reads one goes through ``process``.
_BIG = 2.0 ** 63

#: ``json.loads`` recurses per nesting level and stops at the interpreter's recursion limit
#: (1000 frames, the caller's included), ``orjson`` at 1024 levels: a payload that may nest
#: this deep (it has this many brackets) goes through ``process``, which gets the interpreter's
#: answer. Shallower ones are read alike unless the caller is 200 frames deep; a payload under
#: twice this length cannot nest this deep, so the real ones are never counted.
_DEEP = 800

#: The scalar types a parsed name or value may have on the batch path (a list or an object as
#: a SenML value is returned as it is, and could hold a number orjson reads its own way; ``str``
#: of one recurses: such messages go through ``process``).
_SCALARS = frozenset({str, int, float, bool, type(None)})


# --- columns ----------------------------------------------------------------------------------

def narrowed(col: np.ndarray) -> np.ndarray | None:
    """``col`` typed as :meth:`Batch.from_events` types a key's values (``int64`` when every
    row is an int, ``float64`` when every row is a float), or ``None`` when no row has the key,
    so a kernel's output columns are what the per-event outputs would make of them."""
    if col.dtype != object:
        return col
    kinds = set(map(type, col.tolist()))
    if kinds == {float}:
        return col.astype(np.float64)
    if kinds == {int}:
        try:
            return col.astype(np.int64)
        except OverflowError:
            return col
    if kinds == {type(MISSING)}:
        return None
    return col


def _finish(cols: dict[str, np.ndarray], n: int, typed: Sequence[str] | None) -> Batch:
    """A batch of ``n`` rows from ``cols``, its object columns narrowed (all of them, or only
    those named in ``typed``: the others are typed already or hold dicts)."""
    if not n:  # no outputs: no columns, as Batch.from_events([]) has
        return Batch.empty()
    out = {}
    for name, col in cols.items():
        kept = narrowed(col) if typed is None or name in typed else col
        if kept is not None:
            out[name] = kept
    return Batch(n, out)


def merge_rows(batch: Batch, fast: dict[str, np.ndarray], fast_rows: np.ndarray,
               slow: Sequence[int], process: Callable[[Event], list[Event]],
               typed: Sequence[str] | None = None) -> Batch:
    """The batch path's output columns ``fast`` (one row per entry of ``fast_rows``: the input
    row it came from, in order) and the outputs of ``process`` over the input rows ``slow``
    (sorted), interleaved in input order.

    The slow rows run in input order, so the first of them that raises raises as the
    per-event task would (the batch path never raises).
    """
    n_fast = len(fast_rows)
    outs: list[Event] = []
    owners: list[int] = []
    if slow:
        events = batch.take(np.asarray(slow, dtype=np.intp)).to_events()
        for row, event in zip(slow, events, strict=True):
            got = process(event)
            outs.extend(got)
            owners.extend([row] * len(got))
    if not outs:
        return _finish(fast, n_fast, typed)
    both = Batch.concat([Batch(n_fast, fast), Batch.from_events(outs)])
    order = np.argsort(np.concatenate([fast_rows, np.asarray(owners, dtype=np.intp)]),
                       kind="stable")
    moved = both.take(order)
    return _finish(dict(moved.cols), moved.n, None)


def _present(values: list[Any]) -> np.ndarray:
    """Which of ``values`` (``dict.get`` results) are not :data:`_ABSENT`."""
    return np.fromiter(map(is_not, values, repeat(_ABSENT)), dtype=bool, count=len(values))


def _unread(values: list[Any]) -> np.ndarray:
    """Which of ``values`` the batch path leaves to ``process``: not a scalar, or a float that
    may stand for an integer beyond 64 bits."""
    return np.fromiter((type(v) not in _SCALARS or (type(v) is float and abs(v) >= _BIG)
                        for v in values), dtype=bool, count=len(values))


def _suspect(kinds: set[type]) -> bool:
    """Whether values of these types need :func:`_unread` (floats and non-scalars do)."""
    return float in kinds or not kinds <= _SCALARS


def _unread_rows(n: int, at: Any, values: list[Any], kinds: set[type]) -> np.ndarray | None:
    """Which of ``n`` rows hold, at ``at`` (an index array or ``slice(None)``), one of
    ``values`` (of types ``kinds``) that the batch path leaves to ``process`` (:func:`_unread`);
    ``None`` when none does (and, by their types, none is looked at). The one "suspect values ->
    mask" step for names, ``v`` and ``sv``."""
    if not _suspect(kinds):
        return None
    bad = np.zeros(n, dtype=bool)
    bad[at] = _unread(values)
    return bad if bad.any() else None


def _v_value(v: Any) -> Any:
    """A ``v`` entry's value, as :func:`reuse.tasks.parse._senml_value` makes it."""
    num = as_float(v)
    return num if num is not None else v


def _floats(values: list[Any], kinds: set[type], convert: Callable[[Any], Any]) -> list[Any]:
    """``convert`` (which is ``float`` where ``float`` succeeds on a str or number) over
    ``values`` of types ``kinds``: one C-level ``float`` pass when every value is a str or a
    number that converts (the whole RIoTBench data), else value by value."""
    if kinds <= {str, int, float}:
        try:
            return list(map(float, values))
        except ValueError:
            pass
    return list(map(convert, values))


# --- SenMLParse ---------------------------------------------------------------------------------

class _Entries:
    """What the batch path read of the entries of its messages, flattened."""

    def __init__(self, owner: np.ndarray, codes: np.ndarray, values: np.ndarray,
                 bts: np.ndarray | None) -> None:
        self.owner = owner    # the message of each entry
        self.codes = codes    # the wanted name each entry's ``n`` equals, or -1
        self.values = values  # each entry's value, as process makes it
        self.bts = bts        # each message's bt as_float, MISSING without one (None: unread)


class SenMLParseKernel(Kernel):
    """SenMLParse a batch at a time: one ``orjson`` parse per payload, then columns.

    Still per row: the parse itself (one ``orjson.loads`` each, the bulk of the kernel's
    time: it builds every entry's dict), and each message's ``meta`` dict (an output holds
    it; built by ``dict(zip(keys, row))`` over the messages with one set of keys). Per row
    but in C when the whole batch is plain SenML: the ``str.strip`` and prefix test
    ``process`` makes of each payload (a Python loop per row otherwise). Per entry, but in C
    (``map`` over the batch's flat entries, about six passes of 10-50 ns): reading ``n``,
    ``v``, ``sv``, ``bv``, looking up the name's code and the ``float`` conversion. In
    numpy: which entry holds each wanted field of each message (the last one, as the
    per-event ``values`` dict keeps), the output rows (message by message, fields in config
    order) and every output column.

    It stays about two times cheaper than ``process``, not ten: the parse and the entry
    passes are per entry whatever the layout, and they are most of the per-event cost too.
    """

    type_name = "SenMLParse"

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        t = cast(SenMLParse, task)
        self._code: dict[Any, int] | None
        names = [*t.fields, *t.meta_fields, t.id_field]
        try:  # a name that cannot key a dict: process raises on every message, so let it
            self._code = {name: c for c, name in enumerate(dict.fromkeys(names))}
        except TypeError:
            self._code = None
            return
        # a name that is not a str may equal a number in a message, which the batch path
        # then checks as it checks values; a str never equals one
        self._str_names = all(type(x) is str for x in names)
        self._field_codes = np.array([self._code[f] for f in t.fields], dtype=np.intp)
        self._fields = object_column(t.fields)
        # the columns whose rows may all be ints or floats (obs: when a field name is one)
        self._typed = ("src", "seq", "ts", "sensor", "value") + \
            (() if all(type(f) is str for f in t.fields) else ("obs",))
        # the meta dict's keys, as the per-event dict comprehension makes them (equal names
        # once, the first spelling kept)
        self._meta_keys = list(dict.fromkeys(t.meta_fields))
        self._meta_codes = np.array([self._code[m] for m in self._meta_keys], dtype=np.intp)
        self._id_code = self._code[t.id_field]
        self._ts_key = self._meta_keys.index("timestamp") if "timestamp" in t.meta_fields \
            else None
        if len(self._meta_keys) > 62:  # the key sets of the meta dicts are bit masks
            self._code = None

    def run(self, batch: Batch) -> Batch:
        if not batch.n:
            return Batch.empty()
        none = np.zeros(0, dtype=np.intp)
        if self._code is None or "payload" not in batch.cols:  # process raises, or reads it
            return merge_rows(batch, {}, none, range(batch.n), self.task.process)
        rows, msgs, entries, slow = self._parse(batch)
        while True:
            got = self._read(msgs, entries)
            if isinstance(got, _Entries):
                break
            # messages the batch path does not read: through process; read the others again
            slow.extend(rows[m] for m in np.flatnonzero(got).tolist())
            keep = np.flatnonzero(~got).tolist()
            rows = [rows[m] for m in keep]
            msgs = [msgs[m] for m in keep]
            entries = [entries[m] for m in keep]
        slow.sort()
        fast: dict[str, np.ndarray] = {}
        fast_rows = none
        if rows:
            fast, fast_rows = self._observations(batch, rows, got)
        return merge_rows(batch, fast, fast_rows, slow, self.task.process,
                          typed=self._typed)

    def _parse(self, batch: Batch) -> tuple[list[int], list[dict[str, Any]],
                                            list[list[Any]], list[int]]:
        """Parse each payload: the rows the batch path reads (with their messages and entry
        lists) and the rows ``process`` computes; a row with no observation is in neither."""
        payloads = batch.cols["payload"].tolist()
        fast = self._parse_all(payloads)
        if fast is not None:
            return fast
        rows: list[int] = []
        msgs: list[dict[str, Any]] = []
        entries: list[list[Any]] = []
        slow: list[int] = []
        loads = orjson.loads
        for i, payload in enumerate(payloads):
            if type(payload) is not str:  # process raises (or reads a str subclass its way)
                slow.append(i)
                continue
            body = payload.strip()
            if body[:1] != "{":  # "<epoch_ms>,{...}", as parse_senml_line splits it
                head, comma, body = body.partition(",")
                if not comma:
                    continue
                try:
                    int(head)
                except ValueError:
                    continue
            if len(body) >= 2 * _DEEP and body.count("[") + body.count("{") >= _DEEP:
                slow.append(i)
                continue
            try:
                msg = loads(body)
            except ValueError:  # orjson.JSONDecodeError: json may read it still (NaN, ...)
                slow.append(i)
                continue
            es = msg.get("e", _ABSENT) if type(msg) is dict else None
            if type(es) is list:
                rows.append(i)
                msgs.append(msg)
                entries.append(es)
            elif es is not _ABSENT:  # no "e": no observations
                slow.append(i)
        return rows, msgs, entries, slow

    @staticmethod
    def _parse_all(payloads: list[Any]) -> tuple[list[int], list[dict[str, Any]],
                                                  list[list[Any]], list[int]] | None:
        """:meth:`_parse` by C-level passes over the whole batch, when every payload is a
        SenML object orjson reads (the real streams); else ``None``, and the rows are parsed
        one by one (re-parsing the ones this pass got to: a batch with a payload orjson
        rejects costs up to two parses a row)."""
        if set(map(type, payloads)) != {str}:
            return None
        bodies = list(map(str.strip, payloads))
        if not all(map(str.startswith, bodies, repeat("{"))) or \
                max(map(len, bodies)) >= 2 * _DEEP:
            return None
        try:
            msgs = list(map(orjson.loads, bodies))
        except ValueError:
            return None
        if set(map(type, msgs)) != {dict}:
            return None
        entries = list(map(dict.get, msgs, repeat("e"), repeat(_ABSENT)))
        if set(map(type, entries)) != {list}:
            return None
        return list(range(len(msgs))), msgs, entries, []

    def _read(self, msgs: list[dict[str, Any]], entries: list[list[Any]]) -> _Entries | np.ndarray:
        """What the batch path reads of the messages, or a mask of the messages it leaves to
        ``process`` (an entry that is not an object; a name, value or ``bt`` not read alike).
        """
        code = self._code
        assert code is not None
        m = len(msgs)
        lens = np.fromiter(map(len, entries), dtype=np.intp, count=m)
        owner = np.repeat(np.arange(m), lens)
        flat = list(chain.from_iterable(entries))
        n = len(flat)

        def owners(bad: np.ndarray) -> np.ndarray:
            mask = np.zeros(m, dtype=bool)
            mask[owner[bad]] = True
            return mask

        try:  # TypeError: an entry that is not a dict, or a name that is a list or a dict
            names = list(map(dict.get, flat, repeat("n")))
            codes = np.fromiter(map(code.get, names, repeat(-1)), dtype=np.intp, count=n)
        except TypeError:
            return owners(np.fromiter((type(e) is not dict or type(e.get("n")) not in _SCALARS
                                       for e in flat), dtype=bool, count=n))
        if not self._str_names and (
                bad := _unread_rows(n, slice(None), names, set(map(type, names)))) is not None:
            return owners(bad)
        bts = None
        if self._ts_key is not None:
            raw = list(map(dict.get, msgs, repeat("bt"), repeat(_ABSENT)))
            has_bt = _present(raw)
            raw = [b for b, h in zip(raw, has_bt.tolist(), strict=True) if h]
            kinds = set(map(type, raw))
            if float in kinds:  # as_float reads anything else alike (None for containers)
                bad_bt = np.zeros(m, dtype=bool)
                bad_bt[has_bt] = np.fromiter((type(b) is float and abs(b) >= _BIG for b in raw),
                                             dtype=bool, count=len(raw))
                if bad_bt.any():
                    return bad_bt
            bts = np.full(m, MISSING, dtype=object)
            bts[has_bt] = object_column(_floats(raw, kinds, as_float))
        # the value: "v" (as float when it converts), else "sv" (as str), else "bv" (as bool),
        # else None; a key an entry has counts even when its value is null
        vs = list(map(dict.get, flat, repeat("v"), repeat(_ABSENT)))
        kinds = set(map(type, vs))
        if _Absent not in kinds:
            if (bad := _unread_rows(n, slice(None), vs, kinds)) is not None:
                return owners(bad)
            return _Entries(owner, codes, object_column(_floats(vs, kinds, _v_value)), bts)
        values = np.empty(n, dtype=object)
        has_v = _present(vs)
        picks = has_v.tolist()
        v_raw = list(compress(vs, picks))
        kinds.discard(_Absent)
        if (bad := _unread_rows(n, has_v, v_raw, kinds)) is not None:
            return owners(bad)
        values[has_v] = object_column(_floats(v_raw, kinds, _v_value))
        rest = np.flatnonzero(~has_v)
        svs = list(map(dict.get, compress(flat, map(not_, picks)), repeat("sv"), repeat(_ABSENT)))
        kinds = set(map(type, svs))
        if _Absent in kinds:  # rare: neither v nor sv
            for at, s in zip(rest.tolist(), svs, strict=True):
                if s is _ABSENT:
                    e = flat[at]
                    values[at] = bool(e["bv"]) if "bv" in e else None
            has_sv = _present(svs)
            rest, svs = rest[has_sv], list(compress(svs, has_sv.tolist()))
            kinds.discard(_Absent)
        if (bad := _unread_rows(n, rest, svs, kinds)) is not None:
            return owners(bad)
        values[rest] = object_column(svs if kinds == {str} else list(map(str, svs)))
        return _Entries(owner, codes, values, bts)

    def _observations(self, batch: Batch, rows: list[int],
                      ent: _Entries) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The output columns of the messages read in batch, and the input row of each."""
        assert self._code is not None
        m, k = len(rows), len(self._code)
        # last[i, c]: the last entry of message i whose name is wanted name c (the per-event
        # values dict keeps the last of equal names), or -1. A flat assignment keeps one of
        # repeated indices, unspecified which: when that is not the last, maximum.at decides
        last = np.full((m, k), -1, dtype=np.intp)
        wanted = np.flatnonzero(ent.codes >= 0)
        where = ent.owner[wanted] * k + ent.codes[wanted]
        flat_last = last.reshape(-1)
        flat_last[where] = wanted
        if not (flat_last[where] >= wanted).all():
            np.maximum.at(flat_last, where, wanted)
        at = last[:, self._field_codes]
        msg_of, field_of = np.nonzero(at >= 0)  # message by message, fields in config order
        entry_of = at[msg_of, field_of]
        sensors = np.full(m, None, dtype=object)
        has_id = last[:, self._id_code] >= 0
        sensors[has_id] = ent.values[last[has_id, self._id_code]]
        metas = self._metas(last, ent)
        cols: dict[str, np.ndarray] = {}
        src_rows = np.asarray(rows, dtype=np.intp)[msg_of]
        for key in ("src", "seq", "ts"):
            if key in batch.cols:
                cols[key] = batch.cols[key][src_rows]
        cols["sensor"] = sensors[msg_of]
        cols["meta"] = metas[msg_of]
        cols["obs"] = self._fields[field_of]
        cols["value"] = ent.values[entry_of]
        return cols, src_rows

    def _metas(self, last: np.ndarray, ent: _Entries) -> np.ndarray:
        """Each message's ``meta`` dict: its meta fields in config order, then ``timestamp``
        from ``bt`` when the meta fields have one the message's entries lack.

        One dict per message (its observations share it, as the per-event outputs do), built
        by ``dict(zip(keys, row))`` over the messages with one set of keys at a time.
        """
        m, km = len(last), len(self._meta_keys)
        at = last[:, self._meta_codes]
        present = at >= 0
        from_bt = np.zeros(m, dtype=bool)
        if ent.bts is not None and self._ts_key is not None:
            from_bt = ~present[:, self._ts_key] & _present_not_missing(ent.bts)
        shape_of = present.astype(np.int64) @ (np.int64(1) << np.arange(km, dtype=np.int64)) \
            | (from_bt.astype(np.int64) << km)
        metas = np.empty(m, dtype=object)
        for shape in (shape_of[:1] if (shape_of == shape_of[0]).all() else np.unique(shape_of)):
            idx = np.flatnonzero(shape_of == shape)
            cols = [c for c in range(km) if shape >> c & 1]
            keys = [self._meta_keys[c] for c in cols]
            table = ent.values[at[np.ix_(idx, np.asarray(cols, dtype=np.intp))]]
            if shape >> km & 1:
                assert ent.bts is not None
                keys.append("timestamp")
                table = np.column_stack([table, ent.bts[idx]])
            metas[idx] = object_column(list(map(dict, map(zip, repeat(keys), table.tolist()))))
        return metas


def _present_not_missing(col: np.ndarray) -> np.ndarray:
    """Which rows of an object column are not :data:`MISSING`."""
    return np.fromiter(map(is_not, col.tolist(), repeat(MISSING)), dtype=bool, count=len(col))


def _or_empty(d: Any) -> Any:
    """An event's dict, or ``{}`` (``event.get("meta", {})``) for a row without one."""
    return {} if d is MISSING else d


# --- Annotate ---------------------------------------------------------------------------------

class AnnotateKernel(Kernel):
    """Annotate a batch at a time: the metadata table is read once per distinct sensor, and
    one merged dict is made per distinct (input dict, sensor) pair.

    Per row, in C: ``str`` of the sensor and the look-up of its group. Per group, in Python:
    the merged ``meta`` (or ``fields``) dict. An output needs a dict of its own only where its
    input had one: the observations of one message share their ``meta`` dict (SenMLParse
    makes it so), and their annotated ones share one too, which is the same aliasing the
    input had (no task mutates an input's dict). Rows without a ``meta`` get one dict each,
    as ``process`` makes a new one per event. The other columns are the input's, as they are.
    """

    type_name = "Annotate"

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self._annotate = cast(Annotate, task)

    def _notes(self, sensor: str) -> dict[str, Any]:
        """What ``process`` adds for a sensor (its own expression, once per sensor)."""
        t = self._annotate
        vals = t.table.get(sensor, [])
        return {f: (vals[i] if i < len(vals) else None) for i, f in enumerate(t.fields)}

    def run(self, batch: Batch) -> Batch:
        n = batch.n
        if not n:
            return Batch.empty()
        cols = batch.cols
        sensors = cols["sensor"].tolist() if "sensor" in cols else [None] * n
        if type(MISSING) in set(map(type, sensors)):  # event.get("sensor") is None
            sensors = [None if s is MISSING else s for s in sensors]
        keys = list(map(str, sensors))
        notes = {k: self._notes(k) for k in dict.fromkeys(keys)}
        joined = batch.has("fields")
        base = np.where(joined, cols["fields"], cols["meta"]) if "fields" in cols and \
            "meta" in cols else cols.get("fields", cols.get("meta"))
        bases = base.tolist() if base is not None else [MISSING] * n
        # one merged dict per (input dict, sensor); a row without one gets its own
        ids = list(map(id, bases))
        if type(MISSING) in set(map(type, bases)):
            ids = [-1 - i if b is MISSING else d
                   for i, (b, d) in enumerate(zip(bases, ids, strict=True))]
        pairs = list(zip(ids, keys, strict=True))
        firsts = sorted(dict(zip(reversed(pairs), range(n - 1, -1, -1), strict=True)).values())
        group = {pairs[i]: g for g, i in enumerate(firsts)}
        merged = object_column([{**_or_empty(bases[i]), **notes[keys[i]]} for i in firsts])
        out_rows = merged[np.fromiter(map(group.__getitem__, pairs), dtype=np.intp, count=n)]
        out: dict[str, np.ndarray] = {k: cols[k] for k in ("src", "seq", "ts", "sensor")
                                      if k in cols}
        if not joined.any():
            out["meta"] = out_rows
            out.update((k, cols[k]) for k in ("obs", "value") if k in cols)
            return _finish(out, n, ())
        missing = object_column([MISSING] * n)
        if "meta" in cols:
            out["meta"] = np.where(joined, cols["meta"], out_rows)
        else:
            out["meta"] = np.where(joined, missing, out_rows)
        out["fields"] = np.where(joined, out_rows, missing)
        for k in ("obs", "value"):
            if k in cols:
                out[k] = np.where(joined, missing, cols[k])
        return _finish(out, n, None)


# --- CsvToSenML -------------------------------------------------------------------------------

#: Types whose JSON text the kernel writes itself; ints only within 64 bits (``as_float`` of a
#: bigger one may overflow, which ``process`` raises), anything else goes through ``process``.
_WRITTEN = frozenset({str, float, int, bool, type(None), _Absent})
_INT64 = 2 ** 63


def _json_scalar(v: Any) -> str:
    """The text ``json.dumps`` writes for a str, float, int, bool or None."""
    if type(v) is float:
        if v != v:
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return float.__repr__(v)
    if type(v) is str:
        return encode_basestring_ascii(v)
    if v is None or type(v) is bool:
        return "null" if v is None else ("true" if v else "false")
    return int.__repr__(v)


def _unwritten(values: list[Any]) -> np.ndarray:
    """Which of ``values`` the kernel does not write itself (see :data:`_WRITTEN`)."""
    return np.fromiter((type(v) not in _WRITTEN or (type(v) is int and not
                                                    -_INT64 <= v < _INT64) for v in values),
                       dtype=bool, count=len(values))


class _Field:
    """One schema row as the kernel writes it: the name it looks up, whether its kind is
    ``v``, whether it is the id field (the sensor, over any observation of that name) and the
    entry's text around the value, keys in ``sort_keys`` order (``n``, ``sv``, ``u``, ``v``)."""

    def __init__(self, name: Any, unit: Any, kind: Any, id_field: Any) -> None:
        self.name = name
        self.is_v = kind == "v"
        self.is_id = name in {id_field: None}
        n_js = json.dumps(name, sort_keys=True).replace("%", "%%")
        u_js = json.dumps(unit, sort_keys=True).replace("%", "%%")
        self.v_fmt = '{"n": ' + n_js + ', "u": ' + u_js + ', "v": %s}'
        self.sv_fmt = '{"n": ' + n_js + ', "sv": %s, "u": ' + u_js + "}"

    def one(self, v: Any) -> str:
        """The entry of one value, as ``process`` decides between ``v`` and ``sv``."""
        if self.is_v and as_float(v) is not None:
            return self.v_fmt % _json_scalar(v)
        return self.sv_fmt % encode_basestring_ascii(str(v))

    def entries(self, vals: list[Any], kinds: set[type]) -> list[str]:
        """The entries of present values (not None) of these types: a C-level pass for a
        column of one type that needs no per-value decision, else value by value."""
        if self.is_v:
            if kinds == {float}:
                if np.isfinite(np.fromiter(vals, dtype=np.float64, count=len(vals))).all():
                    return list(map(self.v_fmt.__mod__, map(float.__repr__, vals)))
            elif kinds == {int}:
                return list(map(self.v_fmt.__mod__, map(int.__repr__, vals)))
            elif kinds == {str}:
                try:
                    list(map(float, vals))  # every one a number: every one a "v"
                except ValueError:
                    pass
                else:
                    return list(map(self.v_fmt.__mod__, map(encode_basestring_ascii, vals)))
            return list(map(self.one, vals))
        if kinds != {str}:
            vals = list(map(str, vals))
        return list(map(self.sv_fmt.__mod__, map(encode_basestring_ascii, vals)))


class CsvToSenMLKernel(Kernel):
    """CsvToSenML a batch at a time: the SenML text written a schema field at a time.

    ``process`` builds a dict per entry and calls ``json.dumps(sort_keys=True)`` per event;
    this kernel writes the same text without either: for each schema field, the column of its
    values (sensor, else observation, else meta, as ``process`` merges them) is read by one
    ``dict.get`` pass per source, and its entries are formatted a column at a time (``repr``
    of a float, ``encode_basestring_ascii`` of a string: the functions ``json`` itself calls,
    so the text is the same byte for byte). Per row remain the join of a row's entries and
    the payload's format: one string per event is the output.

    Rows whose shape the columns do not read (a ``meta`` or ``fields`` that is not a dict, a
    single observation instead of a joined message, a value or ``bt`` that is not a str,
    float, bool, None or 64-bit int) go through ``process``, in place.
    """

    type_name = "CsvToSenML"

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        t = cast(CsvToSenML, task)
        self._fields: list[_Field] | None
        try:  # a schema process cannot read raises there, on every event
            self._fields = [_Field(name, unit, kind, t.id_field) for name, unit, kind in t.schema]
        except (TypeError, ValueError):
            self._fields = None

    def run(self, batch: Batch) -> Batch:
        n = batch.n
        if not n:
            return Batch.empty()
        cols = batch.cols
        if self._fields is None:
            return merge_rows(batch, {}, np.zeros(0, dtype=np.intp), range(n), self.task.process)
        metas = cols["meta"].tolist() if "meta" in cols else [MISSING] * n
        joined = cols["fields"].tolist() if "fields" in cols else [MISSING] * n
        kinds = set(map(type, metas)) | set(map(type, joined))
        slow = np.zeros(n, dtype=bool)
        if not kinds <= {dict, type(MISSING)}:
            slow |= np.fromiter((type(a) not in (dict, type(MISSING)) or
                                 type(b) not in (dict, type(MISSING))
                                 for a, b in zip(metas, joined, strict=True)),
                                dtype=bool, count=n)
        if "obs" in cols:  # a single observation: process makes its one-key dict
            slow |= batch.has("obs") & ~batch.has("fields")
        empty: dict[Any, Any] = {}
        if type(MISSING) in kinds:
            metas = [empty if m is MISSING else m for m in metas]
            joined = [empty if f is MISSING else f for f in joined]
        if slow.any():  # keep them out of the dict.get passes below
            metas = [empty if s else m for m, s in zip(metas, slow.tolist(), strict=True)]
            joined = [empty if s else f for f, s in zip(joined, slow.tolist(), strict=True)]
        sensors = cols["sensor"].tolist() if "sensor" in cols else [None] * n
        if "sensor" in cols and cols["sensor"].dtype == object:
            sensors = [None if s is MISSING else s for s in sensors]
        ts = cols["ts"].tolist() if "ts" in cols else [None] * n
        if "ts" in cols and cols["ts"].dtype == object:
            ts = [None if s is MISSING else s for s in ts]
        # bt: meta's timestamp, else ts
        bts = list(map(dict.get, metas, repeat("timestamp"), repeat(_ABSENT)))
        if _Absent in set(map(type, bts)):
            bts = [t if b is _ABSENT else b for b, t in zip(bts, ts, strict=True)]
        columns = [bts]
        for f in self._fields:
            if f.is_id:
                columns.append(sensors)
                continue
            ob = list(map(dict.get, joined, repeat(f.name), repeat(_ABSENT)))
            seen = set(map(type, ob))
            if _Absent in seen:
                me = list(map(dict.get, metas, repeat(f.name), repeat(_ABSENT)))
                ob = me if seen == {_Absent} else np.where(
                    _present(ob), object_column(ob), object_column(me)).tolist()
            columns.append(ob)
        for vals in columns:
            seen = set(map(type, vals))
            if not seen <= _WRITTEN or int in seen:
                slow |= _unwritten(vals)
        keep = ~slow
        fast_rows = np.flatnonzero(keep)
        if slow.any():
            mask = keep.tolist()
            columns = [[v for v, k in zip(vals, mask, strict=True) if k] for vals in columns]
        m = len(fast_rows)
        bt_text = list(map(_json_scalar, columns[0]))
        texts = [self._entries(f, vals) for f, vals in zip(self._fields, columns[1:],
                                                          strict=True)]
        body = list(map(", ".join, map(filter, repeat(None), zip(*texts, strict=True)))) if texts else \
            [""] * m
        payloads = object_column(list(map('{"bt": %s, "e": [%s]}'.__mod__,
                                          zip(bt_text, body, strict=True))))
        out = {k: cols[k][fast_rows] for k in ("src", "seq", "ts", "sensor", "meta") if k in cols}
        out["payload"] = payloads
        return merge_rows(batch, out, fast_rows, np.flatnonzero(slow).tolist(), self.task.process,
                          typed=("src", "seq", "ts", "sensor", "meta") if slow.any() else ())

    @staticmethod
    def _entries(f: _Field, vals: list[Any]) -> list[str | None]:
        """A schema field's entry text per row, ``None`` where the row has no value for it."""
        kinds = set(map(type, vals))
        present = kinds - {_Absent, type(None)}
        if not present:
            return [None] * len(vals)
        if present == kinds:
            return list(f.entries(vals, kinds))
        at = np.fromiter((v is not None and v is not _ABSENT for v in vals), dtype=bool,
                         count=len(vals))
        out = np.full(len(vals), None, dtype=object)
        out[at] = object_column(f.entries([v for v, a in zip(vals, at.tolist(), strict=True)
                                           if a], present))
        return cast(list[Any], out.tolist())
