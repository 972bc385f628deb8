"""A benchmark run in a child process of its own (so its own JVM): start it, echo its output,
and take its result from the one line it prints as ``RESULT <json>``.

One definition for every script that interleaves runs in fresh processes
(``runtime_seq_peak.py``, ``runtime_rates.py``, ``decide.py``); each decides what a failed
run means for it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["run_child"]

PREFIX = "RESULT "


def run_child(argv: Sequence[str], *, cwd: str | Path | None = None) -> tuple[int, Any]:
    """Run ``argv``, echo every line but the result line, and return ``(exit code, result)``
    (``None`` when no result line came)."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, text=True, cwd=cwd)
    result = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(PREFIX):
            result = json.loads(line[len(PREFIX):])
        else:
            print(line, end="", flush=True)
    return proc.wait(), result
