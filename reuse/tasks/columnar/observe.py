"""A batch's observations as columns, keyed as the keyed stateful tasks key them (issue 35).

Every keyed STATS task reads an event the same way: its observations (a joined message's
``fields``, else ``{obs: value}``, :func:`~reuse.tasks.base.observations`), the numeric and
finite ones among a set of fields (``_numeric`` in :mod:`reuse.tasks.stats`), each in the
series :func:`~reuse.tasks.base.group_key` names. :func:`explode` does that for a whole batch
once, so a kernel sees flat arrays (input row, field name, value, series code) in the order the
per-event loop meets them, and runs its recursion over series codes instead of dict lookups.

Why the Python that is left is there: a field name or a joined message's ``fields`` dict is a
Python object, so naming a row's observations and building its key string need the object;
it is done once per row (or per distinct combination, for the key strings), never per
operation. Values that already sit in a ``float64`` column are read without Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from operator import is_, itemgetter
from typing import Any

import numpy as np

from reuse.tasks.base import ACCOUNTING_KEYS, as_float
from reuse.tasks.columnar.batch import MISSING, Batch, object_column

__all__ = ["Observations", "explode", "derived", "first_seen", "floats", "constant"]

#: what :func:`~reuse.tasks.base.derive` copies from an input event, in its order
DERIVED_KEYS = (*ACCOUNTING_KEYS, "sensor", "meta")


@dataclass(frozen=True)
class Observations:
    """The kept observations of a batch, in per-event order (row by row, a joined message's
    fields in their dict order): input ``rows``, field ``names`` (``object``), ``values``
    (``float64``, finite), series code ``kid`` into ``keys`` (the :func:`group_key` strings,
    first seen first, as the per-event task inserts them into its state dict)."""

    rows: np.ndarray
    names: np.ndarray
    values: np.ndarray
    kid: np.ndarray
    keys: list[str]

    @property
    def m(self) -> int:
        return len(self.rows)


def constant(value: str, n: int) -> np.ndarray:
    """An ``object`` column holding the string ``value`` in each of ``n`` rows."""
    return np.full(n, value, dtype=object)


def _number(value: Any) -> float:
    """:func:`as_float`, with NaN for ``None`` (both are skipped: NaN is not finite)."""
    if type(value) is float:
        return value
    num = as_float(value)
    return math.nan if num is None else num


def floats(col: np.ndarray) -> np.ndarray:
    """A column's values as :func:`as_float` reads them, NaN where it gives ``None``."""
    if col.dtype == np.float64:
        return col
    if col.dtype == np.int64:
        return col.astype(np.float64)  # correctly rounded, as float(int)
    if col.dtype == bool:
        return np.full(len(col), math.nan)  # as_float(bool) is None
    return np.fromiter(map(_number, col.tolist() if col.dtype != object else col),
                       dtype=np.float64, count=len(col))


def first_seen(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes renumbered ``0, 1, ...`` in order of first occurrence, and the old code of each
    new one.

    >>> first_seen(np.array([7, 3, 7, 5]))
    (array([0, 1, 0, 2]), array([7, 3, 5]))
    """
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq), dtype=np.int64)
    return rank[inverse.reshape(-1)], uniq[order]


def _codes(items: Sequence[Any] | np.ndarray, table: dict[Any, int]) -> np.ndarray:
    """Codes of hashable ``items`` in ``table`` (new ones appended, first seen first); the
    per-item work is two C-level passes (``dict.fromkeys``, ``map``)."""
    for x in dict.fromkeys(items):
        table.setdefault(x, len(table))
    return np.fromiter(map(table.__getitem__, items), dtype=np.int64, count=len(items))


def _part(batch: Batch, name: str, rows: np.ndarray) -> list[str]:
    """``str(event.get(name, ""))`` of the events at ``rows``."""
    col = batch.cols.get(name)
    if col is None:
        return [""] * len(rows)
    values = col[rows]
    out = list(map(str, values.tolist()))
    if values.dtype == object:
        absent = np.fromiter(map(partial(is_, MISSING), values), dtype=bool, count=len(values))
        for i in np.flatnonzero(absent).tolist():
            out[i] = ""
    return out


def explode(batch: Batch, fields: Collection[str] | None, group_by: Sequence[str]) -> Observations:
    """The observations :func:`_numeric` yields for each event of ``batch``, restricted to
    ``fields`` when given, with their :func:`group_key` over ``group_by``.

    >>> b = Batch.from_events([{"sensor": "s", "obs": "t", "value": 1.5},
    ...                        {"sensor": "s", "fields": {"h": "2", "t": None, "x": 3.0}}])
    >>> o = explode(b, {"t", "h"}, ["sensor", "obs"])
    >>> o.rows.tolist(), o.names.tolist(), o.values.tolist(), o.kid.tolist(), o.keys
    ([0, 1], ['t', 'h'], [1.5, 2.0], [0, 1], ['s|t', 's|h'])
    """
    joined = batch.has("fields")
    single = batch.has("obs") & ~joined
    table: dict[Any, int] = {}
    rows, codes, values = [], [], []
    srows = np.flatnonzero(single)
    if len(srows):
        names = batch.cols["obs"][srows]
        code = _codes(names.tolist() if names.dtype != object else names, table)
        wanted = np.fromiter((fields is None or x in fields for x in table), dtype=bool,
                             count=len(table))
        chosen = np.flatnonzero(wanted[code])  # read only these values, as _numeric does
        vcol = batch.cols.get("value")
        vals = (floats(vcol[srows[chosen]]) if vcol is not None
                else np.full(len(chosen), math.nan))
        finite = np.isfinite(vals)
        keep = chosen[finite]
        rows.append(srows[keep])
        codes.append(code[keep])
        values.append(vals[finite])
    jrows = np.flatnonzero(joined)
    if len(jrows):
        jr, jc, jv = _joined(jrows, batch.cols["fields"][jrows], fields, table)
        vals = np.fromiter(map(_number, jv), dtype=np.float64, count=len(jv))
        keep = np.isfinite(vals)
        rows.append(np.array(jr, dtype=np.int64)[keep])
        codes.append(np.array(jc, dtype=np.int64)[keep])
        values.append(vals[keep])
    if not rows:
        return _empty()
    row = np.concatenate(rows)
    code = np.concatenate(codes)
    value = np.concatenate(values)
    if len(rows) > 1:  # both kinds of event: back to row order (stable: fields keep theirs)
        order = np.argsort(row, kind="stable")
        row, code, value = row[order], code[order], value[order]
    if not len(row):
        return _empty()
    name_of = object_column(list(table))
    kid, keys = _keys(batch, row, code, name_of, list(group_by))
    return Observations(row, name_of[code], value, kid, keys)


def _joined(rows: np.ndarray, messages: np.ndarray, fields: Collection[str] | None,
            table: dict[Any, int]) -> tuple[list[int], list[int], list[Any]]:
    """Row, field-name code and raw value of each observation of joined messages, in each
    message's own order, restricted to ``fields``.

    Messages of one stream share a layout (their fields in one order), so the fields to read
    and their codes are worked out once per layout, and each message's values are taken by
    one ``itemgetter`` call.
    """
    jr: list[int] = []
    jc: list[int] = []
    jv: list[Any] = []
    layouts: dict[tuple[Any, ...], tuple[list[int], Callable[[Any], Any], int]] = {}
    for r, message in zip(rows.tolist(), messages, strict=True):
        if type(message) is not dict:
            message = dict(message)
        shape = tuple(message)
        got = layouts.get(shape)
        if got is None:
            names = [x for x in shape if fields is None or x in fields]
            got = layouts[shape] = ([table.setdefault(x, len(table)) for x in names],
                                    itemgetter(*names) if names else _nothing, len(names))
        name_codes, get, k = got
        if k == 1:
            jr.append(r)
            jc.append(name_codes[0])
            jv.append(get(message))
        elif k:
            jr.extend([r] * k)
            jc.extend(name_codes)
            jv.extend(get(message))
    return jr, jc, jv


def _nothing(message: Any) -> tuple[()]:
    return ()


def _empty() -> Observations:
    return Observations(np.zeros(0, dtype=np.int64), object_column([]),
                        np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.int64), [])


def _keys(batch: Batch, row: np.ndarray, code: np.ndarray, name_of: np.ndarray,
          group_by: list[str]) -> tuple[np.ndarray, list[str]]:
    """Series codes (first seen first) and key strings of observations with input ``row``
    and field-name ``code``: the key strings are built once per distinct (row parts, name)
    combination, then merged where two combinations spell one string (``"a|b" + "c"`` and
    ``"a" + "b|c"``), as the per-event dict merges them."""
    others = [g for g in group_by if g != "obs"]
    width = len(name_of) if "obs" in group_by else 1  # a name not in the key is no part
    prefixes: list[Any] = []
    combo = code if width > 1 else np.zeros_like(code)
    if others:
        urows = row[np.r_[True, row[1:] != row[:-1]]]  # `row` is sorted
        parts: list[Any] = (_part(batch, others[0], urows) if len(others) == 1 else
                            list(zip(*(_part(batch, g, urows) for g in others), strict=True)))
        ptable: dict[Any, int] = {}
        pcode = _codes(parts, ptable)[np.searchsorted(urows, row)]
        prefixes = list(ptable)
        combo = pcode * width + combo
    kid, combos = first_seen(combo)
    names = name_of[combos % width].tolist() if "obs" in group_by else [None] * len(combos)
    pre = [prefixes[i] for i in (combos // width).tolist()] if others else []
    strings = _spell(group_by, names, pre)
    if len(group_by) < 2 or not _separated(prefixes, name_of):
        return kid, strings  # one part, or no part holds "|": distinct parts spell distinctly
    merged: dict[str, int] = {}
    remap = np.fromiter((merged.setdefault(s, len(merged)) for s in strings), dtype=np.int64,
                        count=len(strings))
    if len(merged) < len(strings):
        kid = remap[kid]
    return kid, list(merged)


def _separated(prefixes: list[Any], name_of: np.ndarray) -> bool:
    """Whether some key part holds the separator ``|`` (then two part lists may spell one
    key string)."""
    flat = chain.from_iterable(p if isinstance(p, tuple) else (p,) for p in prefixes)
    return any(isinstance(x, str) and "|" in x for x in chain(flat, name_of.tolist()))


def _spell(group_by: list[str], names: list[Any], pre: list[Any]) -> list[str]:
    """``"|".join`` of each combination's parts in ``group_by`` order (``pre``: the non-obs
    part, or a tuple of them when there are several). The usual shapes are spelled
    directly; a non-str field name fails as in ``join`` (a ``TypeError``)."""
    if group_by == ["obs"]:
        return [n if type(n) is str else "|".join([n]) for n in names]
    if group_by == ["sensor", "obs"] or (len(group_by) == 2 and group_by[1] == "obs"
                                         and group_by[0] != "obs"):
        return [p + "|" + n for p, n in zip(pre, names, strict=True)]
    if len(group_by) == 1:
        return pre
    out = []
    several = sum(g != "obs" for g in group_by) > 1
    for i, n in enumerate(names):
        it = iter(pre[i] if several else (pre[i],) if pre else ())
        out.append("|".join([n if g == "obs" else next(it) for g in group_by]))
    return out


def derived(batch: Batch, rows: np.ndarray, **changes: np.ndarray) -> Batch:
    """The outputs ``derive(event, **changes)`` makes of the events at ``rows``: their
    accounting keys, ``sensor`` and ``meta`` (where they have them), then ``changes`` (one
    column each, in that order)."""
    if not len(rows):
        return Batch.empty()
    cols = {k: batch.cols[k][rows] for k in DERIVED_KEYS if k in batch.cols}
    cols.update(changes)
    return Batch(len(rows), cols)
