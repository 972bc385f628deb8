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

__all__ = ["spark", "warm_up", "riot_flows", "ROOT"]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The shared SparkSession (started on first use, stopped after the last test)."""
    from reuse.runtime.session import get_session, stop_session

    session = get_session("local[2]")
    warm_up(session)
    try:
        yield session
    finally:
        stop_session(session)


def warm_up(session: SparkSession) -> None:
    """Start the Python worker the partial-DAG queries use (its pandas and pyarrow, and the
    partial-DAG module, imported) with one tiny ``mapInPandas`` job, so the first timed test
    does not pay for it: on a cold machine that start-up alone can outlast a test's short
    steps. The task code itself is still imported by the first batch that runs a task."""

    def touch(frames: Iterator[Any]) -> Iterator[Any]:
        import reuse.runtime.engines.partial.dag  # noqa: F401 - imported for its side effect: warm caches

        yield from frames

    session.range(4).coalesce(1).mapInPandas(touch, "id long").collect()


def riot_flows(*ids: str, data_dir: str | Path | None = None) -> dict[str, Any]:
    """The named RIoTBench dataflows, parsed (all 21 when no id is given)."""
    from reuse.core.dataflow import parse_dataflow
    from reuse.workloads.riotbench import build_dataflows

    base = Path(data_dir) if data_dir is not None else ROOT / "data" / "riotbench"
    flows = {d["id"]: parse_dataflow(d) for d in build_dataflows(base)}
    return {i: flows[i] for i in ids} if ids else flows


def ledger_task(task: Any, at: int) -> dict[str, Any]:
    """A started task (:class:`reuse.runtime.common.planners.NewTask`) as the runtime's ledger holds
    it, joined at ``at``: what the reference execution reads (tests that drive a deployment by
    hand build their ledger with it)."""
    return {"type": task.type, "config": task.config, "parents": list(task.parents),
            "kind": task.kind, "topic": f"src:{task.stream}" if task.kind == "source"
            else task.id, "start": at, "end": None}


def journal_kinds(root: str | Path) -> list[str]:
    """The record kinds of a live run's journal so far (``start``, ``op``, ``row``), for tests
    that wait on a run in another process: no journal yet is none, a torn last line is
    skipped."""
    import json

    try:
        lines = (Path(root) / "journal.jsonl").read_text().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for ln in lines:
        try:
            out.append(json.loads(ln)["kind"])
        except ValueError:
            pass
    return out
