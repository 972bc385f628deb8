"""The run directory's files: file-safe topic names, atomic JSON, one batch's sink records.

Both engines, the bus readers and the accounting read and write the run directory through these,
so every file is written the same way: to a temporary name, then renamed, so a reader sees the
old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["safe_name", "read_json", "write_json", "write_records", "read_batches"]


def safe_name(topic: str) -> str:
    """A file-name-safe, injective spelling of a topic (task ids contain ``.`` and ``#``).

    Examples
    --------
    >>> safe_name("etl-sys.parse#2")
    'etl-sys.parse_232'
    """
    out = []
    for ch in topic:
        if ch.isalnum() or ch in "-.":
            out.append(ch)
        else:
            out.append(f"_{ord(ch):x}")
    return "".join(out)


def read_json(path: str | os.PathLike[str], default: Any = None) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a JSON-lines log the run appends to (batches, rows, restarts, the
    journal): a line torn by a killed writer (or being written) is left out, and so is a blank
    one; no file, no records. One reader for every such log, so none of them fails on a torn
    line that another skips.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "log.jsonl").write_text('{"a": 0}\\n\\n{"a"')
    >>> read_jsonl(d / "log.jsonl"), read_jsonl(d / "none.jsonl")
    ([{'a': 0}], [])
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def read_batches(root: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The shared query's batch log (``<root>/batches.jsonl``), one record per batch done
    (:func:`read_jsonl`).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "batches.jsonl").write_text('{"batch": 0}\\n{"bat')
    >>> read_batches(d), read_batches(d / "none")
    ([{'batch': 0}], [])
    """
    return read_jsonl(Path(root) / "batches.jsonl")


def write_text(path: str | os.PathLike[str], text: str, *, private: bool = False) -> None:
    """Atomic text write (temporary file + rename): readers see the old or the new file.
    ``private``: the file has mode 0600 from its creation, never readable by others (it holds
    a run's secret)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, p)


def write_json(path: str | os.PathLike[str], data: Any, *, private: bool = False) -> None:
    """Atomic JSON write (:func:`write_text`)."""
    write_text(path, json.dumps(data, separators=(",", ":")), private=private)


def write_records(sinks_dir: str | os.PathLike[str], task: str, key: str, text: str) -> None:
    """Write one batch's sink records of a task, atomically, under a name fixed by the batch
    (``<sinks_dir>/<task>/<key>.jsonl``): a re-run batch overwrites what it wrote before."""
    d = Path(sinks_dir) / safe_name(task)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{key}.{os.getpid()}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, d / f"{key}.jsonl")
