"""Task states saved after each batch beside a query's checkpoint, for both engines.

A batch re-run after a crash or restart starts from the state saved after the batch before it
and the same input offsets, so it recomputes the same outputs (see
:mod:`reuse.runtime.engines.partial.dag` and :mod:`reuse.runtime.engines.shared.engine`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from reuse.runtime.common.files import read_json, write_json

__all__ = ["BatchStates"]


class BatchStates:
    """Task states saved after each batch beside a query's checkpoint (``<batch>.json``).

    A batch re-run after a restart starts from the state saved after the batch before it;
    the latest state is kept in memory for the common case of consecutive batches, and only
    the last ``keep`` files are kept on disk (whatever the batch ids: older ones, from before a
    gap, are removed too), so the folder stays bounded like Spark's own offset log.
    """

    def __init__(self, state_dir: str | os.PathLike[str], keep: int = 10) -> None:
        self.dir = Path(state_dir)
        self.keep = keep
        self.last: tuple[int, dict[str, Any]] | None = None

    def before(self, batch_id: int) -> dict[str, Any] | None:
        """The state saved after the latest batch before ``batch_id`` (``None``: none)."""
        if self.last is not None and self.last[0] == batch_id - 1:
            return self.last[1]
        best = -1
        if self.dir.is_dir():
            for n in os.listdir(self.dir):
                if n.endswith(".json") and not n.startswith("."):
                    b = int(n[:-5])
                    if best < b < batch_id:
                        best = b
        return dict(read_json(self.dir / f"{best:09d}.json")) if best >= 0 else None

    def latest(self) -> dict[str, Any] | None:
        """The state saved after the newest batch (``None``: none yet): in memory, else on
        disk. A handler made again for a restarted query knows what the query had processed
        before its first batch, which never comes if its input had all been read."""
        if self.last is not None:
            return self.last[1]
        return self.before(sys.maxsize)

    def save(self, batch_id: int, state: dict[str, Any]) -> None:
        write_json(self.dir / f"{batch_id:09d}.json", state)
        self.last = (batch_id, state)
        if batch_id < self.keep:
            return
        for n in os.listdir(self.dir):
            if (n.endswith(".json") and not n.startswith(".")
                    and int(n[:-5]) <= batch_id - self.keep):
                try:
                    os.remove(self.dir / n)
                except FileNotFoundError:
                    pass
