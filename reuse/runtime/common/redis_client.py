"""One way to open a Redis client for the run's own servers, patient or not (issue 34).

A run's Redis is restarted when it dies (the broker-fed run's bus by its
:class:`~reuse.runtime.dataplane.keeper.Keeper`, the apps run's control plane by its coordinator
or by ``reuse run --resume``), on the same port, folder and password, from its append-only
file. A client that should ride through such a restart is *patient*: a call whose connection is
refused or broken is tried again every :data:`RETRY_S` for ``patience_s``. Retrying is safe for
this project's calls: every write is idempotent (a bus publish per key, an output per
``(seq, digest)``, a proposal per key, a heartbeat, a sync's horizon only grows) and the rest
are reads. Without patience a call fails at once (a caller waiting for a server to come up
polls instead).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["RETRY_S", "redis_client", "shown_url"]

#: Seconds between a patient client's tries.
RETRY_S = 0.25


def redis_client(url: str, *, patience_s: float = 0.0, timeout_s: float | None = None) -> Any:
    """A ``redis.Redis`` client for ``url``; with ``patience_s > 0`` it retries a refused or
    broken connection for that long (see the module docstring); with ``timeout_s`` a connect
    or a reply that takes longer fails (none: wait as long as it takes)."""
    import redis

    opts: dict[str, Any] = {}
    if timeout_s is not None:
        opts.update(socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
    if patience_s > 0:
        from redis.backoff import ConstantBackoff
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
        from redis.retry import Retry

        tries = max(1, math.ceil(patience_s / RETRY_S))
        opts.update(retry=Retry(ConstantBackoff(RETRY_S), tries),
                    retry_on_error=[RedisConnectionError, RedisTimeoutError, ConnectionError])
    return redis.Redis.from_url(url, **opts)


def shown_url(url: str) -> str:
    """A Redis URL fit for a file anyone may read: its password masked.

    >>> shown_url("redis://:s3cret@127.0.0.1:6379/0"), shown_url("redis://127.0.0.1:6379/0")
    ('redis://:***@127.0.0.1:6379/0', 'redis://127.0.0.1:6379/0')
    """
    import re

    return re.sub(r"//([^/@]*):[^/@]*@", r"//\1:***@", url)
