"""Holding a replay's sources at a cut: the one definition both engines use.

A script that enacts operations at chosen points (a test, a benchmark's scenario) races the
wall clock: the replay emits ``seq`` by its nominal time, and an operation slowed by a loaded
machine (starting a query can take seconds) may find its point already emitted, or the whole
replay consumed. A hold keeps every source from emitting ``seq`` and past it until the next
call; the sources then catch up at once. It is a file the replay reads at each trigger
(``reusereplay``'s and ``reusetick``'s ``hold`` option, :func:`~reuse.runtime.common.execution.
held_offset`); it only ever holds back, so the engine's bound stays an upper bound of what any
task has seen.
"""

from __future__ import annotations

from pathlib import Path

from reuse.runtime.common.files import write_text

__all__ = ["SourceHold"]


class SourceHold:
    """The hold file under a run's root, and the bound it implies."""

    def __init__(self, root: Path) -> None:
        self.file = root / "hold"
        self.held: int | None = None
        self.held_from = -1
        self.file.unlink(missing_ok=True)

    def bound(self, nominal: int) -> int:
        """The largest ``seq`` emitted so far, ``nominal`` by the clock, below a hold."""
        if self.held is None:
            return nominal
        return max(min(nominal, self.held - 1), self.held_from)

    def set(self, seq: int | None, nominal: int) -> None:
        """Hold at ``seq`` (``None``: release). What may have been emitted before the file
        changes (``bound(nominal)`` now) stays in the bound: a hold below it holds from there."""
        self.held_from = self.bound(nominal)
        if seq is None:
            self.file.unlink(missing_ok=True)
        else:
            write_text(self.file, str(seq))
        self.held = seq
