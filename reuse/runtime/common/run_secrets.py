"""A run's secrets: generated per run, kept with mode 0600 under the run directory.

Why: a server a run starts (its Redis) may be reached by any local user, and on a cluster of
machines by any host that can route to it (issue 34, item 4). A password known only to the
run's own processes, in a file only its user can read, refuses every other client. A resumed
run reads the same file, so a server restarted for it takes the same password.
"""

from __future__ import annotations

import os
import secrets as _random  # the standard library's
from pathlib import Path

from reuse.runtime.common.files import write_text

__all__ = ["LOOPBACK", "beyond_loopback", "secret_file", "run_secret", "keep_secret"]

#: Addresses a server may listen on and stay reachable from this machine only
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def beyond_loopback(address: str) -> bool:
    """Whether a server listening on ``address`` can be reached from other machines, and so
    must refuse a client without its secret (Mosquitto, JupyterLab).

    >>> beyond_loopback("127.0.0.1"), beyond_loopback("0.0.0.0")
    (False, True)
    """
    return address not in LOOPBACK


def secret_file(root: str | os.PathLike[str], name: str) -> Path:
    """Where the secret ``name`` of ``root`` is kept: ``<root>/secrets/<name>``."""
    return Path(root) / "secrets" / name


def run_secret(root: str | os.PathLike[str], name: str) -> str:
    """The secret ``name`` of the run in ``root``: read from ``<root>/secrets/<name>``, or made
    there (32 random bytes, URL-safe) with mode 0600 in a folder of mode 0700.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> run_secret(d, "redis") == run_secret(d, "redis")
    True
    >>> oct((Path(d) / "secrets" / "redis").stat().st_mode & 0o777)
    '0o600'
    """
    try:
        return secret_file(root, name).read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    value = _random.token_urlsafe(32)
    keep_secret(root, name, value)
    return value


def keep_secret(root: str | os.PathLike[str], name: str, value: str) -> Path:
    """Keep a secret as ``<root>/secrets/<name>``: mode 0600 from its creation, atomically, in
    a folder of mode 0700 (a made one, or one the run was given: a broker's password, so a
    resumed run finds it without its journal holding it)."""
    path = secret_file(root, name)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_text(path, value, private=True)
    return path
