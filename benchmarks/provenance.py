"""What every raw benchmark file says about where it came from (issue 33, item 1).

A number in BENCHMARKS.md is only as good as the file behind it, and a file is only as good as
what it says about its run: the command line, the git commit (and whether the tree was dirty),
the machine (CPU model, cores, memory, Python, PySpark, Java) and the time. :func:`raw_file`
wraps a benchmark's results in that header and writes them under ``docs/bench/``.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["machine", "provenance", "raw_file"]


def _run(cmd: list[str]) -> str:
    try:
        got = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (got.stdout or got.stderr).strip()


def machine() -> dict[str, Any]:
    """The machine a run measured: CPU model and cores, memory, Python, PySpark and Java."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
                break
    except (OSError, ValueError):
        pass
    try:
        import pyspark

        spark_version = str(pyspark.__version__)
    except ImportError:
        spark_version = ""
    java = _run(["java", "-version"]).splitlines()
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": mem_gib,
            "python": platform.python_version(), "pyspark": spark_version,
            "java": java[0] if java else "", "os": platform.platform(),
            "load_avg_1m": round(os.getloadavg()[0], 2)}


def provenance(argv: list[str] | None = None) -> dict[str, Any]:
    """The header of a raw file: command, commit, a dirty-tree flag, machine and time."""
    args = sys.argv if argv is None else argv
    return {"command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *args]),
            "commit": _run(["git", "rev-parse", "HEAD"]),
            "dirty": bool(_run(["git", "status", "--porcelain", "--untracked-files=no"])),
            "machine": machine(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def raw_file(path: str | os.PathLike[str], results: Any, **extra: Any) -> Path:
    """Write ``{"provenance": ..., **extra, "results": results}`` as JSON to ``path``
    (atomically); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps({"provenance": provenance(), **extra, "results": results},
                              indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, p)
    return p
