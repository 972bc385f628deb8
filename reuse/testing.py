"""Test harness shipped with the package: one shared local Spark session and tiny helpers.

Tests exercise the real runtime on tiny inputs. Starting a session costs ~10 s, so one session
(``local[2]``, UI off) is shared by every Spark test of a pytest run and stopped at its end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["spark", "riot_flows", "ROOT"]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The shared SparkSession (started on first use, stopped after the last test)."""
    from reuse.runtime.session import get_session, stop_session

    session = get_session("local[2]")
    try:
        yield session
    finally:
        stop_session(session)


def riot_flows(*ids: str, data_dir: str | Path | None = None) -> dict[str, Any]:
    """The named RIoTBench dataflows, parsed (all 21 when no id is given)."""
    from reuse.dataflow import parse_dataflow
    from reuse.workloads.riotbench import build_dataflows

    base = Path(data_dir) if data_dir is not None else ROOT / "data" / "riotbench"
    flows = {d["id"]: parse_dataflow(d) for d in build_dataflows(base)}
    return {i: flows[i] for i in ids} if ids else flows
