"""The live engine's door (``Engine.submit`` takes a Dataflow, a JSON file or a dict): bad input
is one :class:`ReuseError` line naming the file or DAG, before the engine is touched (issue 34,
item 3; :func:`as_dataflow` is what ``submit`` calls first, so no Spark is needed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from reuse.core.errors import ReuseError
from reuse.live.engine import as_dataflow

GOOD_TASKS = [{"id": "s", "type": "SYS", "config": "source"}]

FILES = {
    "deep.json": b"[" * 10 ** 5 + b"]" * 10 ** 5,
    "bigint.json": b'{"id": "d", "tasks": [], "streams": [' + b"9" * 5000 + b"]}",
    "nan.json": b'{"id": "d", "tasks": [{"id": "s", "type": "T", "config": NaN}], "streams": []}',
    "latin1.json": b'{"id": "\xe9"}',
    "cut.json": b'{"id": "d", "tasks": [{"id": "s", "ty',
}
DICTS: dict[str, Any] = {
    "surrogate-id": {"id": "\ud800", "tasks": GOOD_TASKS, "streams": []},
    "deep-config": {"id": "d", "tasks": [{"id": "s", "type": "T", "config": [[[[]]]] * 2}],
                    "streams": []},
    "nan-config": {"id": "d", "tasks": [{"id": "s", "type": "T", "config": math.nan}],
                   "streams": []},
    "cycle": {"id": "d", "tasks": [{"id": x, "type": x, "config": 1} for x in "ab"],
              "streams": [["a", "b"], ["b", "a"]]},
    "huge-id": {"id": "d", "tasks": [{"id": "x" * 10 ** 6, "type": "T", "config": 1}] * 2,
                "streams": []},
}


def _deep(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = [v]
    return v


DICTS["deep-config"]["tasks"][0]["config"] = _deep(5000)


@pytest.mark.parametrize("name", sorted(FILES))
def test_bad_files(name: str, tmp_path: Path, fuzz_count: Any) -> None:
    fuzz_count("live as_dataflow (files)")
    path = tmp_path / name
    path.write_bytes(FILES[name])
    with pytest.raises(ReuseError) as err:
        as_dataflow(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name", sorted(DICTS))
def test_bad_dicts(name: str, fuzz_count: Any) -> None:
    fuzz_count("live as_dataflow (dicts)")
    with pytest.raises(ReuseError) as err:
        as_dataflow(DICTS[name])
    assert "\n" not in str(err.value) and len(str(err.value)) < 1000


def test_a_directory_or_missing_file(tmp_path: Path) -> None:
    for path in (tmp_path, tmp_path / "missing.json"):
        with pytest.raises(ReuseError) as err:
            as_dataflow(path)
        assert str(path) in str(err.value)
