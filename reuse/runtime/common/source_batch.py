"""A source's events ``[start, start + n)`` as one columnar :class:`Batch` (issue 35).

:func:`~reuse.runtime.common.execution.source_event` makes one dict per event; a columnar
consumer would then spend a dict per event and a pass over them (``Batch.from_events``) only to
get columns back. :func:`source_batch` builds the columns directly: a data file is split into
its time column and its payload column once per process, and a range of ``seq`` picks rows of
them with one ``take`` (the replay loops over the file as ``source_event`` does). The result is
the same batch, column for column and dtype for dtype, as
``Batch.from_events([source_event(...) for seq in range(start, start + n)])``; the tests hold
the two to that.
"""

from __future__ import annotations

import numpy as np

from reuse.runtime.common.execution import source_lines
from reuse.tasks.columnar import Batch
from reuse.tasks.columnar.batch import object_column

__all__ = ["source_batch"]

#: (source type, data dir) -> the data file's ``event_time`` and ``payload`` columns
_COLUMNS: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}


def _file_columns(src_type: str, data_dir: str) -> tuple[np.ndarray, np.ndarray] | None:
    """A data file's lines as (``event_time``, ``payload``) columns, split once per process
    (``None``: a synthetic source)."""
    key = (src_type, data_dir)
    if key not in _COLUMNS:
        lines = source_lines(src_type, data_dir)
        if not lines:
            return None
        heads, bodies = zip(*(ln.split(",", 1) for ln in lines), strict=True)
        times = [int(h) for h in heads]
        try:
            time_col = np.array(times, dtype=np.int64)
        except OverflowError:  # as Batch.from_events types a column that does not fit
            time_col = object_column(times)
        _COLUMNS[key] = (time_col, object_column(list(bodies)))
    return _COLUMNS[key]


def source_batch(src: str, src_type: str, start: int, n: int, t0_ms: int, rate: float,
                 data_dir: str = "") -> Batch:
    """Source events ``seq`` in ``[start, start + n)`` of stream ``src`` as one batch: the
    columns of ``source_event(src, src_type, seq, t0_ms, rate, data_dir)`` over that range.

    Examples
    --------
    >>> b = source_batch("S1", "opmw-source", 3, 2, 1000, 10.0)
    >>> b.n, b.cols["ts"].tolist(), b.to_events()[1]
    (2, [1300, 1400], {'src': 'S1', 'seq': 4, 'ts': 1400, 'payload': 'S1:4'})
    """
    if n <= 0:
        return Batch.empty()
    seq = np.arange(start, start + n, dtype=np.int64)
    # round() of each float, as source_event: np.rint rounds half to even, as round does
    ts = t0_ms + np.rint(seq * 1000 / rate).astype(np.int64)
    cols = {"src": np.full(n, src, dtype=object), "seq": seq, "ts": ts}
    file_cols = _file_columns(src_type, data_dir)
    if file_cols is None:
        cols["payload"] = object_column([f"{src}:{s}" for s in range(start, start + n)])
    else:
        times, bodies = file_cols
        rows = seq % len(bodies)
        cols["event_time"] = times[rows]
        cols["payload"] = bodies[rows]
    return Batch(n, cols)
