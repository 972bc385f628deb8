"""The runtime's side of backpressure and retention: read the consumers' files, trim the topics.

The readers (:class:`~reuse.runtime.dataplane.sources.BusDataSource`, one per partial-DAG query) write two small
files per query under the run directory, atomically:

- ``lag/<query>.json``: the lag and throttle state of its latest admission decision
  (:meth:`~reuse.runtime.dataplane.flow_control.Admission.report`);
- ``committed/<query>.json``: the offsets Spark last committed for it (Spark commits a batch's
  end offsets to the source when it plans the next batch, after writing that batch's offset
  log: from then on it will only ask for later offsets, even after a restart).

:class:`BusUpkeep` samples the first (so a run can report each step's largest lag) and, every
``retention_s`` seconds, truncates every topic behind its slowest live consumer
(:func:`~reuse.runtime.dataplane.flow_control.truncation_points`). Both run in the driver, from
``Runtime.poll``, in the same thread that launches queries, so a consumer being launched is
registered (with its start offsets) before retention can next run.

What grows on disk and what is bounded (per partial-DAG query unless said otherwise):

- bus topics: bounded by retention, to what the slowest live consumer has not committed plus
  ``retention_s`` of messages (a slow consumer's backlog is kept: nothing is dropped);
- Spark's checkpoint (``ckpt/<query>/spark``): offset and commit logs pruned by Spark to
  ``spark.sql.streaming.minBatchesToRetain`` (20, :mod:`reuse.runtime.session`);
- task states (``ckpt/<query>/tstate``): the last 10 batches (``BatchStates``);
- ``lag/``, ``committed/``: one file per live query (removed when it stops);
- ``control/``, ``specs/``, ``final/``: one file per query ever launched (one per submit or
  hand-over, so they grow with the trace, not with time); ``final/`` is read by a successor and
  by ``poll``, so it stays;
- ``sinks/``: the outputs; they grow with the run, by design.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from reuse.runtime.common.files import read_json, safe_name
from reuse.runtime.dataplane.bus import Bus
from reuse.runtime.dataplane.flow_control import Consumer, truncation_points

__all__ = ["BusUpkeep", "disk_usage", "BOUNDED_PARTS"]

#: The parts of a run directory :func:`disk_usage` reports that retention and pruning bound.
BOUNDED_PARTS = ("topics", "ckpt", "runtime")
_RUNTIME_DIRS = {"control", "specs", "final", "lag", "committed"}


def disk_usage(root: str | os.PathLike[str]) -> dict[str, int]:
    """Bytes allocated on disk (as ``du`` counts) under a run directory, by part.

    ``topics`` (the file bus), ``ckpt`` (Spark checkpoints and task states), ``runtime``
    (``control``, ``specs``, ``final``, ``lag``, ``committed``), ``sinks`` (the outputs) and
    ``other``; :data:`BOUNDED_PARTS` are the ones that must stay bounded over a run.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "topics").mkdir(), (d / "topics" / "x.frame").write_bytes(b"1" * 5000)
    >>> usage = disk_usage(d)
    >>> usage["topics"] >= 5000, usage["sinks"]
    (True, 0)
    >>> import shutil; shutil.rmtree(d)
    """
    out = dict.fromkeys(("topics", "ckpt", "runtime", "sinks", "other"), 0)
    base = Path(root)
    for dirpath, _, files in os.walk(base):
        rel = Path(dirpath).relative_to(base).parts
        part = rel[0] if rel else ""
        key = (part if part in ("topics", "ckpt", "sinks")
               else "runtime" if part in _RUNTIME_DIRS else "other")
        for f in files:
            try:
                st = os.stat(os.path.join(dirpath, f))
            except FileNotFoundError:
                continue
            out[key] += getattr(st, "st_blocks", 0) * 512 or st.st_size
    return out


class BusUpkeep:
    """Lag sampling and topic retention for one runtime.

    Parameters
    ----------
    bus
        The bus to truncate.
    root
        The run directory the readers write ``lag/`` and ``committed/`` under.
    retention_s
        Seconds between retention passes (``0`` or ``None``: never truncate).
    lag_every_s
        Seconds between lag samples (a reader's lag changes once per trigger).
    """

    def __init__(self, bus: Bus, root: str | os.PathLike[str], *,
                 retention_s: float | None = 10.0, lag_every_s: float = 1.0) -> None:
        self.bus = bus
        self.root = Path(root)
        self.retention_s = float(retention_s or 0.0)
        self.lag_every_s = float(lag_every_s)
        self.deleted = 0  # messages truncated so far
        self.passes = 0
        self.floors: dict[str, str] = {}  # topic -> last truncation point
        self._next_retain = time.time() + self.retention_s
        self._next_lag = 0.0
        self._peak = 0
        self._throttled: set[str] = set()

    def _file(self, kind: str, query: str) -> Path:
        return self.root / kind / f"{safe_name(query)}.json"

    def committed(self, query: str) -> dict[str, str] | None:
        """The offsets a query's reader last committed (``None``: never)."""
        got = read_json(self._file("committed", query), None)
        return dict(got) if got else None

    def lag(self, query: str) -> dict[str, Any] | None:
        """A query's latest lag report (``None``: none written yet)."""
        got = read_json(self._file("lag", query), None)
        return dict(got) if got else None

    # --- retention ---------------------------------------------------------------------------

    def consumer(self, query: str, topics: Iterable[str], start: Mapping[str, str]) -> Consumer:
        return Consumer(query, tuple(topics), dict(start), self.committed(query))

    def retain(self, consumers: Iterable[Consumer], topics: Iterable[str]) -> int:
        """Truncate ``topics`` behind ``consumers`` (every live one); messages deleted."""
        names = sorted(set(topics))
        floors = truncation_points(list(consumers), self.bus.offsets(names))
        gone = 0
        for topic, floor in floors.items():
            if floor > self.floors.get(topic, ""):
                gone += self.bus.truncate(topic, floor)
                self.floors[topic] = floor
        self.deleted += gone
        self.passes += 1
        return gone

    def forget(self, query: str) -> None:
        """Drop a stopped query's lag and committed files (it needs nothing any more)."""
        for kind in ("lag", "committed"):
            try:
                os.remove(self._file(kind, query))
            except FileNotFoundError:
                pass

    # --- lag -----------------------------------------------------------------------------------

    def sample(self, queries: Iterable[str]) -> None:
        """Read the live queries' lag reports; keep the peak until :meth:`take`."""
        for q in queries:
            rep = self.lag(q)
            if rep is None:
                continue
            self._peak = max(self._peak, int(rep.get("lag", 0)))
            if rep.get("throttled"):
                self._throttled.add(q)

    def take(self) -> tuple[int, int]:
        """``(largest lag in events, queries throttled)`` seen since the last call; resets."""
        out = (self._peak, len(self._throttled))
        self._peak, self._throttled = 0, set()
        return out

    def tick(self, queries: Callable[[], Iterable[str]],
             consumers: Callable[[], Iterable[Consumer]],
             topics: Callable[[], Iterable[str]]) -> None:
        """Called from ``poll`` (every quarter second): sample the live ``queries``' lag and
        truncate ``topics`` behind ``consumers`` when each is due; nothing is read otherwise."""
        now = time.time()
        if now >= self._next_lag:
            self.sample(queries())
            self._next_lag = now + self.lag_every_s
        if self.retention_s > 0 and now >= self._next_retain:
            self.retain(consumers(), topics())
            self._next_retain = now + self.retention_s

    def stats(self) -> dict[str, Any]:
        return {"retention_s": self.retention_s, "passes": self.passes, "deleted": self.deleted}
