"""The split engine on a two-worker standalone cluster whose workers share no disk with the
driver (issue 22, item 2).

``reuse cluster start --hide DIR`` runs each worker in a mount namespace of its own where DIR
is an empty tmpfs. DIR holds the run directory and a copy of the replay data, so the executors
cannot read either, as on machines apart from the driver's. ``reuse run --split
--no-shared-disk`` must still complete exactly: Spark ships the data (``addFile``), the stages
exchange events through Spark's shuffle, and the sink records come back to the driver.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from reuse.core.paths import riotbench_dir
from reuse.runtime.common.files import read_batches
from reuse.testing import missing, riot_flows

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0
                                 or shutil.which("unshare") is None,
                                 reason=missing("namespaces", "mount namespaces need Linux, root "
                                                        "and unshare"))]

REUSE = [sys.executable, "-m", "reuse"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_split_run_completes_exactly_where_executors_see_no_driver_disk(
        tmp_path: Path) -> None:
    private = tmp_path / "private"
    data = private / "riotbench"
    shutil.copytree(riotbench_dir(None), data)
    dags = tmp_path / "dags"
    dags.mkdir()
    for f in riot_flows("stats-sys", "clean-kalman-sys").values():
        (dags / f"{f.id}.json").write_text(json.dumps(f.to_dict()))
    ops = [("submit", "stats-sys"), ("submit", "clean-kalman-sys"),
           ("remove", "clean-kalman-sys")]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"ops": [{"op": o, "dag": g} for o, g in ops]}))
    cdir, root, out = tmp_path / "cluster", private / "run", tmp_path / "split.csv"
    port, ui = _free_port(), _free_port()
    start = subprocess.run([*REUSE, "cluster", "start", "--dir", str(cdir), "--port", str(port),
                            "--ui-port", str(ui), "--workers", "2", "--cores", "1",
                            "--memory", "2g", "--hide", str(private)],
                           capture_output=True, text=True, timeout=180)
    try:
        assert start.returncode == 0, start.stderr
        info = json.loads(start.stdout)
        # the workers see the private directory empty; the driver (this process) does not
        for role in ("worker", "worker2"):
            assert os.listdir(f"/proc/{info['pids'][role]}/root{private}") == [], role
        assert (data / "SYS_sample_data_senml.csv").is_file()
        run = subprocess.run([*REUSE, "run", "--dags", str(dags), "--trace", str(trace),
                              "--master", info["url"], "--cluster-dir", str(cdir), "--split",
                              "--no-shared-disk", "--data-dir", str(data),
                              "--step-seconds", "5", "--rate", "20", "--trigger-seconds", "1",
                              "--warmup-seconds", "3", "--root", str(root), "--out", str(out)],
                             capture_output=True, text=True, timeout=400)
        assert run.returncode == 0, run.stderr[-2000:]
    finally:
        stop = subprocess.run([*REUSE, "cluster", "stop", "--dir", str(cdir)],
                              capture_output=True, text=True, timeout=120)
    assert json.loads(stop.stdout)["left"] == {}
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 3
    assert all(r["lost"] == "0" and r["duplicated"] == "0" for r in rows)
    # every batch ran split over 2 partitions, on the two workers' executors
    split = [b for b in read_batches(root) if b.get("split")]
    assert split and {b["split"]["partitions"] for b in split} == {2}
    assert all(b["split"]["exchanged_bytes"] > 0 for b in split if b["events"])
    execs = {e for b in split for e in b["shard_exec"].values()}
    assert len({e.split("@")[0] for e in execs}) == 2, execs  # two executor ids
    ledger = json.loads((root / "ledger.json").read_text())
    assert ledger["split"] is True and ledger["shared_disk"] is False
