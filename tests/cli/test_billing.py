"""``reuse bill``: the bills CSV checked against ``reuse plan``'s, on Figure 1 and on every
workload and trace, and bad input as one clean line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reuse.cli import main
from reuse.core.dataflow import load_dataflows
from reuse.core.paths import data_dir
from reuse.core.traces import dump_trace
from reuse.testing import missing
from reuse.workloads.trace_registry import build_trace

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TRACE = str(FIX / "figure1-trace.json")


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def check_against_plan(dags: Path, trace: Path, tmp_path: Path, *extra: str) -> list[dict]:
    """Run ``reuse bill --per-step`` and ``reuse plan`` on the same input; with unit costs the
    bills of a step add up to its ``reuse_tasks`` and ``standalone`` is tasks x steps present."""
    bill, plan = tmp_path / "bills.csv", tmp_path / "plan.csv"
    assert main(["bill", "--dags", str(dags), "--trace", str(trace), "--out", str(bill),
                 "--per-step", *extra]) == 0
    assert main(["plan", "--dags", str(dags), "--trace", str(trace), "--out", str(plan)]) == 0
    billed, planned = rows(bill), rows(plan)
    sizes = {f.id: len(f) for f in load_dataflows([dags])}
    submitted = list(dict.fromkeys(r["dag"] for r in planned if r["op"] == "submit"))
    assert [r["dag"] for r in billed] == submitted
    for step in planned:
        shares = [float(r[f"step_{step['step']}"]) for r in billed if r[f"step_{step['step']}"]]
        assert len(shares) == int(step["submitted_dags"])
        if "lifetime" not in extra:
            assert sum(shares) == pytest.approx(int(step["reuse_tasks"]))
    total = sum(int(r["reuse_tasks"]) for r in planned)
    assert sum(float(r["bill"]) for r in billed) == pytest.approx(total, abs=1e-4)
    for r in billed:
        present = sum(1 for step in planned if r[f"step_{step['step']}"] != "")
        assert int(r["steps_present"]) == present
        assert float(r["standalone"]) == sizes[r["dag"]] * present
        assert float(r["bill"]) <= float(r["standalone"])
        saving = 100 * (1 - float(r["bill"]) / float(r["standalone"]))
        assert float(r["saving_pct"]) == pytest.approx(saving, abs=0.006)
    return billed


@pytest.mark.parametrize("rule", ["shapley", "lifetime"])
def test_bill_figure1_adds_up_to_the_plan(tmp_path, rule):
    billed = check_against_plan(FIX / "figure1", Path(TRACE), tmp_path, "--rule", rule)
    by_dag = {r["dag"]: r for r in billed}
    assert by_dag["D"]["bill"] == by_dag["D"]["standalone"]  # D shares nothing
    assert float(by_dag["B"]["saving_pct"]) > 0


def test_bill_columns_and_summary_line(tmp_path):
    out = tmp_path / "b.csv"
    r = subprocess.run([sys.executable, "-m", "reuse", "bill", "--dags", str(FIX / "figure1"),
                        "--trace", TRACE, "--out", str(out)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines()[0] == "dag,steps_present,standalone,bill,saving_pct"
    assert "4 dataflows" in r.stdout and "bills add up to the total" in r.stdout


def test_bill_with_a_calibration(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"unit": "CPU-s", "default": 1, "types": {"SYS": 10}}))
    out = tmp_path / "b.csv"
    assert main(["bill", "--dags", str(FIX / "figure1"), "--trace", TRACE, "--out", str(out),
                 "--costs", str(costs)]) == 0
    unit = tmp_path / "u.csv"
    assert main(["bill", "--dags", str(FIX / "figure1"), "--trace", TRACE, "--out", str(unit)]) == 0
    priced, plain = {r["dag"]: r for r in rows(out)}, {r["dag"]: r for r in rows(unit)}
    flows = {f.id: f for f in load_dataflows([FIX / "figure1"])}
    for dag, r in priced.items():  # each SYS task priced 10 instead of 1
        sys_tasks = sum(t.type == "SYS" for t in flows[dag].tasks)
        assert float(r["standalone"]) == float(plain[dag]["standalone"]) + 9 * sys_tasks * int(
            r["steps_present"])
    assert {d for d, f in flows.items() if any(t.type == "SYS" for t in f.tasks)} == set("ABC")
    assert priced["D"]["bill"] == priced["D"]["standalone"]


@pytest.mark.parametrize("ops, expected", [
    ([{"op": "submit", "dag": "Z"}], "step 1: dag 'Z': unknown DAG id"),
    ([{"op": "remove", "dag": "A"}], "step 1: dag 'A': is removed but not submitted"),
    ([{"op": "submit", "dag": "A"}, {"op": "submit", "dag": "A"}],
     "step 2: dag 'A': is submitted twice while present"),
    ([{"op": "start", "dag": "A"}], "step 1: each op must be"),
])
def test_bill_trace_errors_are_plans(tmp_path, capsys, ops, expected):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"ops": ops}))
    errors = []
    for cmd in ("plan", "bill"):
        out = tmp_path / f"{cmd}.csv"
        assert main([cmd, "--dags", str(FIX / "figure1"), "--trace", str(trace),
                     "--out", str(out)]) == 1
        errors.append(capsys.readouterr().err)
        assert not out.exists()
    assert errors[0] == errors[1]
    assert expected in errors[1] and str(trace) in errors[1] and errors[1].count("\n") == 1


@pytest.mark.parametrize("args, expected", [
    (["--dags", "/nonexistent"], "/nonexistent: is not a directory of dataflow JSON files"),
    (["--costs", "MISSING"], "MISSING: cannot read file"),
    (["--costs", "BAD"], "BAD: cost of type 'SYS' must be a finite number >= 0"),
    (["--costs", "PARTIAL"], "PARTIAL: dag 'A': task 'parse': no cost for task type"),
    (["--run", "RUN"], "RUN: is not a live run directory (no ledger.json)"),
])
def test_bill_bad_input_is_one_line(tmp_path, capsys, args, expected):
    files = {"MISSING": tmp_path / "missing.json", "BAD": tmp_path / "bad.json",
             "PARTIAL": tmp_path / "partial.json", "RUN": tmp_path / "run"}
    files["BAD"].write_text('{"types": {"SYS": -1}}')
    files["PARTIAL"].write_text('{"types": {"SYS": 1}}')
    argv = {"--dags": str(FIX / "figure1"), "--trace": TRACE, "--out": str(tmp_path / "o.csv")}
    argv.update(dict(zip(args[::2], [str(files.get(a, a)) for a in args[1::2]], strict=True)))
    expected = expected.replace(args[1], str(files.get(args[1], args[1])))
    assert main(["bill", *[x for kv in argv.items() for x in kv]]) == 1
    err = capsys.readouterr().err
    assert err.startswith("reuse: error: ") and expected in err and err.count("\n") == 1
    assert not (tmp_path / "o.csv").exists()


def test_bill_costs_and_run_are_exclusive(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["bill", "--dags", str(FIX / "figure1"), "--trace", TRACE, "--out", "o.csv",
              "--costs", "c.json", "--run", "r"])
    assert info.value.code == 2 and "not allowed with" in capsys.readouterr().err


@pytest.fixture(scope="module")
def workload_dirs(tmp_path_factory):
    out = tmp_path_factory.mktemp("dags")
    for w in ("riot", "opmw"):
        assert main(["dags", "--workload", w, "--out", str(out / w)]) == 0
    return out


@pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(), reason=missing("data", "data/ not set up"))
@pytest.mark.parametrize("workload", ["riot", "opmw"])
@pytest.mark.parametrize("trace", ["seq", "rw1", "rw2"])
def test_bill_every_workload_and_trace(workload_dirs, tmp_path, workload, trace):
    dags = workload_dirs / workload
    flows = load_dataflows([dags])
    dump_trace(list(build_trace(workload, trace, flows).ops), tmp_path / "t.json")
    billed = check_against_plan(dags, tmp_path / "t.json", tmp_path, "--no-check")
    assert any(float(r["saving_pct"]) > 0 for r in billed)
