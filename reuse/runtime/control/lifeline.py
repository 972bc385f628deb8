"""An instance's lifeline to its run's Redis: gone past patience, the process exits.

An instance across applications (:mod:`reuse.runtime.apps.instance`) rides through a restart of
its run's Redis: every control-plane call retries for ``patience_s``. If the Redis does not come
back (the coordinator that would have restarted it died too, and nobody resumed the run), the
instance has nothing left to follow, but a call stuck anywhere (a Spark batch's hook, a query
being stopped, a session start) could keep the process and its JVM up for good: once, two
such instances stayed up 50 minutes after their test had failed. The lifeline judges only the
one thing that matters, from its own thread with its own short-timeout client: has the Redis
answered a ``PING`` within ``patience_s``? If not, it prints one line and ends the process
with :data:`EXIT_CODE` (``os._exit``: no clean-up that could hang; PySpark's JVM exits when its
Python parent's pipe closes).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from reuse.runtime.common.redis_client import redis_client, shown_url

__all__ = ["EXIT_CODE", "Lifeline"]

#: The exit code of an instance whose run's Redis stayed gone past its patience.
EXIT_CODE = 3


class Lifeline(threading.Thread):
    """A daemon thread that pings ``url`` every ``every_s`` and ends the process when no ping
    has been answered for ``patience_s``; ``who`` names the process in the one-line error."""

    def __init__(self, url: str, patience_s: float, who: str, *, every_s: float = 1.0) -> None:
        super().__init__(name=f"lifeline-{who}", daemon=True)
        self.url, self.patience_s, self.who, self.every_s = url, patience_s, who, every_s

    def run(self) -> None:
        from redis.exceptions import RedisError

        # not patient: a ping that fails is what it counts; short timeouts, so a hung server
        # fails a ping too
        client = redis_client(self.url, timeout_s=max(1.0, min(5.0, self.every_s * 5)))
        last = time.monotonic()
        while True:
            try:
                client.ping()
                last = time.monotonic()
            except (RedisError, OSError):
                if time.monotonic() - last > self.patience_s:
                    self.exit()
            time.sleep(self.every_s)

    def exit(self) -> None:
        print(f"{self.who}: the run's Redis at {shown_url(self.url)} has not answered for "
              f"{self.patience_s:g} s: exiting", file=sys.stderr, flush=True)
        os._exit(EXIT_CODE)
