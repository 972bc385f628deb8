"""The ``reuse`` command line: thin modules that parse arguments and make one library call.

- :mod:`reuse.cli.main`: the ``reuse`` parser, the core's subcommands (``validate``, ``plan``,
  ``submit``, ``remove``, ``status``) and the mapping of errors to one line and an exit status;
- :mod:`reuse.cli.common`: the ``--dags``/``--trace`` input every replaying command shares;
- :mod:`reuse.cli.workloads` (``dags``, ``trace``), :mod:`reuse.cli.billing` (``bill``),
  :mod:`reuse.cli.blast` (``blast``), :mod:`reuse.cli.runtime` (``run``, ``cluster``),
  :mod:`reuse.cli.broker` (``broker``, ``publish``),
  :mod:`reuse.cli.placement` (``place``).

The CLI is the top layer: it imports every other layer and nothing imports it.
"""

from reuse.cli.main import build_parser, main

__all__ = ["main", "build_parser"]
