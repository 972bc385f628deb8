"""Where the project's data lives: the one resolver every module, script and test uses.

The inputs are third-party files that set-up copies or downloads into the repository's
git-ignored ``data/`` (``reuse.workloads.datasets``). A user can keep them elsewhere:
``$REUSE_DATA_DIR`` moves the whole folder (``opmw/`` and ``riotbench/`` under it), and
``$REUSE_RIOTBENCH_DIR`` (or an explicit ``data_dir``, as the engines pass to their workers)
moves the RIoTBench task resources alone. Nothing else guesses: a path that is not there is
reported by whoever opens it, naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "RIOTBENCH_ENV", "REPO", "data_dir", "riotbench_dir", "opmw_corpus_dir"]

DATA_ENV = "REUSE_DATA_DIR"
RIOTBENCH_ENV = "REUSE_RIOTBENCH_DIR"
#: the repository (a source checkout, or an editable install's)
REPO = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """The data folder: ``$REUSE_DATA_DIR``, else the repository's ``data/``."""
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else REPO / "data"


def riotbench_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The RIoTBench resources (sensor streams, task parameters, training sets): ``explicit``,
    else ``$REUSE_RIOTBENCH_DIR``, else ``riotbench/`` in :func:`data_dir`.

    Task configs name resource files by their base name only, so a config is portable and two
    users' identical tasks compare equal; the folder is resolved here.

    Examples
    --------
    >>> riotbench_dir("/elsewhere/riot").as_posix()
    '/elsewhere/riot'
    """
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get(RIOTBENCH_ENV)
    return Path(env) if env else data_dir() / "riotbench"


def opmw_corpus_dir() -> Path:
    """The OPMW/WINGS workflow templates (RDF): ``opmw/wings-corpus`` in :func:`data_dir`."""
    return data_dir() / "opmw" / "wings-corpus"
