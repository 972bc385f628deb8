"""A sensor feed of a notebook's own: a Mosquitto on a free port and a publisher replaying a
workload's streams into it (what ``reuse broker start`` and ``reuse publish`` do from a shell).

The tour (``notebooks/explore.ipynb``) and the live tests use it so that nothing outside the
notebook has to be started, and :meth:`LocalFeed.stop` stops both (the broker by its PID).
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["LocalFeed"]


class LocalFeed:
    """Start a broker and publish ``workload``'s source streams at ``rate`` messages/s each.

    Parameters
    ----------
    workload
        Whose streams (``riot``: SYS, TAXI, FIT, ...).
    rate
        Messages/s per stream.
    streams
        Only these streams (``None``: all of the workload's).
    folder
        The broker's folder (PID, config, log); default a new temporary one.
    """

    def __init__(self, workload: str = "riot", *, rate: float = 10.0,
                 streams: Sequence[str] | None = None, folder: str | Path | None = None) -> None:
        from reuse.runtime.dataplane import mosquitto
        from reuse.runtime.dataplane.publish import Publisher, select_streams, workload_streams
        from reuse.runtime.dataplane.redis_bus import free_port

        self.folder = Path(folder) if folder is not None else Path(
            tempfile.mkdtemp(prefix="reuse-broker-"))
        self.url = str(mosquitto.start(self.folder, port=free_port())["url"])
        try:
            chosen = select_streams(workload_streams(workload), streams)
            self.publisher = Publisher(self.url, chosen, rate=rate).connect()
        except BaseException:
            mosquitto.stop(self.folder)
            raise
        self._thread = threading.Thread(target=self.publisher.run, name="reuse-feed",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> Any:
        """Stop publishing and the broker; the publisher's report."""
        from reuse.runtime.dataplane import mosquitto

        self.publisher.halt()
        self._thread.join(timeout=10)
        try:
            return self.publisher.close()
        finally:
            if mosquitto.pid(self.folder) is not None:
                mosquitto.stop(self.folder)

    def __enter__(self) -> LocalFeed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
