"""Fuzzing the core's doors (issue 34, item 3): dataflows, traces and the manager's submit.

Generated garbage (random JSON shapes, cycles, unicode and lone-surrogate ids, duplicate ids,
enormous and deeply nested configs, wrong types, NaN/infinities, huge numbers, bytes that are
not UTF-8, truncated text) goes in; what must come out is a :class:`ReuseError` whose text is
one line naming the file or DAG, or a valid result, and never another exception. A refused
submit leaves the manager's state (``to_state()``) as it was.

The number of examples comes from the ``fuzz`` Hypothesis profile (tests/conftest.py: fast by
default, ``REUSE_FUZZ=long`` for thousands); each input is counted per door (``fuzz_count``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.core.dataflow import Dataflow, load_dataflows, parse_dataflow
from reuse.core.errors import ReuseError
from reuse.core.jsondata import MAX_DEPTH, JsonError, loads
from reuse.core.manager import Manager
from reuse.core.matching import EXACT
from reuse.core.state import StateStore
from reuse.core.traces import load_trace
from reuse.tasks import TASK_TYPES
from reuse.tasks.matching import SEMANTIC

FUZZ = settings(settings.get_profile("fuzz"))
FIX = Path(__file__).resolve().parents[1] / "fixtures"

# --- generators ---------------------------------------------------------------------------------

ODD_IDS = ["src", "a", "b", "é", "日本", "a\nb", " ", "\u2028", "\x00", "\ud800", "x\udfff",
           "A", "B", "a" * 5000, "🙂" * 3]
IDS = st.sampled_from(ODD_IDS) | st.text(max_size=10)
TYPES = st.sampled_from(sorted(TASK_TYPES) + ["SYS", "Parse", "T"]) | IDS
LEAVES = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
          | st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -(2 ** 64), "\ud800",
                             "source", "sink"])
          | st.builds(pow, st.just(10), st.sampled_from([400, 5000])))  # repr fails past 4300
JSON = st.recursive(LEAVES, lambda c: st.lists(c, max_size=4)
                    | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=16)


def nest(depth: int, leaf: Any = 1, dicts: bool = False) -> Any:
    """``depth`` levels of lists (or dicts) around ``leaf``, built without recursion."""
    for _ in range(depth):
        leaf = {"k": leaf} if dicts else [leaf]
    return leaf


def cyclic() -> dict[str, Any]:
    d: dict[str, Any] = {"a": 1}
    d["self"] = d
    return d


@st.composite
def configs(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["json"] * 6 + ["deep", "wide", "long", "cyclic", "tuple"]))
    if kind == "deep":
        return nest(draw(st.sampled_from([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 990, 5000])),
                    dicts=draw(st.booleans()))
    if kind == "wide":
        return {f"k{i}": i for i in range(draw(st.sampled_from([1000, 20000])))}
    if kind == "long":
        return "x" * draw(st.sampled_from([10 ** 4, 10 ** 6]))
    if kind == "cyclic":
        return cyclic()
    if kind == "tuple":
        return (1, {2, 3}) if draw(st.booleans()) else {1: "int key", "a": 2}
    return draw(JSON)


@st.composite
def dataflow_dicts(draw: st.DrawFn) -> Any:
    """Mostly dataflow-shaped dicts with a few things wrong (or nothing: some are valid)."""
    n = draw(st.integers(1, 7))
    ids = draw(st.lists(IDS, min_size=n, max_size=n))  # repeats: duplicate ids
    if draw(st.booleans()):
        ids = [f"t{i}" for i in range(n)]
    tasks: list[Any] = [{"id": i, "type": draw(TYPES), "config": draw(configs())} for i in ids]
    ends = st.sampled_from(ids + ["nowhere"])
    streams: list[Any] = draw(st.lists(st.lists(ends, min_size=2, max_size=2), max_size=10))
    if n > 2 and draw(st.booleans()):  # a chain, sometimes closed into a cycle
        streams = [[a, b] for a, b in zip(ids, ids[1:], strict=False)]
        if draw(st.booleans()):
            streams.append([ids[-1], ids[1]])
    d: dict[str, Any] = {"id": draw(IDS), "tasks": tasks, "streams": streams}
    for _ in range(draw(st.integers(0, 2))):
        what = draw(st.sampled_from(["drop", "retype", "task-drop", "task-retype", "stream",
                                     "extra"]))
        if what == "drop":
            d.pop(draw(st.sampled_from(["id", "tasks", "streams"])), None)
        elif what == "retype":
            d[draw(st.sampled_from(["id", "tasks", "streams"]))] = draw(JSON)
        elif (what in ("task-drop", "task-retype") and isinstance(d.get("tasks"), list)
              and d["tasks"] and isinstance(d["tasks"][-1], dict)):
            i = len(d["tasks"]) - 1
            if what == "task-drop":
                d["tasks"][i].pop(draw(st.sampled_from(["id", "type", "config"])), None)
            else:
                d["tasks"][i] = draw(JSON) if draw(st.booleans()) else {
                    **d["tasks"][i], draw(st.sampled_from(["id", "type"])): draw(JSON)}
        elif what == "stream" and isinstance(d.get("streams"), list):
            d["streams"].append(draw(JSON))
        else:
            d[draw(st.text(max_size=5))] = draw(JSON)
    if draw(st.integers(0, 19)) == 0:
        return draw(JSON)  # not even an object
    return d


@st.composite
def json_texts(draw: st.DrawFn, shaped: st.SearchStrategy[Any]) -> bytes:
    """File contents: a drawn value as JSON (NaN and all), or text garbage of several kinds."""
    kind = draw(st.sampled_from(["value"] * 5 + ["truncated", "bytes", "deep", "deep-config",
                                                  "bigint", "bigfloat", "nan", "bom", "empty"]))
    if kind in ("value", "truncated"):
        value = draw(shaped)
        try:
            text = json.dumps(value, ensure_ascii=draw(st.booleans()))
        except (ValueError, TypeError, RecursionError):  # cyclic, too deep, a huge int
            text = "[" * 3000 + "]" * 3000
        raw = text.encode("utf-8", "surrogatepass")  # a lone surrogate: not UTF-8
        if kind == "truncated":
            raw = raw[:draw(st.integers(0, max(0, len(raw) - 1)))]
        return raw
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "deep":
        n = draw(st.sampled_from([MAX_DEPTH, MAX_DEPTH + 1, 900, 10 ** 5]))
        return (("[" * n + "]" * n) if draw(st.booleans()) else '{"a":' * n + "1" + "}" * n
                ).encode()
    if kind == "deep-config":
        n = draw(st.sampled_from([MAX_DEPTH - 5, MAX_DEPTH + 5, 2000, 10 ** 5]))
        return ('{"id":"d","tasks":[{"id":"a","type":"T","config":' + "[" * n + "]" * n
                + '}],"streams":[]}').encode()
    if kind == "bigint":
        return ('{"id":"d","tasks":[{"id":"a","type":"T","config":' + "9" * 5000
                + '}],"streams":[], "ops":[' + "1" * 4400 + "]}").encode()
    if kind == "bigfloat":
        return b'{"id":"d","tasks":[{"id":"a","type":"T","config":1e999}],"streams":[]}'
    if kind == "nan":
        token = draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))
        return ('{"id":"d","tasks":[{"id":"a","type":"T","config":' + token
                + '}],"streams":[],"ops":[' + token + "]}").encode()
    if kind == "bom":
        return b"\xef\xbb\xbf" + json.dumps({"ops": []}).encode()
    return b""


@st.composite
def trace_values(draw: st.DrawFn) -> Any:
    ops = draw(st.lists(st.fixed_dictionaries({"op": st.sampled_from(["submit", "remove"])
                                               | JSON, "dag": IDS | JSON}) | JSON, max_size=8))
    return {"ops": ops} if draw(st.integers(0, 5)) else draw(JSON)


def assert_one_line(exc: ReuseError, *names: str) -> None:
    text = str(exc)
    assert text and "\n" not in text and "\r" not in text
    assert len(text) < 2000, text[:200]
    for name in names:
        assert name in text


# --- the doors ----------------------------------------------------------------------------------

@FUZZ
@given(data=dataflow_dicts())
def test_parse_dataflow_never_crashes(data: Any, fuzz_count: Any) -> None:
    fuzz_count("parse_dataflow (dicts)")
    try:
        flow = parse_dataflow(data, source="gen.json")
    except ReuseError as exc:
        assert_one_line(exc, "gen.json")
        return
    assert isinstance(flow, Dataflow) and len(flow.order) == len(flow.tasks)
    assert parse_dataflow(json.loads(json.dumps(flow.to_dict()))) == flow  # round trip


@FUZZ
@given(raw=json_texts(dataflow_dicts()))
def test_load_dataflow_file_never_crashes(raw: bytes, fuzz_count: Any,
                                          tmp_path_factory: Any) -> None:
    fuzz_count("dataflow files (load_dataflow)")
    path = tmp_path_factory.mktemp("flow") / "gen.json"
    path.write_bytes(raw)
    try:
        load_dataflows([path])
    except ReuseError as exc:
        assert_one_line(exc, str(path))
    assert path.read_bytes() == raw


@FUZZ
@given(raw=json_texts(trace_values()))
def test_load_trace_never_crashes(raw: bytes, fuzz_count: Any, tmp_path_factory: Any) -> None:
    fuzz_count("trace files (load_trace)")
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    path.write_bytes(raw)
    try:
        ops = load_trace(path)
    except ReuseError as exc:
        assert_one_line(exc, str(path))
        return
    assert all(o.op in ("submit", "remove") and isinstance(o.dag, str) for o in ops)


def _figure1_manager(match: Any) -> Manager:
    m = Manager(match=match)
    for f in load_dataflows([FIX / "figure1"])[:2]:  # A and B: a shared prefix
        m.submit(f)
    return m


MANAGERS = {"exact": _figure1_manager(EXACT), "semantic": _figure1_manager(SEMANTIC)}


@FUZZ
@given(data=dataflow_dicts() | st.builds(lambda f, i: {**f, "id": i},
                                         st.sampled_from([json.loads(p.read_text()) for p in
                                                          sorted((FIX / "figure1").glob("*.json"))]),
                                         st.sampled_from(["A", "B", "Z"])),
       policy=st.sampled_from(sorted(MANAGERS)))
def test_refused_submit_changes_nothing(data: Any, policy: str, fuzz_count: Any) -> None:
    """Dicts into the manager's submit (parsed as :func:`reuse.live.engine.as_dataflow` and
    ``reuse submit`` parse them): a refusal is one line and leaves the state as it was; an
    accepted one is removed again, leaving the state as it was (but for the running-DAG id
    counter)."""
    fuzz_count("Manager.submit (dicts)")
    m = MANAGERS[policy]
    before = json.dumps(m.to_state(), sort_keys=True)
    try:
        flow = parse_dataflow(data)
        m.submit(flow)
    except ReuseError as exc:
        assert_one_line(exc)
        assert json.dumps(m.to_state(), sort_keys=True) == before
        return
    m.remove(flow.id)
    after = m.to_state()
    after["next_group"] = json.loads(before)["next_group"]  # running-DAG ids are never reused
    assert json.dumps(after, sort_keys=True) == before


@FUZZ
@given(snapshot=json_texts(JSON), journal=st.lists(json_texts(JSON), max_size=3))
def test_state_store_damage_is_one_line(snapshot: bytes, journal: list[bytes], fuzz_count: Any,
                                        tmp_path_factory: Any) -> None:
    """``reuse submit/status --state DIR`` over a damaged snapshot or journal."""
    fuzz_count("state store (snapshot + journal)")
    d = tmp_path_factory.mktemp("state")
    (d / "snapshot.json").write_bytes(snapshot)
    (d / "journal.jsonl").write_bytes(b"\n".join(j.replace(b"\n", b" ") for j in journal))
    files = {p.name: p.read_bytes() for p in d.iterdir()}
    try:
        StateStore(d).open()
    except ReuseError as exc:
        assert_one_line(exc)
        assert {p.name: p.read_bytes() for p in d.iterdir()} == files


def test_deep_json_is_one_line_not_recursion() -> None:
    """The bug that started issue 34's item: 10^5 nested arrays raised RecursionError."""
    for text in ("[" * 10 ** 5 + "]" * 10 ** 5, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)):
        try:
            loads(text)
        except JsonError as exc:
            assert str(exc) == f"not JSON: nested deeper than {MAX_DEPTH} levels"
        else:
            raise AssertionError("deep JSON was accepted")
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
