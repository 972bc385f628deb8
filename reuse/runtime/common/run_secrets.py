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

__all__ = ["run_secret", "keep_secret"]


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
    folder = Path(root) / "secrets"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / name
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    value = _random.token_urlsafe(32)
    write_text(path, value, private=True)  # 0600 from its creation, atomically
    return value


def keep_secret(root: str | os.PathLike[str], name: str, value: str) -> Path:
    """Keep a secret the run was given (a broker's password) as ``<root>/secrets/<name>``,
    mode 0600, so a resumed run finds it without its journal holding it."""
    folder = Path(root) / "secrets"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_text(folder / name, value, private=True)
    return folder / name
