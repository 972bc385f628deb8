"""``reuse run`` end to end on a tiny trace, both modes, on the shared local session."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from reuse.runtime.cli import main
from reuse.runtime.run import CSV_COLUMNS
from reuse.testing import ROOT
from reuse.workloads.riotbench import build_dataflows, write_dags

pytestmark = pytest.mark.spark


def test_run_writes_csv_for_both_modes(spark: Any, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    dags = tmp_path / "dags"
    write_dags([d for d in build_dataflows(ROOT / "data" / "riotbench")
                if d["id"] in ("etl-sys", "etl-annotate-sys")], dags)
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "etl-sys"},
                                         {"op": "submit", "dag": "etl-annotate-sys"},
                                         {"op": "remove", "dag": "etl-sys"}]}))
    tasks = {}
    for mode in ("reuse", "default"):
        out = tmp_path / f"{mode}.csv"
        rc = main(["run", "--dags", str(dags), "--trace", str(trace), "--mode", mode,
                   "--step-seconds", "4", "--trigger-seconds", "1", "--rate", "10",
                   "--warmup-seconds", "1",
                   "--out", str(out), "--root", str(tmp_path / mode)])
        assert rc == 0
        rows = list(csv.DictReader(out.open()))
        assert list(rows[0]) == CSV_COLUMNS
        assert [r["op"] for r in rows] == ["submit", "submit", "remove"]
        assert all(r["lost"] == "0" and r["duplicated"] == "0" for r in rows)
        assert all(float(r["cores"]) > 0 for r in rows)
        assert sum(int(r["events_out"]) for r in rows) > 0
        assert any(r["p50_latency_ms"] != "" for r in rows)
        tasks[mode] = [int(r["running_tasks"]) for r in rows]
    # etl-annotate-sys reuses all but its sink: 7 + 1 tasks with reuse, 7 + 6 without
    assert tasks["reuse"][:2] == [7, 8] and tasks["default"][:2] == [7, 13]
    err = capsys.readouterr().err
    assert "[reuse 3/3" in err and "[default 3/3" in err
