"""Shared fixtures: paths to the project's test data."""

from __future__ import annotations

from pathlib import Path

import pytest

from reuse.dataflow import Dataflow, load_dataflows

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def figure1() -> dict[str, Dataflow]:
    """The paper's Figure 1 dataflows A, B, C (shared source and prefix) and D (other source)."""
    return {f.id: f for f in load_dataflows([FIXTURES / "figure1"])}
