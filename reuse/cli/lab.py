"""``reuse lab``: JupyterLab on this project, never without a token (issue 34, item 4).

Why a command of ours: ``jupyter lab`` makes a new random token at every start and prints it,
and anyone who edits a config can turn it off. A workbench told to listen beyond loopback (to be
used from another machine of a cluster) must refuse whoever lacks the secret, as its Redis and
Mosquitto do. So the token is the workbench's own secret, made once under ``--dir`` with mode
0600 (:func:`~reuse.runtime.common.run_secrets.run_secret`) and handed to the server as a
file (``JUPYTER_TOKEN_FILE``), never on the command line where ``ps`` shows it; and every
endpoint requires it (``allow_unauthenticated_access`` off), not only the ones marked so.

On 127.0.0.1 (the default) the same token is required: a local user other than you cannot
read it. The command replaces itself with the server (``exec``), so its PID is the server's.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from reuse.core.errors import ReuseError
from reuse.runtime.common.run_secrets import beyond_loopback, run_secret, secret_file

__all__ = ["DEFAULT_DIR", "lab_command", "add_parsers"]

DEFAULT_DIR = Path("results") / "lab"


def lab_command(listen: str, port: int, token_file: Path, root: Path, *,
                open_browser: bool, as_root: bool) -> tuple[list[str], dict[str, str]]:
    """The server's argv and the environment it adds: pure, so the choices are tested without
    a server.

    >>> argv, env = lab_command("0.0.0.0", 8888, Path("/d/secrets/jupyter"), Path("/p"),
    ...                         open_browser=False, as_root=False)
    >>> env
    {'JUPYTER_TOKEN_FILE': '/d/secrets/jupyter'}
    >>> "--ServerApp.allow_unauthenticated_access=False" in argv, "--no-browser" in argv
    (True, True)
    >>> any("token" in a.lower() for a in argv)  # the secret is never on the command line
    False
    """
    if not 0 < port < 65536:
        raise ReuseError(f"--port must be 1-65535, got {port}")
    argv = [sys.executable, "-m", "jupyterlab", f"--ServerApp.ip={listen}",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={root}", "--ServerApp.allow_unauthenticated_access=False"]
    if beyond_loopback(listen):
        # requests name this machine by an address other than loopback; the token guards them
        argv.append("--ServerApp.allow_remote_access=True")
    if not open_browser:
        argv.append("--no-browser")
    if as_root:
        argv.append("--allow-root")
    return argv, {"JUPYTER_TOKEN_FILE": str(token_file)}


def cmd_lab(args: argparse.Namespace) -> int:
    d = Path(args.dir).resolve()
    run_secret(d, "jupyter")  # made once, mode 0600; the server reads the file
    token_file = secret_file(d, "jupyter")
    argv, env = lab_command(args.listen, args.port, token_file, Path.cwd(),
                            open_browser=not args.no_browser and not beyond_loopback(args.listen),
                            as_root=hasattr(os, "geteuid") and os.geteuid() == 0)
    print(f"JupyterLab on {args.listen}:{args.port}; its token is in {token_file} "
          "(mode 0600): open the URL the server prints", file=sys.stderr, flush=True)
    os.execve(argv[0], argv, {**os.environ, **env})
    return 0  # not reached: the server replaced this process


def add_parsers(subparsers: Any) -> None:
    """Add ``lab`` to an ``argparse`` subparsers object (sets ``func``)."""
    p = subparsers.add_parser(
        "lab", help="JupyterLab on this project, always behind a token (its own, 0600)",
        description="Starts JupyterLab in the current folder. The token is made once under "
        "--dir (secrets/jupyter, mode 0600) and every endpoint requires it.")
    p.add_argument("--listen", default="127.0.0.1", metavar="ADDRESS",
                   help="the address to listen on (default: %(default)s, this machine only; "
                        "0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=8888, help="(default: %(default)s)")
    p.add_argument("--dir", default=str(DEFAULT_DIR),
                   help="folder of its secret (default: %(default)s)")
    p.add_argument("--no-browser", action="store_true",
                   help="do not open a browser (never opened when listening beyond loopback)")
    p.set_defaults(func=cmd_lab)
