"""``reuse run --bus-max-events`` reaches the runtime, and the report names the largest lag
(the live run itself is replaced: no Spark)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from reuse.cli import main
from reuse.core.paths import riotbench_dir
from reuse.runtime import run as run_module
from reuse.runtime.run import CSV_COLUMNS
from reuse.workloads import write_dags
from reuse.workloads.riotbench import build_dataflows


def test_bus_max_events_reaches_live_run_and_lag_is_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    dags = tmp_path / "dags"
    write_dags([d for d in build_dataflows(riotbench_dir()) if d["id"] == "etl-sys"],
               dags)
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "etl-sys"}]}))
    seen: dict[str, Any] = {}

    def fake_live_run(flows: Any, ops: Any, spec: Any, **kw: Any) -> list[dict[str, Any]]:
        seen["spec"] = spec
        return [{"step": 1, "op": "submit", "dag": "etl-sys", "running_tasks": 7,
                 "paused_tasks": 0, "cores": 0.5, "lost": 0, "duplicated": 0,
                 "max_lag_events": 321, "throttled": 1}]

    monkeypatch.setattr(run_module, "live_run", fake_live_run)
    out = tmp_path / "out.csv"
    assert main(["run", "--dags", str(dags), "--trace", str(trace), "--merge", "partial",
                 "--bus-max-events", "500", "--out", str(out),
                 "--root", str(tmp_path / "run")]) == 0
    assert seen["spec"].bus_max_events == 500
    assert "max consumer lag 321 events" in capsys.readouterr().out
    row = next(csv.DictReader(out.open()))
    assert list(row) == CSV_COLUMNS
    assert {"max_lag_events", "throttled", "malformed"} <= set(CSV_COLUMNS)
    assert (row["max_lag_events"], row["throttled"]) == ("321", "1")


def test_run_with_no_broker_is_one_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A broker that is down: a one-line error before any Spark session, exit 2."""
    import socket

    dags = tmp_path / "dags"
    write_dags([d for d in build_dataflows(riotbench_dir()) if d["id"] == "etl-sys"], dags)
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "etl-sys"}]}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nobody listens there
    rc = main(["run", "--dags", str(dags), "--trace", str(trace), "--source",
               f"mqtt://127.0.0.1:{port}", "--out", str(tmp_path / "x.csv"),
               "--root", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "\n" not in err and "Traceback" not in err
    assert f"no MQTT broker at mqtt://127.0.0.1:{port}" in err
    assert not (tmp_path / "x.csv").exists()
