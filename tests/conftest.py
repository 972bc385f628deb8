"""Shared fixtures: paths to the project's test data; the Hypothesis profiles.

Hypothesis runs under one of two profiles, loaded here before any test module builds its
``@settings`` (which inherit what they do not set): ``ci`` when ``$CI`` is set or
``REUSE_HYPOTHESIS_PROFILE=ci``, else ``dev``. Neither has a deadline: on a shared two-core
machine (Spark tests running beside) an example's wall time says nothing about the code, so a
deadline would fail tests by timing. ``ci`` is also derandomized (the same examples every run,
no example database) and prints the blob that reproduces a failure.

A test that needs a real part this machine lacks (Redis, Chromium, the data, Mosquitto) skips
with a reason made by :func:`reuse.testing.missing`; when ``$REUSE_REQUIRE`` names that part
(``.ci/run`` sets ``redis,browser,data,mqtt``), the skip is reported as a failure instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from reuse.core.dataflow import Dataflow, load_dataflows
from reuse.core.equivalence import AncestorGraph, tasks_equivalent_literal
from reuse.testing import REQUIRE_ENV, missing_part, required_parts

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if "CI" in os.environ
                      or os.environ.get("REUSE_HYPOTHESIS_PROFILE") == "ci" else "dev")


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[REQUIRED] = required_parts()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


REQUIRED = pytest.StashKey[set]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """A skip for a missing part that ``$REUSE_REQUIRE`` names becomes a failure."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple):
        part = missing_part(str(report.longrepr[2]))
        if part is not None and part in item.config.stash.get(REQUIRED, set()):
            report.outcome = "failed"
            report.longrepr = f"{report.longrepr[2]} (${REQUIRE_ENV} requires {part})"


@pytest.fixture
def figure1() -> dict[str, Dataflow]:
    """The paper's Figure 1 dataflows A, B, C (shared source and prefix) and D (other source)."""
    return {f.id: f for f in load_dataflows([FIXTURES / "figure1"])}


def count_literal_classes(flows: Sequence[Dataflow]) -> int:
    """How many distinct tasks all ``flows`` hold, by the paper's literal definition of ``<->``.

    Each task is compared with one representative of every class found so far using
    :func:`reuse.core.equivalence.tasks_equivalent_literal` (config-similar and ancestor graphs
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
