"""The CLI contract: clean one-line errors, the plan CSV, persistence across processes."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reuse.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reuse", *args], capture_output=True, text=True,
                          timeout=120)


def write(tmp_path: Path, name: str, content) -> Path:
    p = tmp_path / name
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    return p


BAD = {
    "notjson.json": ("{oops", "not JSON"),
    "missing.json": ({"id": "m", "tasks": [{"id": "a", "type": "T"}], "streams": []},
                     "dag 'm': task 'a': task is missing field 'config'"),
    "dup.json": ({"id": "d", "tasks": [{"id": "a", "type": "T", "config": 1}] * 2, "streams": []},
                 "dag 'd': task 'a': duplicate task id"),
    "unknown.json": ({"id": "u", "tasks": [{"id": "a", "type": "T", "config": 1}],
                      "streams": [["a", "b"]]}, "task 'b': stream ['a', 'b'] names an unknown task"),
    "loop.json": ({"id": "l", "tasks": [{"id": "a", "type": "T", "config": 1}],
                   "streams": [["a", "a"]]}, "self-loop"),
    "cycle.json": ({"id": "c", "tasks": [{"id": x, "type": "T" + x, "config": 1} for x in "abc"],
                    "streams": [["a", "b"], ["b", "c"], ["c", "b"]]}, "has a cycle"),
    "notdedup.json": ({"id": "n", "tasks": [{"id": "s", "type": "S", "config": "source"},
                                            {"id": "x", "type": "T", "config": 1},
                                            {"id": "y", "type": "T", "config": 1}],
                       "streams": [["s", "x"], ["s", "y"]]}, "tasks 'x' and 'y' are equivalent"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_validate_bad_input_is_one_clean_line(tmp_path, capsys, name):
    content, expected = BAD[name]
    path = write(tmp_path, name, content)
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"reuse: error: {path}") and expected in err and "\n" not in err


def test_validate_subprocess_has_no_traceback(tmp_path):
    write(tmp_path, "notdedup.json", BAD["notdedup.json"][0])
    r = run("validate", str(tmp_path / "notdedup.json"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1
    r = run("validate", "--dedup", str(tmp_path / "notdedup.json"))
    assert r.returncode == 0 and "2 tasks" in r.stdout


def test_output_into_a_closed_pipe_is_quiet():
    """``reuse validate ... | head -0``: the reader has gone; no error line, SIGPIPE's status."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run([sys.executable, "-m", "reuse", "validate",
                            str(Path(__file__).resolve().parents[1] / "fixtures" / "figure1")],
                           stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert (r.returncode, r.stderr) == (141, "")


def test_plan_figure1_csv(tmp_path):
    out = tmp_path / "out.csv"
    r = run("plan", "--dags", str(FIX / "figure1"), "--trace", str(FIX / "figure1-trace.json"),
            "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(out.open()))
    assert [(r["step"], r["op"], r["dag"], r["default_tasks"], r["reuse_tasks"], r["running_dags"])
            for r in rows] == [("1", "submit", "A", "5", "5", "1"), ("2", "submit", "B", "10", "7", "1"),
                               ("3", "submit", "C", "16", "9", "1"), ("4", "submit", "D", "21", "14", "2"),
                               ("5", "remove", "B", "16", "13", "2")]


@pytest.mark.parametrize("ops, expected", [
    ([{"op": "submit", "dag": "Z"}], "step 1: dag 'Z': unknown DAG id"),
    ([{"op": "remove", "dag": "A"}], "step 1: dag 'A': is removed but not submitted"),
    ([{"op": "submit", "dag": "A"}, {"op": "submit", "dag": "A"}],
     "step 2: dag 'A': is submitted twice while present"),
    ([{"op": "start", "dag": "A"}], "step 1: each op must be"),
])
def test_plan_trace_errors(tmp_path, capsys, ops, expected):
    trace = write(tmp_path, "t.json", {"ops": ops})
    out = tmp_path / "out.csv"
    assert main(["plan", "--dags", str(FIX / "figure1"), "--trace", str(trace),
                 "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert expected in err and str(trace) in err and "\n" not in err
    assert not out.exists()


def test_plan_rejects_a_bad_dag_directory(tmp_path, capsys):
    (tmp_path / "dags").mkdir()
    write(tmp_path / "dags", "x.json", BAD["cycle.json"][0])
    trace = write(tmp_path, "t.json", {"ops": []})
    assert main(["plan", "--dags", str(tmp_path / "dags"), "--trace", str(trace),
                 "--out", str(tmp_path / "o.csv")]) == 1
    assert "has a cycle" in capsys.readouterr().err


def test_persistent_submit_remove_status_across_processes(tmp_path):
    state = str(tmp_path / "state")
    r = run("submit", "--state", state, str(FIX / "figure1" / "A.json"), str(FIX / "figure1" / "B.json"))
    assert r.returncode == 0, r.stderr
    assert "reuse 3" in r.stdout.splitlines()[1]
    r = run("remove", "--state", state, "A")
    assert r.returncode == 0 and "stop 2" in r.stdout
    r = run("status", "--state", state, "--json")
    status = json.loads(r.stdout)
    assert status["submitted"] == ["B"] and status["tasks"] == 5
    r = run("remove", "--state", state, "A")
    assert r.returncode == 1 and r.stderr.strip() == "reuse: error: dag 'A': is not submitted"


def test_run_default_sources_shared_needs_a_query_engine(tmp_path, capsys):
    """``--default-sources shared`` exists for the query-per-DAG engines only: on the shared
    query (the default engine) it is a one-line error before any Spark session starts."""
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "A"}]}))
    out = tmp_path / "o.csv"
    assert main(["run", "--dags", str(FIX / "figure1"), "--trace", str(trace), "--out", str(out),
                 "--mode", "default", "--default-sources", "shared"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("reuse: error: ") and "needs a query-per-DAG engine" in err
    assert err.count("\n") == 1 and not out.exists()


def test_run_match_semantic_needs_reuse(tmp_path, capsys):
    """``reuse run --match semantic`` merges by meaning; Default shares nothing, so asking for
    it there is a one-line error before any Spark session starts (no run directory, no CSV)."""
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "A"}]}))
    out, root = tmp_path / "o.csv", tmp_path / "run"
    assert main(["run", "--dags", str(FIX / "figure1"), "--trace", str(trace), "--out", str(out),
                 "--mode", "default", "--match", "semantic", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert err == "reuse: error: --match semantic needs --mode reuse: Default shares no task\n"
    assert not out.exists() and not root.exists()


def test_plan_match_semantic_merges_what_exact_keeps_apart(tmp_path, capsys):
    dags = tmp_path / "dags"
    dags.mkdir()
    for name, window in (("a", 5), ("b", 5.0)):
        write(dags, f"{name}.json", {"id": name, "tasks": [
            {"id": "src", "type": "SYS", "config": "source"},
            {"id": "bwa", "type": "BlockWindowAverage",
             "config": {"window": window, "fields": ["t", "h"] if name == "a" else ["h", "t"]}},
            {"id": "out", "type": "MQTTPublish", "config": "sink" if name == "a" else {}}],
            "streams": [["src", "bwa"], ["bwa", "out"]]})
    trace = write(tmp_path, "t.json", {"ops": [{"op": "submit", "dag": "a"},
                                             {"op": "submit", "dag": "b"}]})
    tasks = {}
    for match in ("exact", "semantic"):
        out = tmp_path / f"{match}.csv"
        assert main(["plan", "--dags", str(dags), "--trace", str(trace), "--out", str(out),
                     "--match", match]) == 0
        tasks[match] = [r["reuse_tasks"] for r in csv.DictReader(out.open())]
    assert tasks == {"exact": ["3", "5"], "semantic": ["3", "3"]}
    with pytest.raises(SystemExit) as exc:  # a usage error: argparse's choices
        main(["plan", "--dags", str(dags), "--trace", str(trace), "--out", "x.csv",
              "--match", "fuzzy"])
    assert exc.value.code == 2 and "invalid choice: 'fuzzy'" in capsys.readouterr().err


def test_plan_match_semantic_shares_a_wider_filter(tmp_path, capsys):
    """Three tenants filter one parsed stream: the narrow ones read the wide one's output, so
    the wide filter is shared; when its owner leaves, the middle one takes its place (issue
    36), never more tasks than exact."""
    dags = tmp_path / "dags"
    dags.mkdir()
    for name, lo, hi in (("wide", 0, 40), ("mid", 5, 30), ("narrow", 10, 20)):
        write(dags, f"{name}.json", {"id": name, "tasks": [
            {"id": "src", "type": "SYS", "config": "source"},
            {"id": "parse", "type": "SenMLParse", "config": {"fields": ["t"]}},
            {"id": "range", "type": "RangeFilter", "config": {"valid_range": {"t": [lo, hi]}}},
            {"id": "out", "type": "MQTTPublish", "config": {"topic": name}}],
            "streams": [["src", "parse"], ["parse", "range"], ["range", "out"]]})
    trace = write(tmp_path, "t.json", {"ops": [{"op": "submit", "dag": d} for d in
                                             ("wide", "mid", "narrow")]
                                       + [{"op": "remove", "dag": "wide"}]})
    tasks = {}
    for match in ("exact", "semantic"):
        out = tmp_path / f"{match}.csv"
        assert main(["plan", "--dags", str(dags), "--trace", str(trace), "--out", str(out),
                     "--match", match]) == 0
        tasks[match] = [r["reuse_tasks"] for r in csv.DictReader(out.open())]
    # same counts at submit (a residual replaces the narrow filter), and after the wide one
    # leaves (the middle filter is promoted, the narrow one reads it)
    assert tasks == {"exact": ["4", "6", "8", "6"], "semantic": ["4", "6", "8", "6"]}
    assert "3 containment rewrites in 2 submits" in capsys.readouterr().out
