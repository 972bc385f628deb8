"""``benchmarks/limit.py`` reports both floors (issue 35), and ``report.py`` renders them. No
Spark: ``limit.floors`` runs two RIoT DAGs for a few ``seq``; the raw file is written by
``limit.py --json`` writes it (``provenance.raw_file``: a header, then the results)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from reuse.core.paths import riotbench_dir

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    if str(ROOT / "benchmarks") not in sys.path:  # limit.py imports its neighbours so
        sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}",
                                                  ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


report = _load("report")
limit = _load("limit")
PROVENANCE = {"command": "python benchmarks/limit.py --json docs/bench/floor.json",
              "commit": "0123456789abcdef", "dirty": False, "time": "2026-11-28T10:00:00Z",
              "machine": {"cpu": "Intel(R) Xeon(R) Processor", "cores": 2, "memory_gib": 23.5,
                          "python": "3.11.7", "pyspark": "4.3.0"}}


@pytest.fixture(scope="module")
def floors() -> dict[str, Any]:
    if not riotbench_dir().is_dir():
        pytest.skip("no data/riotbench")
    return limit.floors("riot", 12, n=2, batch=5)


def test_both_floors_keep_the_old_names(floors: dict[str, Any]) -> None:
    assert floors["dags"] == 2 and floors["seqs"] == 12
    for mode in ("default", "reuse"):
        m = floors[mode]
        assert {"tasks", "sources", "ms_per_seq", "cores"} <= set(m)  # as before issue 35
        assert set(m["cores"]) == {"10", "100", "300", "1000"}
        assert m["columnar"]["batch"] == 5 and set(m["columnar"]["cores"]) == set(m["cores"])
        assert m["ms_per_seq"] > 0 and m["columnar"]["ms_per_seq"] > 0
    assert set(floors["work_saved_cores"]) == set(floors["columnar_work_saved_cores"])


def test_per_event_only_has_no_columnar_entry() -> None:
    if not riotbench_dir().is_dir():
        pytest.skip("no data/riotbench")
    r = limit.floors("riot", 5, n=1, batch=None)
    assert "columnar" not in r["reuse"] and "columnar_work_saved_cores" not in r


def _page(tmp_path: Path, results: dict[str, Any]) -> str:
    bench = tmp_path / "docs" / "bench"
    bench.mkdir(parents=True)
    raw = {"provenance": PROVENANCE, "results": results}  # as limit.py --json writes it
    (bench / "floor.json").write_text(json.dumps(raw), encoding="utf-8")
    page = tmp_path / "BENCHMARKS.md"
    page.write_text("# Floor\n\n<!-- report:floor -->\n<!-- /report:floor -->\n",
                    encoding="utf-8")
    assert report.render_all(tmp_path) == []
    assert report.check(tmp_path) == []
    return page.read_text(encoding="utf-8")


def test_the_floor_table_renders_both_floors(tmp_path: Path, floors: dict[str, Any]) -> None:
    text = _page(tmp_path, {"riot": floors})
    r = floors["reuse"]
    ratio = f"{r['columnar']['ms_per_seq'] / r['ms_per_seq']:.2f}"
    assert f"| riot | reuse | 2 | 12 | {r['tasks']} + {r['sources']} | " in text
    assert f"| {ratio} | 5 |" in text
    assert "work saved columnar (ms/seq)" in text and "`docs/bench/floor.json`" in text


def test_an_old_floor_file_still_renders(tmp_path: Path) -> None:
    """A raw file from before the columnar floor (the per-event fields only) reads as it is."""
    old = {"dags": 21, "default": {"tasks": 117, "sources": 21, "ms_per_seq": 2.062,
                                   "cores": {"10": 0.0206}},
           "reuse": {"tasks": 73, "sources": 3, "ms_per_seq": 1.219, "cores": {"10": 0.0122}},
           "work_saved_cores": {"10": 0.0084}}
    text = _page(tmp_path, {"riot": old})
    assert "| riot | default | 21 | - | 117 + 21 | 2.062 | - | - | - |" in text
    assert "| riot | 0.843 | - |" in text
