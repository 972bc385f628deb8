"""Shared fixtures: paths to the project's test data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from reuse.dataflow import Dataflow, load_dataflows
from reuse.equivalence import AncestorGraph, tasks_equivalent_literal

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def figure1() -> dict[str, Dataflow]:
    """The paper's Figure 1 dataflows A, B, C (shared source and prefix) and D (other source)."""
    return {f.id: f for f in load_dataflows([FIXTURES / "figure1"])}


def count_literal_classes(flows: Sequence[Dataflow]) -> int:
    """How many distinct tasks all ``flows`` hold, by the paper's literal definition of ``<->``.

    Each task is compared with one representative of every class found so far using
    :func:`reuse.equivalence.tasks_equivalent_literal` (config-similar and ancestor graphs
    isomorphic by VF2), never the Merkle signatures the code under test uses. ``<->`` is an
    equivalence relation, so one representative per class is enough.
    """
    memos: dict[str, dict[str, AncestorGraph]] = {f.id: {} for f in flows}
    reps: list[tuple[Dataflow, str]] = []
    for flow in flows:
        for task in flow.tasks:
            if not any(tasks_equivalent_literal(flow, task.id, other, rep, memos[flow.id],
                                                memos[other.id]) for other, rep in reps):
                reps.append((flow, task.id))
    return len(reps)


@pytest.fixture
def literal_classes() -> Callable[[Sequence[Dataflow]], int]:
    """:func:`count_literal_classes`, for tests in sub-folders (no package imports here)."""
    return count_literal_classes
