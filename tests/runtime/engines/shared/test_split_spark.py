"""One running DAG split over the shards of the shared query, on real Spark (issue 22).

The three overlapping RIoT dataflows of ``test_engine_spark.py`` (A = stats-sys; B =
clean-kalman-sys, merged onto A's source and parse; C = clean-sys, merged onto B's filters) run
as ONE running DAG (one source) split over 2 shards by key ranges and stages: its keyed
stateful tasks (Kalman, regression, block averages, distinct counts) run in both shards, each
for its keys. Mid-trace: B's removal (unmerge), a re-split onto 3 shards (the shared query restarts from its checkpoint
with 3 partitions; ranges move) and an abrupt restart. Every sink's
outputs must equal the reference execution's, and no task may output outside its window.

With k-safety in shards (``--split --k-safe 1 --replicate-min-users 1``, issue 32): every task
has a replica, split by key range one partition after its primary's; each replica's records
must equal the reference's for its primary over the replica's own window.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from reuse.runtime import SparkRuntimeError
from reuse.runtime.accounting import account, leaked_records, replica_account
from reuse.runtime.engines.shared.deploy import REPLICA_MARK
from reuse.runtime.engines.shared.engine import InplaceRuntime
from reuse.runtime.spec import RunSpec
from reuse.testing import riot_flows

pytestmark = pytest.mark.spark

RATE = 40.0
LEAD = int(RATE * 5)
LIMIT = 400
STEPS: list[tuple[str, str, int]] = [
    ("submit", "stats-sys", 100),
    ("submit", "clean-kalman-sys", 160),
    ("submit", "clean-sys", 200),
    ("remove", "clean-kalman-sys", 260),
    ("resplit", "3", 280),
    ("restart", "", 340),
]


def _wait_for(rt: InplaceRuntime, seq: int) -> None:
    while rt.bound() < seq - LEAD:
        time.sleep(0.05)


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("split")
    flows = riot_flows("stats-sys", "clean-kalman-sys", "clean-sys")
    rt = InplaceRuntime(spark, RunSpec.of(root=root, shards=2, rate=RATE, trigger_s=1.0,
                                          limit=LIMIT, split=True, rebalance_s=0, k_safe=1,
                                          replicate_min_users=1),
                        t0_ms=int(time.time() * 1000) + 500)
    try:
        # the sources are held at each cut until its operation is enacted (a loaded machine
        # slows the operations but cannot make them late)
        rt.hold(STEPS[0][2])
        rt.start_sources(["SYS"])
        for op, arg, at in STEPS:
            rt.hold(at)
            _wait_for(rt, at)
            if op == "submit":
                rt.submit(flows[arg], at=at)
            elif op == "remove":
                rt.remove(arg, at=at)
            elif op == "resplit":
                rt.wait_processed(at - 1, timeout_s=60)
                rt.resplit(int(arg))
            else:
                rt.wait_processed(at - 1, timeout_s=60)
                rt.restart()
            rt.poll()
        rt.hold(None)
        rt.wait_processed(LIMIT - 1, timeout_s=90)
        # restarted once its input has all been read, the query runs no batch again: its
        # processed mark comes from the checkpoint, not from a batch that never comes
        rt.restart()
        rt.wait_processed(LIMIT - 1, timeout_s=10)
        ledger = rt.ledger()
    finally:
        rt.close()
    batches = [json.loads(x) for x in (root / "batches.jsonl").read_text().splitlines()]
    layouts = sorted((root / "ckpt" / "shared" / "layout").glob("*.json"))
    return {"acc": account(root, ledger, LIMIT), "leaks": leaked_records(root, ledger, LIMIT),
            "replicas": replica_account(root, ledger, LIMIT),
            "ledger": ledger, "batches": batches, "layouts": layouts, "root": root}


def test_split_outputs_equal_the_reference(run: dict[str, Any]) -> None:
    acc = run["acc"]
    assert set(acc) == {"stats-sys", "clean-kalman-sys", "clean-sys"}
    for dag, a in acc.items():
        assert a["expected"] > 0, dag
        assert (a["lost"], a["duplicated"]) == (0, 0), (dag, a)
    assert acc["clean-kalman-sys"]["window"] == [160, 260]
    assert run["leaks"] == {}


def test_each_replica_of_a_split_running_dag_outputs_its_primarys_records(
        run: dict[str, Any]) -> None:
    reps = run["replicas"]
    # every sink of the three dataflows had a replica (U = 1), B's from its submit to its removal
    assert {r["of"] for r in reps.values()} == {
        t for t, d in run["ledger"]["tasks"].items()
        if d["kind"] == "sink" and REPLICA_MARK not in t}
    for r, a in reps.items():
        assert a["expected"] > 0 and (a["lost"], a["duplicated"]) == (0, 0), (r, a)


def test_one_running_dag_runs_in_every_shard(run: dict[str, Any]) -> None:
    split = [b for b in run["batches"] if "split" in b]
    assert all("split" in b for b in run["batches"] if b["events"])
    # A, B and C form one running DAG with one source: both shards worked on it
    two = [b for b in split if b["split"]["partitions"] == 2 and b["events"]]
    assert two and all(len(b["shard_cpu_s"]) == 2 for b in two)
    assert all(min(b["shard_cpu_s"].values()) > 0 for b in two)
    assert all(b["split"]["stages"] > 1 for b in two)  # keyed tasks behind a shuffle
    # both partitions wrote sink records of their keys, each under the batch's key (keyed by
    # field, SYS has 5 keys: the third partition may own none of them)
    files = {p.stem.rsplit("-", 1)[1] for p in (run["root"] / "sinks" / "stats-sys.publish")
             .glob("*.jsonl")}
    assert {"p0", "p1"} <= files
    # the re-split: batches ran on 2 partitions, then on 3
    parts = [b["split"]["partitions"] for b in split]
    assert parts[0] == 2 and parts[-1] == 3 and parts == sorted(parts)
    events = [e["event"] for e in run["ledger"]["log"]]
    assert "resplit" in events and "restart" in events
    assert run["ledger"]["split"] is True


def test_each_batch_pins_its_layout(run: dict[str, Any]) -> None:
    pinned = {int(p.stem): json.loads(p.read_text()) for p in run["layouts"]}
    for b in run["batches"]:
        if "split" in b:
            assert pinned[b["batch"]]["partitions"] == b["split"]["partitions"]


def test_split_refuses_what_it_cannot_run(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(SparkRuntimeError, match="K=2 needs K\\+1=3 distinct executors"):
        RunSpec.of(root=tmp_path, shards=2, split=True, k_safe=2)
    rt = InplaceRuntime(spark, RunSpec.of(root=tmp_path / "b", shards=2, split=True))
    with pytest.raises(SparkRuntimeError, match="moves key ranges"):
        rt.move("x", 1)
    with pytest.raises(SparkRuntimeError, match="positive integer"):
        rt.resplit(0)
