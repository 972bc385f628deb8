"""benchmarks/children.py: a child's output echoed, its RESULT line taken, its exit code kept."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "bench_children", Path(__file__).resolve().parents[2] / "benchmarks" / "children.py")
assert _SPEC is not None and _SPEC.loader is not None
children = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(children)
run_child = children.run_child


def test_result_line_is_taken_and_the_rest_echoed(capsys: pytest.CaptureFixture[str]) -> None:
    code, got = run_child([sys.executable, "-c",
                           "print('step 1'); print('RESULT {\"cores\": 0.5}'); print('done')"])
    assert (code, got) == (0, {"cores": 0.5})
    assert capsys.readouterr().out == "step 1\ndone\n"


def test_a_failed_child_gives_its_code_and_no_result() -> None:
    assert run_child([sys.executable, "-c", "import sys; sys.exit(3)"]) == (3, None)
