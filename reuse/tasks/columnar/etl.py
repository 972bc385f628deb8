"""Kernels of the stateful ETL tasks: Interpolation and Join.

Both keep state per key and read it in arrival order, so a batch is grouped by key (a stable
sort keeps each key's rows in order) and what one event would do to its key's state is
computed for all its rows at once: a key's history is one array (the old values, then the
batch's valid ones), and each row reads the window ending where it stands. The kernels compute
first and write the task's state last, so a :class:`~reuse.tasks.columnar.rowops.Fallback`
leaves it as it was.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np

from reuse.tasks.base import Task, derive
from reuse.tasks.columnar.batch import MISSING, Batch, object_column
from reuse.tasks.columnar.kernel import PerEvent
from reuse.tasks.columnar.rowops import (
    ACCOUNTING,
    Fallback,
    Vectorized,
    changes,
    codes,
    events_at,
    floats,
    get,
    merge_rows,
    present,
)
from reuse.tasks.columnar.sums import sum_rows
from reuse.tasks.etl import Interpolation

__all__ = ["InterpolationKernel", "JoinKernel"]

_NEW: tuple[()] = ()  # what a key without history reads as (told apart by identity)


def _flat(batch: Batch,
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[Any] | None] | None]:
    """Every observation of the batch in the order ``process`` meets them: per row, a single
    one's ``(event.get("obs", ""), event.get("value"))`` or a joined one's ``fields`` items.
    Returns the row of each, the names, the values and (when there are joined rows) each
    row's names, ``None`` for a single row."""
    fields = batch.cols.get("fields")
    joined = present(batch, "fields")
    if fields is None or not joined.any():
        return np.arange(batch.n), get(batch, "obs", ""), get(batch, "value"), None
    obs, value = get(batch, "obs", "").tolist(), get(batch, "value").tolist()
    rows: list[int] = []
    names: list[Any] = []
    values: list[Any] = []
    per_row: list[list[Any] | None] = []
    for r, (is_joined, f) in enumerate(zip(joined.tolist(), fields.tolist(), strict=True)):
        if is_joined:
            if type(f) is not dict:
                raise Fallback("a fields that is not a dict")
            rows += [r] * len(f)
            names += f.keys()
            values += f.values()
            per_row.append(list(f))
        else:
            rows.append(r)
            names.append(obs[r])
            values.append(value[r])
            per_row.append(None)
    return np.asarray(rows, dtype=np.intp), object_column(names), object_column(values), per_row


class InterpolationKernel(Vectorized):
    """Interpolation a batch at a time, every series (``group_by`` key) at once.

    For each interpolated observation, the history it reads is a slice of its key's stream
    (the key's stored values, then the batch's valid values of that key): with ``c`` valid
    values of its key before it, it ends at ``c`` and holds the last ``window`` of those
    (all the stored ones while ``c`` is 0, as the per-event code trims only on an append).
    The means are the built-in ``sum`` replayed row-wise (:func:`sum_rows`) over those slices,
    divided by their lengths: the per-event operations, exact. The new history of a key is
    the tail of its stream. Keys are ``group_key``'s strings (:meth:`_codes`); a joined
    event's ``fields`` dict is rebuilt per row.
    """

    type_name = "Interpolation"

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        assert isinstance(task, Interpolation)
        self.by_obs = task.group_by == ["obs"]
        self.field_code = {f: i for i, f in enumerate(task.fields)}
        self.field_list = list(task.fields)

    def compute(self, batch: Batch) -> Batch:
        task: Any = self.task
        rows, names, values, per_row = _flat(batch)
        try:
            mask = np.fromiter(map(task.fields.__contains__, names), dtype=bool,
                               count=len(names))
        except TypeError as e:
            raise Fallback("an unhashable obs") from e
        at = np.flatnonzero(mask)
        filled = np.zeros(0, dtype=np.intp)
        if len(at):
            code, distinct = self._codes(batch, rows[at], names[at])
            num, ok = floats(values[at])
            fills, fill, new_hist = self._history(code, distinct, num, ok)
            filled = at[fills]
            if len(filled):
                values = values.astype(object)
                values[filled] = fill.astype(object)
            task.history.update(new_hist)  # commit: the only write to the task
        return self._outputs(batch, rows, values, filled, per_row)

    def _codes(self, batch: Batch, rows: np.ndarray, names: np.ndarray,
               ) -> tuple[np.ndarray, list[str]]:
        """Dense codes (first seen, first) of each observation's ``group_key`` and the keys.

        Grouped by ``obs`` alone (the workload's keying), the key is the field's name, so
        its code comes from the config's fields in one ``map``; otherwise the key strings are
        made (``"|".join`` of the row's parts and the name) and grouped with a dict."""
        if self.by_obs and set(map(type, names)) <= {str}:
            raw = np.fromiter(map(self.field_code.__getitem__, names), dtype=np.intp,
                              count=len(names))
            uniq, first = np.unique(raw, return_index=True)
            uniq = uniq[np.argsort(first)]
            remap = np.empty(len(self.field_code), dtype=np.intp)
            remap[uniq] = np.arange(len(uniq))
            return remap[raw], [self.field_list[u] for u in uniq.tolist()]
        group_by: list[str] = self.task.group_by  # type: ignore[attr-defined]
        parts: list[list[Any]] = []
        for g in group_by:
            if g == "obs":
                parts.append(names.tolist())
            else:
                col = np.asarray(list(map(str, get(batch, g, "").tolist())), dtype=object)
                parts.append(col[rows].tolist())
        try:
            keys = ["|".join(p) for p in zip(*parts, strict=True)] if parts else \
                [""] * len(rows)
        except TypeError as e:
            raise Fallback("an obs that is not a str") from e
        return codes(keys)

    def _history(self, code: np.ndarray, distinct: list[str], num: np.ndarray, ok: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray, dict[str, list[float]]]:
        """Which interpolated observations are filled, their fill values, and the new history
        of every key the batch touches."""
        task: Any = self.task
        window = task.window
        old = list(map(task.history.get, distinct, itertools.repeat(_NEW)))
        is_new = np.fromiter(map(operator.is_, old, itertools.repeat(_NEW)), dtype=bool,
                             count=len(old))
        h0 = np.fromiter(map(len, old), dtype=np.intp, count=len(old))
        appended = ok if window > 0 else np.zeros(len(ok), dtype=bool)
        order = np.argsort(code, kind="stable")
        cs = np.cumsum(appended[order])
        before = cs - appended[order]  # appended values of the batch before each, any key
        first = changes(code[order])
        group_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
        seen = np.empty(len(order), dtype=np.intp)
        seen[order] = before - before[group_start]  # ... of its own key
        added = np.bincount(code[appended], minlength=len(distinct))
        size = h0 + added
        off = np.cumsum(size) - size
        stream = np.empty(int(size.sum()))
        stored = int(h0.sum())
        if stored:  # each key's stored values first, in one scatter
            start = np.repeat(off - (np.cumsum(h0) - h0), h0)
            stream[start + np.arange(stored)] = np.fromiter(
                itertools.chain.from_iterable(old), dtype=np.float64, count=stored)
        end = off[code] + h0[code] + seen
        stream[end[appended]] = num[appended]
        if window > 0:
            length = np.where(seen == 0, h0[code], np.minimum(window, h0[code] + seen))
        else:
            length = h0[code]
        fills = ~ok & (length > 0)
        fill = np.zeros(0)
        if fills.any():
            ln, stop = length[fills], end[fills]
            idx = (stop - ln)[:, None] + np.arange(int(ln.max()))
            idx = np.minimum(idx, (stop - 1)[:, None])  # past a short window: masked anyway
            fill = sum_rows(stream[idx], ln) / ln.astype(np.float64)
        # a key with appended values keeps the last `window` of its stream; a new one, []
        keep = np.flatnonzero((added > 0) | is_new)
        stop = off[keep] + size[keep]
        tail = np.where(added[keep] > 0, np.minimum(window, size[keep]), 0)
        values = stream.tolist()
        new_hist = dict(zip([distinct[i] for i in keep.tolist()],
                            [values[a:b] for a, b in zip((stop - tail).tolist(), stop.tolist(),
                                                         strict=True)], strict=True))
        return fills, fill, new_hist

    def _outputs(self, batch: Batch, rows: np.ndarray, values: np.ndarray, filled: np.ndarray,
                 per_row: list[list[Any] | None] | None) -> Batch:
        """``derive(event, obs=..., value=...)`` (plus ``interpolated``) of a single row,
        ``derive(event, fields=...)`` of a joined one."""
        n = batch.n
        base = batch.select(ACCOUNTING)
        interpolated = None
        flagged = rows[filled] if per_row is None else \
            np.asarray([r for r in rows[filled].tolist() if per_row[r] is None], dtype=np.intp)
        if len(flagged):  # process flags a filled single observation, not a joined field
            interpolated = np.full(n, MISSING, dtype=object)
            interpolated[flagged] = True
        if per_row is None:
            cols = {"obs": get(batch, "obs"), "value": values}
        else:
            obs = get(batch, "obs")
            obs_col = np.full(n, MISSING, dtype=object)
            value_col = np.full(n, MISSING, dtype=object)
            fields_col = np.full(n, MISSING, dtype=object)
            vals = values.tolist()
            i = 0
            for r, names in enumerate(per_row):
                if names is None:
                    obs_col[r], value_col[r] = obs[r], vals[i]
                    i += 1
                else:
                    fields_col[r] = dict(zip(names, vals[i:i + len(names)], strict=True))
                    i += len(names)
            cols = {"obs": obs_col, "value": value_col, "fields": fields_col}
        if interpolated is not None:
            cols["interpolated"] = interpolated
        return base.with_columns(**cols)


class JoinKernel(Vectorized):
    """Join a batch at a time: every message's observations at once.

    Rows of a wanted field are keyed ``src|seq`` and grouped by key (a stable sort keeps each
    key's rows in order). What ``process`` does with a row depends on its key's open message
    only: how many distinct wanted fields it has (a field is new where its (key, field) pair
    first occurs) and how many rows; a message closes at the first row where it has them all
    or ``max_count`` rows, and the key's next row opens a new one. When no message closes
    before its key's last row in the batch (the streams' case), cumulative sums over the
    sorted rows give every row's counts at once; otherwise (a ``seq`` repeated after its
    message closed) a loop over positions takes the ``j``-th row of every key at once,
    with the open messages' fields as a key x field bool matrix. The messages' ``fields``
    dicts are then built once each from their rows (``dict(zip(...))``: first position, last
    value, as repeated assignment leaves them) and the emitted ones taken in the order they
    closed.

    Where it is per row, and why: ``max_pending`` evicts the oldest open message over all
    keys whenever more are open, so from the first row that would exceed it, what a row does
    depends on a queue over every key, and the rest of the batch runs through ``process``
    (the per-event code is that loop). The number of open messages after every row is known
    before any state is written, so the rows before it are still computed together.
    RIoTBench's streams complete every message, so the bound is not reached there. The keys
    are strings, made per run of equal ``(src, seq)`` when ``src`` is one str and ``seq`` an
    int column (equal values then make equal keys), else per row; a batch with more than
    ``_MAX_STEPS`` rows of one repeated key runs per event (a numpy step per row would cost
    more than the loop).
    """

    type_name = "Join"
    _MAX_STEPS = 64

    def compute(self, batch: Batch) -> Batch:
        task: Any = self.task
        wanted = {f: j for j, f in enumerate(task._wanted)}
        names = get(batch, "obs")
        try:
            fj = np.fromiter(map(wanted.get, names.tolist(), itertools.repeat(-1)),
                             dtype=np.intp, count=batch.n)
        except TypeError as e:
            raise Fallback("an unhashable obs") from e
        rows = np.flatnonzero(fj >= 0)
        if not len(rows):
            return Batch.empty()
        plan = _JoinPlan(task, *self._codes(batch, rows), fj[rows], wanted)
        over = np.flatnonzero(plan.level > task.max_pending)
        if not len(over):
            return self._commit(batch, rows, names, plan)
        cut = int(rows[over[0]])  # the first row that evicts: from it on, per event
        head = self.compute(batch.take(np.arange(cut))) if cut else Batch.empty()
        tail = PerEvent(task).run(batch.take(np.arange(cut, batch.n)))
        return Batch.concat([head, tail])

    @staticmethod
    def _codes(batch: Batch, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """Dense codes of each row's ``f"{src}|{seq}"`` and the keys (:func:`codes`)."""
        src, seq = get(batch, "src")[rows], get(batch, "seq")[rows]
        if seq.dtype == np.int64 and type(src[0]) is str and bool((src == src[0]).all()):
            starts = np.flatnonzero(changes(seq))
            lead = src[0]
            code, distinct = codes([f"{lead}|{q}" for q in seq[starts].tolist()])
            return np.repeat(code, np.diff(np.append(starts, len(seq)))), distinct
        return codes([f"{a}|{b}" for a, b in zip(src.tolist(), seq.tolist(), strict=True)])

    def _commit(self, batch: Batch, rows: np.ndarray, names: np.ndarray,
                plan: _JoinPlan) -> Batch:
        """Build the messages from their rows, write the task's open messages, and return
        the emitted ones in the order they closed."""
        task: Any = self.task
        at = rows[plan.order]  # the batch row of each sorted position
        opens, closes = plan.opens[plan.order], plan.closes[plan.order]
        key = plan.code[plan.order]
        start = np.flatnonzero(opens | changes(key))
        end = np.append(start[1:], len(at))
        fields = _messages(names[at], get(batch, "value")[at], start, end)
        new, done = opens[start], closes[end - 1]
        head, last, size, run_key = at[start], at[end - 1], end - start, key[start]
        for i in np.flatnonzero(~new).tolist():  # the rest of a message the task holds open
            msg = plan.old[run_key[i]]
            msg["fields"].update(fields[i])
            msg["count"] += int(size[i])
            fields[i] = msg["fields"]
            if done[i]:
                del task.pending[plan.distinct[run_key[i]]]
        still = np.flatnonzero(new & ~done)
        still = still[np.argsort(head[still], kind="stable")]
        heads = events_at(batch.select(ACCOUNTING), head[still])
        for h, i in zip(heads, still.tolist(), strict=True):
            task.pending[plan.distinct[run_key[i]]] = {"head": h, "fields": fields[i],
                                                      "count": int(size[i])}
        mine = np.flatnonzero(new & done)
        mine = mine[np.argsort(last[mine], kind="stable")]
        out = batch.select(ACCOUNTING).take(head[mine]).with_columns(
            fields=object_column([fields[i] for i in mine.tolist()]))
        held = np.flatnonzero(~new & done)  # closed messages the task held: few, per row
        if not len(held):
            return out
        held = held[np.argsort(last[held], kind="stable")]
        made = [derive(plan.old[run_key[i]]["head"], fields=fields[i]) for i in held.tolist()]
        return merge_rows([(last[mine], out), (last[held], Batch.from_events(made))])


def _messages(names: np.ndarray, values: np.ndarray, start: np.ndarray,
              end: np.ndarray) -> list[dict[Any, Any]]:
    """The ``fields`` dict of each run ``[start, end)`` of (name, value) rows, as repeated
    ``fields[name] = value`` leaves it: ``dict(zip(...))``. When every run has the same names
    in the same order (every message of a stream, in its schema order), the values are one
    matrix and the dicts are made by one ``map``."""
    width = int(end[0] - start[0]) if len(start) else 0
    if width and bool((end - start == width).all()):
        grid = names.reshape(-1, width)
        if bool((grid == grid[0]).all()):
            return list(map(dict, map(zip, itertools.repeat(grid[0].tolist()),
                                      values.reshape(-1, width).tolist())))
    sn, sv = names.tolist(), values.tolist()
    return [dict(zip(sn[a:b], sv[a:b], strict=True))
            for a, b in zip(start.tolist(), end.tolist(), strict=True)]


class _JoinPlan:
    """What ``process`` would do with each wanted row of a batch, without eviction:
    whether it opens a message (``opens``), closes one (``closes``), and how many messages
    are open after it (``level``); rows grouped by key code (``order``, stable)."""

    def __init__(self, task: Any, code: np.ndarray, distinct: list[str], fj: np.ndarray,
                 index: dict[Any, int]) -> None:
        self.code, self.distinct = code, distinct
        self.old = list(map(task.pending.get, distinct))
        n_keys, width = len(distinct), len(index)
        has = np.zeros((n_keys, width), dtype=bool)
        is_open = np.fromiter(map(operator.is_not, self.old, itertools.repeat(None)),
                              dtype=bool, count=n_keys)
        nfields = np.zeros(n_keys, dtype=np.intp)
        count = np.zeros(n_keys, dtype=np.intp)
        for c in np.flatnonzero(is_open).tolist():  # the messages the task holds open
            msg = self.old[c]
            nfields[c], count[c] = len(msg["fields"]), msg["count"]
            for f in msg["fields"]:
                if f in index:
                    has[c, index[f]] = True
        self.order = order = np.argsort(self.code, kind="stable")
        sc, sf = self.code[order], fj[order]
        first = changes(sc)
        group = np.maximum.accumulate(np.where(first, np.arange(len(sc)), 0))
        rank = np.arange(len(sc)) - group
        # one message per key (none closes before its key's last row): cumulative sums
        pair = sc * width + sf
        _, once = np.unique(pair, return_index=True)
        fresh = np.zeros(len(sc), dtype=bool)
        fresh[once] = True
        fresh &= ~has[sc, sf]
        cum = np.cumsum(fresh)
        seen = nfields[sc] + cum - (cum[group] - fresh[group])
        done = (seen == width) | (count[sc] + rank + 1 >= task.max_count)
        last = np.append(first[1:], True)
        opens, closes = np.zeros(len(sc), bool), np.zeros(len(sc), bool)
        if not (done & ~last).any():
            opens[order] = first & ~is_open[sc]
            closes[order] = done
        else:
            self._steps(task, sc, sf, rank, order, has, is_open, nfields, count, opens, closes)
        self.opens, self.closes = opens, closes
        self.level = len(task.pending) + np.cumsum(opens.astype(np.intp) - closes)

    def _steps(self, task: Any, sc: np.ndarray, sf: np.ndarray, rank: np.ndarray,
               order: np.ndarray, has: np.ndarray, is_open: np.ndarray, nfields: np.ndarray,
               count: np.ndarray, opens: np.ndarray, closes: np.ndarray) -> None:
        """The general case, one position at a time: step ``j`` moves the ``j``-th row of
        every key (distinct keys, so the fancy-indexed updates do not collide)."""
        if rank.max() >= JoinKernel._MAX_STEPS:
            raise Fallback("a key with too many rows in one batch")
        width = has.shape[1]
        by_rank = np.argsort(rank, kind="stable")
        bounds = np.searchsorted(rank[by_rank], np.arange(rank.max() + 2))
        for j in range(rank.max() + 1):
            pos = by_rank[bounds[j]:bounds[j + 1]]
            k, f, at = sc[pos], sf[pos], order[pos]
            new = ~is_open[k]
            opens[at] = new
            has[k[new]] = False
            nfields[k[new]] = 0
            count[k[new]] = 0
            is_open[k] = True
            nfields[k] += ~has[k, f]
            has[k, f] = True
            count[k] += 1
            done = (nfields[k] == width) | (count[k] >= task.max_count)
            closes[at] = done
            is_open[k[done]] = False
