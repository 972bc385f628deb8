"""The cyclic garbage collector held back while kernels run a batch (issue 35).

A batch's kernels allocate hundreds of thousands of containers (each parsed message's dicts and
lists, a column's objects) and free nearly all of them by reference counting: they are not
parts of cycles. CPython's cyclic collector still runs whenever 700 more containers have been
allocated than freed, walks every young container each time, and every tenth time the older
ones too, so a batch pays for walks that find nothing. On the RIoT SEQ peak's columnar floor
(1,000 ``seq`` a batch) that was about a fifth of the CPU: ``benchmarks/gc_hold.py`` measures
the floor with and without the hold, interleaved (``docs/bench/gc_hold.json``, BENCHMARKS.md).
Turning the collector off instead saved no more in a profile, and would leave a cycle made in
a batch uncollected until something turned it on.

:func:`held_gc` raises the first generation's threshold for the length of a ``with`` block
and puts back what it found, so a cycle made while it holds is collected by the first
collection after it. Both columnar interpreters hold it around a batch: the engine's
(:func:`reuse.runtime.common.window.run_window`) and the columnar floor's
(:mod:`reuse.runtime.floor`), so the engine is still judged against a floor that runs the same
way. The per-event paths are left as they were measured.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["HELD_THRESHOLD", "held_gc"]

#: the first generation's threshold while a batch runs (CPython's default: 700)
HELD_THRESHOLD = 100_000


@contextmanager
def held_gc(threshold: int = HELD_THRESHOLD) -> Iterator[None]:
    """Raise the collector's first threshold to at least ``threshold`` inside the block.

    >>> import gc
    >>> before = gc.get_threshold()
    >>> with held_gc(50_000):
    ...     gc.get_threshold()[0] >= 50_000
    True
    >>> gc.get_threshold() == before
    True
    """
    found = gc.get_threshold()
    gc.set_threshold(max(found[0], threshold), *found[1:])
    try:
        yield
    finally:
        gc.set_threshold(*found)
