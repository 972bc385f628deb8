"""Source replay: turn a RIoTBench SenML data file into a deterministic stream of source events.

The runtime paces the events (the paper used 10 events/s per source); this module only decides
what they are: ``{"src", "seq", "ts", "payload"}`` with ``seq`` counting from 0 and ``ts`` a
nominal emit time ``start_ms + seq * 1000 / rate`` that the runtime replaces by the real emit
time. ``payload`` is the line's SenML JSON; ``event_time`` keeps the data's own epoch ms.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from reuse.core.paths import riotbench_dir
from reuse.tasks.base import Event, TaskError

__all__ = ["SOURCE_FILES", "source_file", "read_lines", "replay"]

#: Data file of each source with data (GRID has parameters but no data upstream).
SOURCE_FILES = {
    "SYS": "SYS_sample_data_senml.csv",
    "TAXI": "TAXI_sample_data_senml.csv",
    "FIT": "FIT_sample_data_senml.csv",
}


def source_file(src: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Path of a source's SenML data file."""
    if src not in SOURCE_FILES:
        raise TaskError(f"unknown source '{src}' (known: {', '.join(sorted(SOURCE_FILES))})")
    return riotbench_dir(data_dir) / SOURCE_FILES[src]


def read_lines(path: str | os.PathLike[str]) -> list[str]:
    """The non-empty lines of a data file (the last line of the files has no newline)."""
    return [ln.strip() for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()]


def replay(
    src: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    start_ms: int = 0,
    rate: float = 10.0,
    limit: int | None = None,
    loop: bool = False,
) -> Iterator[Event]:
    """Yield the source's events in file order.

    Parameters
    ----------
    src
        ``SYS``, ``TAXI`` or ``FIT``.
    start_ms, rate
        Nominal emit time of event 0 and events per second, for ``ts``.
    limit
        Stop after this many events (``None``: end of file, or never when looping).
    loop
        Start over at the end of the file, with ``seq`` still increasing, so a long experiment
        can run on the short sample files.
    """
    lines = read_lines(source_file(src, data_dir))
    seq = 0
    while lines:
        for line in lines:
            if limit is not None and seq >= limit:
                return
            head, body = line.split(",", 1)
            yield {"src": src, "seq": seq, "ts": start_ms + round(seq * 1000 / rate),
                   "event_time": int(head), "payload": body}
            seq += 1
        if not loop:
            return
