"""Workloads: OPMW workflow templates and RIoTBench IoT dataflows, as dataflow dicts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["write_dags"]


def write_dags(dataflows: Iterable[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """Write one ``<id>.json`` per dataflow dict (sorted keys, indent 1); return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for dag in dataflows:
        path = out / f"{dag['id']}.json"
        path.write_text(json.dumps(dag, sort_keys=True, indent=1) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
