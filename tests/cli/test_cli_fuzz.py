"""Fuzzing ``reuse validate`` and ``reuse plan`` (issue 34, item 3).

Generated dataflow and trace files (random JSON shapes, cycles, unicode and lone-surrogate
ids, duplicate ids, enormous and deeply nested configs, wrong types, NaN, huge numbers, bytes
that are not UTF-8, truncated text) go through the CLI's ``main`` in-process; the answer must
be exit 0 with its ``ok``/summary line, or exit 1 with exactly one ``reuse: error:`` line naming
the file, and no input or output file changed. A handful run as real subprocesses, to show no
traceback reaches stderr.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.cli import main
from reuse.core.jsondata import MAX_DEPTH

FUZZ = settings(settings.get_profile("fuzz"))
FIX = Path(__file__).resolve().parents[1] / "fixtures"
FIGURE1 = {p.stem: json.loads(p.read_text()) for p in sorted((FIX / "figure1").glob("*.json"))}

ODD = ["A", "B", "src", "é", "日本", "a\nb", "\u2028", "\x00", "\ud800", "x" * 3000, ""]
IDS = st.sampled_from(ODD) | st.text(max_size=8)
LEAVES = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
          | st.sampled_from([math.nan, math.inf, "\ud800", "source"]))
JSON = st.recursive(LEAVES, lambda c: st.lists(c, max_size=4)
                    | st.dictionaries(st.text(max_size=6), c, max_size=4), max_leaves=12)


@st.composite
def flow_values(draw: st.DrawFn) -> Any:
    """A figure-1 dataflow with something changed, or random JSON."""
    d = json.loads(json.dumps(FIGURE1[draw(st.sampled_from(sorted(FIGURE1)))]))
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["id", "task", "config", "stream", "cycle", "dup",
                                     "drop", "deep", "wide", "random"]))
        if not isinstance(d, dict):
            break
        tasks, streams = d.get("tasks"), d.get("streams")
        if what == "id":
            d["id"] = draw(IDS | JSON)
        elif what == "task" and isinstance(tasks, list) and tasks:
            t = tasks[draw(st.integers(0, len(tasks) - 1))]
            if isinstance(t, dict):
                t[draw(st.sampled_from(["id", "type", "config"]))] = draw(IDS | JSON)
        elif what == "config" and isinstance(tasks, list) and tasks:
            t = tasks[draw(st.integers(0, len(tasks) - 1))]
            if isinstance(t, dict):
                t["config"] = draw(JSON)
        elif what == "stream" and isinstance(streams, list):
            streams.append(draw(st.lists(IDS, min_size=0, max_size=3) | JSON))
        elif what == "cycle" and isinstance(streams, list) and streams:
            s = streams[draw(st.integers(0, len(streams) - 1))]
            if isinstance(s, list):
                streams.append(list(reversed(s)))
        elif what == "dup" and isinstance(tasks, list) and tasks:
            tasks.append(tasks[0])
        elif what == "drop":
            d.pop(draw(st.sampled_from(["id", "tasks", "streams"])), None)
        elif what == "deep" and isinstance(tasks, list) and tasks:
            n = draw(st.sampled_from([MAX_DEPTH - 4, MAX_DEPTH + 1, 5000]))
            t = tasks[-1]
            if isinstance(t, dict):
                t["config"] = "DEEP"
                return json.dumps(d).replace('"DEEP"', "[" * n + "]" * n)
        elif what == "wide" and isinstance(tasks, list) and tasks:
            t = tasks[-1]
            if isinstance(t, dict):
                t["config"] = {f"k{i}": "v" * 10 for i in range(draw(st.sampled_from([10, 5000])))}
        elif what == "random":
            d = draw(JSON)
    return d


@st.composite
def files(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> bytes:
    """A drawn value as a file (NaN tokens, lone surrogates as invalid UTF-8 included), cut
    short, or raw garbage."""
    kind = draw(st.sampled_from(["value"] * 6 + ["cut", "bytes", "deep", "bigint"]))
    if kind == "bytes":
        return draw(st.binary(max_size=100))
    if kind == "deep":  # past MAX_DEPTH and past Python's recursion limit
        return b"[" * 3000 + b"]" * 3000
    if kind == "bigint":
        return b'{"ops": [' + b"7" * 5000 + b'], "id": ' + b"1" * 4400 + b"}"
    value = draw(values)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=draw(st.booleans()))
    raw = text.encode("utf-8", "surrogatepass")
    if kind == "cut":
        raw = raw[:draw(st.integers(0, max(0, len(raw) - 1)))]
    return raw


@st.composite
def trace_values(draw: st.DrawFn) -> Any:
    ops = draw(st.lists(st.fixed_dictionaries(
        {"op": st.sampled_from(["submit", "remove"]), "dag": st.sampled_from(sorted(FIGURE1))
         | IDS}) | JSON, max_size=8))
    if draw(st.integers(0, 3)) == 0:
        return draw(JSON)
    return {"ops": ops, "meta": draw(JSON)}


def one_error_line(err: str, name: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err[:500]
    assert lines[0].startswith("reuse: error: ") and name in lines[0], lines[0][:300]
    assert len(lines[0]) < 2000


def snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@FUZZ
@given(raw=files(flow_values()), dedup=st.booleans())
def test_validate_garbage(raw: bytes, dedup: bool, capsys: Any, tmp_path_factory: Any,
                          fuzz_count: Any) -> None:
    fuzz_count("reuse validate (dataflow files)")
    d = tmp_path_factory.mktemp("validate")
    path = d / "gen.json"
    path.write_bytes(raw)
    capsys.readouterr()
    rc = main(["validate", *(["--dedup"] if dedup else []), str(path)])
    out, err = capsys.readouterr()
    if rc == 0:
        assert err == "" and out.startswith(f"ok {path}: dag ") and out.count("\n") == 1
    else:
        assert rc == 1 and out == ""
        one_error_line(err, str(path))
    assert snapshot(d) == {"gen.json": raw}


@FUZZ
@given(flow=files(flow_values()), trace=files(trace_values()),
       which=st.sampled_from(["flow", "trace", "both"]),
       match=st.sampled_from(["exact", "semantic"]))
def test_plan_garbage(flow: bytes, trace: bytes, which: str, match: str, capsys: Any,
                      tmp_path_factory: Any, fuzz_count: Any) -> None:
    """``reuse plan`` over figure 1's DAGs plus a generated one, with its trace or a generated
    one: one line and no CSV written, or a CSV."""
    fuzz_count("reuse plan (dataflow + trace files)")
    d = tmp_path_factory.mktemp("plan")
    dags = d / "dags"
    shutil.copytree(FIX / "figure1", dags)
    if which != "trace":
        (dags / "zz-gen.json").write_bytes(flow)
    trace_path = d / "trace.json"
    if which == "flow":
        shutil.copy(FIX / "figure1-trace.json", trace_path)
    else:
        trace_path.write_bytes(trace)
    before = snapshot(d)
    out_csv = d / "out" / "plan.csv"
    (d / "out").mkdir()
    capsys.readouterr()
    rc = main(["plan", "--dags", str(dags), "--trace", str(trace_path), "--out", str(out_csv),
               "--match", match])
    out, err = capsys.readouterr()
    if rc == 0:
        assert err == "" and out.count("\n") == 1 and out_csv.exists()
    else:
        assert rc == 1 and out == ""
        one_error_line(err, str(d))
        assert not out_csv.exists()
    assert {k: v for k, v in snapshot(d).items() if not k.startswith("out")} == before


SUBPROCESS_CASES = {
    "deep-array": b"[" * 10 ** 5 + b"]" * 10 ** 5,
    "deep-config": (b'{"id":"d","tasks":[{"id":"a","type":"T","config":' + b"[" * 5000
                    + b"]" * 5000 + b'}],"streams":[]}'),
    "bigint": b'{"id":"d","tasks":[{"id":"a","type":"T","config":' + b"9" * 5000
              + b'}],"streams":[]}',
    "nan": b'{"id":"d","tasks":[{"id":"a","type":"T","config":NaN}],"streams":[]}',
    "surrogate-id": b'{"id":"\\ud800","tasks":[{"id":"a","type":"T","config":1}],"streams":[]}',
    "surrogate-config": b'{"id":"d","tasks":[{"id":"a","type":"T","config":"\\udfff"}],'
                        b'"streams":[]}',
    "not-utf8": b'{"id":"\xff\xfe"}',
}


def test_validate_subprocess_no_traceback(tmp_path: Path, fuzz_count: Any) -> None:
    """Each of these printed a traceback before issue 34 (RecursionError, ValueError,
    UnicodeEncodeError); now, in one real process, one line each on stderr and exit 1."""
    paths = []
    for case in sorted(SUBPROCESS_CASES):
        fuzz_count("reuse validate (subprocess)")
        paths.append(tmp_path / f"{case}.json")
        paths[-1].write_bytes(SUBPROCESS_CASES[case])
    r = subprocess.run([sys.executable, "-m", "reuse", "validate", *map(str, paths)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == len(paths)
    for line, path in zip(lines, paths, strict=True):
        one_error_line(line + "\n", str(path))


def test_plan_subprocess_no_traceback(tmp_path: Path, fuzz_count: Any) -> None:
    fuzz_count("reuse plan (subprocess)")
    dags = tmp_path / "dags"
    shutil.copytree(FIX / "figure1", dags)
    trace = tmp_path / "trace.json"
    trace.write_bytes(b'{"ops": [' + b"[" * 10 ** 5 + b"]" * 10 ** 5 + b"]}")
    r = subprocess.run([sys.executable, "-m", "reuse", "plan", "--dags", str(dags), "--trace",
                        str(trace), "--out", str(tmp_path / "p.csv")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    one_error_line(r.stderr, str(trace))
    assert not (tmp_path / "p.csv").exists()
