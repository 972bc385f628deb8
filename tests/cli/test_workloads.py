"""``reuse dags``, ``reuse trace`` and ``reuse plan`` on the real workloads (planner level)."""

from __future__ import annotations

import csv

import pytest

from reuse.cli import main
from reuse.core.dataflow import load_dataflows
from reuse.core.paths import data_dir
from reuse.testing import missing

pytestmark = pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(),
                                reason=missing("data", "data/ not set up (run scripts/setup.sh)"))


@pytest.mark.parametrize("workload, n_dags", [("riot", 21), ("opmw", 35)])
def test_dags_trace_plan_round_trip(tmp_path, capsys, workload, n_dags):
    dags = tmp_path / "dags"
    assert main(["dags", "--workload", workload, "--out", str(dags)]) == 0
    assert len(list(dags.glob("*.json"))) == n_dags
    assert main(["validate", "-q", str(dags)]) == 0
    for kind, seed in (("seq", 1), ("rw", 1), ("rw", 2)):
        trace, out = tmp_path / f"{kind}{seed}.json", tmp_path / f"{kind}{seed}.csv"
        assert main(["trace", "--workload", workload, "--kind", kind, "--seed", str(seed),
                     "--out", str(trace)]) == 0
        assert main(["plan", "--dags", str(dags), "--trace", str(trace), "--out", str(out)]) == 0
        rows = list(csv.DictReader(out.open()))
        assert rows[-1]["reuse_tasks"] == "0" and rows[-1]["running_dags"] == "0"
        assert all(int(r["reuse_tasks"]) <= int(r["default_tasks"]) for r in rows)
        if kind == "seq":
            assert len(rows) == 2 * n_dags
    assert "invariants held at every step" in capsys.readouterr().out


def test_riot_seq_peak_is_every_task_and_the_literal_classes(tmp_path, literal_classes):
    dags, trace, out = tmp_path / "d", tmp_path / "t.json", tmp_path / "o.csv"
    main(["dags", "--workload", "riot", "--out", str(dags)])
    main(["trace", "--workload", "riot", "--kind", "seq", "--seed", "3", "--out", str(trace)])
    main(["plan", "--dags", str(dags), "--trace", str(trace), "--out", str(out)])
    flows = load_dataflows([dags])
    rows = list(csv.DictReader(out.open()))
    # SEQ submits all 21 DAGs in steps 1-21: the peak is at step 21 and nothing is removed before
    peak = max(rows, key=lambda r: int(r["default_tasks"]))
    assert peak["step"] == str(len(flows)) == "21"
    assert int(peak["default_tasks"]) == sum(len(f.tasks) for f in flows)
    assert int(peak["reuse_tasks"]) == literal_classes(flows)


def test_unknown_workload_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["dags", "--workload", "nope", "--out", "x"])
    assert info.value.code == 2


def test_dags_keying_sensor(tmp_path, capsys):
    """``--keying sensor``: the same 21 DAGs, every keyed stateful task per (sensor, field)."""
    import json
    out = tmp_path / "s"
    assert main(["dags", "--workload", "riot", "--keying", "sensor", "--out", str(out)]) == 0
    groups = [t["config"]["group_by"] for f in out.glob("*.json")
              for t in json.loads(f.read_text())["tasks"]
              if isinstance(t["config"], dict) and "group_by" in t["config"]]
    assert len(list(out.glob("*.json"))) == 21 and groups
    assert all(g == ["sensor", "obs"] for g in groups)
    capsys.readouterr()
    assert main(["dags", "--workload", "opmw", "--keying", "sensor", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "riot workload only" in err


def test_the_tenant_workload_through_dags_trace_and_plan(tmp_path, capsys):
    dags, out = tmp_path / "dags", tmp_path / "o.csv"
    assert main(["dags", "--workload", "riot-tenants", "--tenants", "12", "--workload-seed", "2",
                 "--out", str(dags)]) == 0
    assert len(list(dags.glob("u0*.json"))) == 12
    peaks = {}
    for kind in ("seq", "rw1"):
        trace = tmp_path / f"{kind}.json"
        assert main(["trace", "--workload", "riot-tenants", "--tenants", "12", "--workload-seed",
                     "2", "--kind", kind, "--out", str(trace)]) == 0
        for match in ("exact", "semantic"):
            assert main(["plan", "--dags", str(dags), "--trace", str(trace), "--out", str(out),
                         "--match", match]) == 0
            rows = list(csv.DictReader(out.open()))
            peaks[kind, match] = max(int(r["reuse_tasks"]) for r in rows)
    assert peaks["seq", "semantic"] <= peaks["seq", "exact"]
    assert "containment rewrites" in capsys.readouterr().out
    assert main(["trace", "--workload", "riot", "--tenants", "3", "--kind", "seq",
                 "--out", str(tmp_path / "x.json")]) == 1
