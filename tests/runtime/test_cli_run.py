"""``reuse run`` end to end on a tiny trace, both modes, on the shared local session (the
shared-query engine by default; the Redis test runs the paper's partial DAGs)."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from reuse.cli import main
from reuse.core.paths import riotbench_dir
from reuse.runtime.run import CSV_COLUMNS
from reuse.testing import missing
from reuse.workloads.riotbench import build_dataflows, write_dags

pytestmark = pytest.mark.spark


def _tiny_trace(tmp_path: Path) -> tuple[Path, Path]:
    """Two SYS dataflows (the second reuses all but its sink) and a 3-op trace."""
    dags = tmp_path / "dags"
    write_dags([d for d in build_dataflows(riotbench_dir())
                if d["id"] in ("etl-sys", "etl-annotate-sys")], dags)
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "etl-sys"},
                                         {"op": "submit", "dag": "etl-annotate-sys"},
                                         {"op": "remove", "dag": "etl-sys"}]}))
    return dags, trace


def test_run_writes_csv_for_both_modes(spark: Any, tmp_path: Path, mqtt_broker: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Reuse fed by a broker (``--source mqtt://``: `reuse publish`'s events through Mosquitto,
    checked against the reference on the recorded events) with its running DAGs split over
    the shards (``--split``: every partition reads the broker's events of its keys, one
    cursor per source) and merged by semantic matching (``--match semantic``), Default on
    generated replay, unsplit."""
    import threading

    from reuse.runtime.dataplane.publish import Publisher, Stream

    dags, trace = _tiny_trace(tmp_path)
    tasks = {}
    pub = Publisher(mqtt_broker, [Stream("SYS", "SYS")], rate=10).connect()
    publishing = threading.Thread(target=pub.run, daemon=True)
    publishing.start()
    for mode in ("reuse", "default"):
        out = tmp_path / f"{mode}.csv"
        source = (["--source", mqtt_broker, "--split", "--match", "semantic"]
                  if mode == "reuse" else [])
        try:
            rc = main(["run", "--dags", str(dags), "--trace", str(trace), "--mode", mode,
                       "--step-seconds", "4", "--trigger-seconds", "1", "--rate", "10",
                       "--warmup-seconds", "1", *source,
                       "--out", str(out), "--root", str(tmp_path / mode)])
        finally:
            if mode == "reuse":
                pub.halt()
                publishing.join(timeout=10)
                pub.close()
        assert rc == 0
        rows = list(csv.DictReader(out.open()))
        assert list(rows[0]) == CSV_COLUMNS
        assert [r["op"] for r in rows] == ["submit", "submit", "remove"]
        assert all(r["lost"] == "0" and r["duplicated"] == "0" for r in rows)
        assert all(float(r["cores"]) > 0 for r in rows)
        assert sum(int(r["events_out"]) for r in rows) > 0
        assert any(r["p50_latency_ms"] != "" for r in rows)
        tasks[mode] = [int(r["running_tasks"]) for r in rows]
        ledger = json.loads((tmp_path / mode / "ledger.json").read_text())
        if mode == "reuse":
            assert all(r["malformed"] == "0" for r in rows)
            assert ledger["source"]["kind"] == "mqtt"
            assert ledger["source"]["counts"]["sensors/SYS"]["appended"] > 0
            assert ledger["source"]["published"]  # outputs on out/<dataflow>/<sink>
            assert ledger["split"] is True
            batches = [json.loads(line) for line in
                       (tmp_path / mode / "batches.jsonl").read_text().splitlines()]
            assert {b["split"]["partitions"] for b in batches if b.get("split")} == {2}
            assert all(b.get("split") for b in batches if b["events"])
            import psutil  # the run's own Redis was stopped with it

            assert not [p for p in psutil.process_iter(["name", "cmdline"])
                        if p.info["name"] == "redis-server"
                        and str(tmp_path / mode) in " ".join(p.info["cmdline"] or [])]
        else:
            assert ledger["source"]["kind"] == "replay"
        # the default engine is the shared query: one query throughout, nothing paused
        assert {(r["queries"], r["paused_tasks"]) for r in rows} == {("1", "0")}
    # etl-annotate-sys reuses all but its sink: 7 + 1 tasks with reuse, 7 + 6 without
    assert tasks["reuse"][:2] == [7, 8] and tasks["default"][:2] == [7, 13]
    # live bills: each task's measured CPU split among its users adds up to the task CPU
    # the engine measured, and a dataflow that shares nothing pays exactly its own tasks
    for mode in ("reuse", "default"):
        bills_csv = tmp_path / f"bills-{mode}.csv"
        assert main(["bill", "--dags", str(dags), "--trace", str(trace), "--run",
                     str(tmp_path / mode), "--out", str(bills_csv)]) == 0
        billed = {r["dag"]: r for r in csv.DictReader(bills_csv.open())}
        measured = sum(sum(json.loads(line)["task_cpu_s"].values()) for line in
                       (tmp_path / mode / "batches.jsonl").read_text().splitlines())
        assert measured > 0
        # the CSV rounds each bill to a microsecond of CPU: that much per dataflow may differ
        assert sum(float(r["bill"]) for r in billed.values()) == pytest.approx(
            measured, rel=1e-6, abs=1e-6 * len(billed))
        if mode == "default":
            assert all(float(r["bill"]) == pytest.approx(float(r["standalone"]))
                       for r in billed.values())
        else:  # etl-annotate-sys shares all but its sink with etl-sys: it pays less alone
            r = billed["etl-annotate-sys"]
            assert float(r["bill"]) < float(r["standalone"])
    assert main(["bill", "--dags", str(dags), "--trace", str(trace), "--run", str(tmp_path),
                 "--out", str(tmp_path / "x.csv")]) == 1  # not a run directory: one line
    err = capsys.readouterr().err
    assert "[reuse-inplace 3/3" in err and "[default-inplace 3/3" in err


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(shutil.which("redis-server") is None,
                    reason=missing("redis", "redis-server not installed (scripts/setup.sh installs it as root)"))
def test_run_on_redis_bus(spark: Any, tmp_path: Path) -> None:
    """``--bus redis``: reused outputs cross a real Redis Streams broker the run starts and
    stops itself; the broker's CPU is part of ``cores``."""
    from reuse.runtime.dataplane import redis_bus

    started: list[int] = []
    real_start = redis_bus.start_redis

    def spy(*args: Any, **kwargs: Any) -> Any:  # records the broker's PID, starts it for real
        broker = real_start(*args, **kwargs)
        started.append(broker.pid)
        return broker

    dags, trace = _tiny_trace(tmp_path)
    out = tmp_path / "redis.csv"
    mp = pytest.MonkeyPatch()
    mp.setattr(redis_bus, "start_redis", spy)
    try:
        rc = main(["run", "--dags", str(dags), "--trace", str(trace), "--mode", "reuse",
                   "--merge", "partial", "--bus", "redis", "--step-seconds", "4",
                   "--trigger-seconds", "1", "--warmup-seconds", "1", "--out", str(out),
                   "--root", str(tmp_path / "run")])
    finally:
        mp.undo()
    assert rc == 0
    rows = list(csv.DictReader(out.open()))
    assert [int(r["running_tasks"]) for r in rows][:2] == [7, 8]
    assert all(r["lost"] == "0" and r["duplicated"] == "0" for r in rows)
    # the partial queries' readers report their lag
    assert all(r["max_lag_events"] != "" and r["throttled"] != "" for r in rows)
    assert sum(int(r["events_out"]) for r in rows) > 0
    assert len(started) == 1 and not _pid_alive(started[0])  # the broker was stopped
