"""Durable manager state: a snapshot written atomically plus an append-only journal.

Layout of a state directory::

    snapshot.json   the whole state (Manager.to_state) and the journal sequence it covers
    journal.jsonl   one JSON line per operation after the snapshot, each fsynced before the
                    operation changes the in-memory state

On open, the snapshot is loaded and the journal replayed. A crash while a line is being written
leaves a torn last line, which is dropped: the state is the last operation that was completely
recorded. A torn line anywhere else means the file was damaged, and opening fails with a one-line
:class:`~reuse.core.errors.StateError` rather than guessing. ``checkpoint`` folds the journal into a
new snapshot (temporary file, fsync, rename), so the journal stays short.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from reuse.core.errors import ReuseError, StateError
from reuse.core.jsondata import loads
from reuse.core.manager import Manager

__all__ = ["StateStore", "read_journal", "append_journal"]


class StateStore:
    """Opens, journals and checkpoints one manager's state in ``directory``.

    Examples
    --------
    >>> import tempfile
    >>> from reuse.core.dataflow import parse_dataflow
    >>> d = tempfile.mkdtemp()
    >>> m = StateStore(d).open()
    >>> _ = m.submit(parse_dataflow({"id": "A", "tasks": [
    ...     {"id": "s", "type": "SYS", "config": "source"},
    ...     {"id": "k", "type": "Sink", "config": "sink"}], "streams": [["s", "k"]]}))
    >>> StateStore(d).open().task_count   # a fresh process sees the same state
    2
    """

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.snapshot = self.dir / "snapshot.json"
        self.journal = self.dir / "journal.jsonl"
        self._seq = 0

    def open(self) -> Manager:
        """Load the snapshot, replay the journal, and return a manager that journals here."""
        self.dir.mkdir(parents=True, exist_ok=True)
        seq = 0
        manager = Manager()
        if self.snapshot.exists():
            try:
                data = loads(self.snapshot.read_bytes())
                manager = Manager.from_state(data["state"])
                seq = int(data["seq"])
            except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
                raise StateError(f"snapshot is unreadable ({type(exc).__name__}: "
                                 f"{str(exc)[:120]})",
                                 file=str(self.snapshot)) from None
            except ReuseError as exc:
                raise StateError(f"snapshot is unreadable ({exc})",
                                 file=str(self.snapshot)) from None
        records, torn = self._journal_records()
        if torn:  # drop the torn tail now, or the next append would bury it mid-file
            _atomic_write(self.journal, "".join(json.dumps(r, separators=(",", ":")) + "\n"
                                                for _, r in records))
        for n, record in records:
            if n <= seq:
                continue  # already in the snapshot (a crash between snapshot and truncation)
            try:
                manager.apply(record)
            except ReuseError as exc:
                raise StateError(f"journal entry {n} cannot be replayed: {exc}",
                                 file=str(self.journal)) from None
            except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a field missing
                raise StateError(f"journal entry {n} is not an operation ({type(exc).__name__}: "
                                 f"{str(exc)[:120]})", file=str(self.journal)) from None
            seq = n
        self._seq = seq
        manager._journal = self._append
        return manager

    def checkpoint(self, manager: Manager) -> None:
        """Write the whole state as the new snapshot and empty the journal."""
        _atomic_write(self.snapshot, json.dumps({"seq": self._seq, "state": manager.to_state()}))
        _atomic_write(self.journal, "")

    def _journal_records(self) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
        records, torn = read_journal(self.journal, key="seq")
        return [(int(r["seq"]), r) for r in records], torn

    def _append(self, record: dict[str, Any]) -> None:
        append_journal(self.journal, {"seq": self._seq + 1, **record})
        self._seq += 1


def read_journal(path: Path, key: str | None = None) -> tuple[list[dict[str, Any]], bool]:
    """The records of a JSON-lines journal and whether its last line was torn (a crash while
    it was written: that record never took effect, so it is left out). A damaged line
    anywhere else, or a record without ``key``, is a one-line :class:`StateError`."""
    if not path.exists():
        return [], False
    lines = path.read_bytes().split(b"\n")
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:  # loads: not UTF-8, not JSON, too deep, NaN... are each a JsonError (ValueError)
            record = loads(line)
            if not isinstance(record, dict) or (key is not None and key not in record):
                raise ValueError("not a record")
            if key is not None:
                int(record[key])
            out.append(record)
        except (ValueError, KeyError, TypeError, OverflowError):
            if i == len(lines) - 1:  # torn final write: the operation never happened
                return out, True
            raise StateError(f"line {i + 1} is damaged", file=str(path)) from None
    return out, False


def append_journal(path: Path, record: dict[str, Any]) -> None:
    """Append one record as a JSON line and fsync it before returning (write-ahead)."""
    line = json.dumps(record, separators=(",", ":")) + "\n"
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise StateError(f"cannot write journal ({exc.strerror}); nothing was changed",
                         file=str(path)) from None


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
