"""Fixtures of the shared-query engine's tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def refused_run(tmp_path: Path, capsys: Any) -> Callable[[Sequence[str]], tuple[int, str]]:
    """``reuse run`` of the Figure 1 dataflows with extra options, for the options refused
    before any JVM starts: returns its exit code and stderr, after checking that it wrote
    nothing (no CSV, no run directory)."""
    from reuse.cli import main

    def run(extra: Sequence[str]) -> tuple[int, str]:
        trace = tmp_path / "t.json"
        trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "A"}]}))
        out = tmp_path / "out.csv"
        code = main(["run", "--dags", "tests/fixtures/figure1", "--trace", str(trace),
                     "--out", str(out), "--root", str(tmp_path / "run"), *extra])
        err = capsys.readouterr().err.strip()
        assert not out.exists() and not (tmp_path / "run").exists()
        return code, err

    return run
