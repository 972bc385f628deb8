from __future__ import annotations

import json

import pytest

from reuse.core.dataflow import canonical_config, load_dataflow, parse_dataflow
from reuse.core.errors import DataflowError


def flow(tasks, streams, dag="d"):
    return {"id": dag, "tasks": [{"id": i, "type": t, "config": c} for i, t, c in tasks],
            "streams": streams}


def test_sources_sinks_and_order():
    f = parse_dataflow(flow([("a", "S", "source"), ("b", "X", 1), ("c", "Y", 2), ("d", "Z", 3)],
                            [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]))
    assert f.sources == ("a",) and f.sinks == ("d",)
    pos = {t: i for i, t in enumerate(f.order)}
    assert all(pos[u] < pos[d] for u, d in f.streams)
    assert f.parents["d"] == ("b", "c")


def test_config_equality_ignores_key_order():
    assert canonical_config({"a": 1, "b": {"y": 2, "x": [1]}}) == \
        canonical_config({"b": {"x": [1], "y": 2}, "a": 1})
    assert canonical_config({"a": 1}) != canonical_config({"a": 1.5})


@pytest.mark.parametrize("data, expected", [
    ([], "must be a JSON object"),
    ({"tasks": [], "streams": []}, "missing field 'id'"),
    ({"id": "d", "streams": []}, "missing field 'tasks'"),
    ({"id": "d", "tasks": [{"id": "a", "type": "S"}], "streams": []}, "task 'a': task is missing field 'config'"),
    ({"id": "d", "tasks": [{"id": "a", "config": 1}], "streams": []}, "missing field 'type'"),
    (flow([("a", "S", 1), ("a", "T", 1)], []), "task 'a': duplicate task id"),
    (flow([("a", "S", 1)], [["a", "zz"]]), "task 'zz': stream ['a', 'zz'] names an unknown task"),
    (flow([("a", "S", 1)], [["a", "a"]]), "self-loop"),
    (flow([("a", "S", 1), ("b", "T", 1), ("c", "U", 1)], [["a", "b"], ["b", "c"], ["c", "b"]]),
     "has a cycle: "),
    (flow([("a", "S", 1)], [["a"]]), "must be a pair of task ids"),
    (flow([], []), "has no tasks"),
    ({"id": "d", "tasks": [{"id": "a", "type": "S", "config": float("nan")}], "streams": []},
     "not plain JSON"),
])
def test_bad_dataflows_name_the_problem(data, expected):
    with pytest.raises(DataflowError) as info:
        parse_dataflow(data, source="x.json")
    msg = str(info.value)
    assert expected in msg and msg.startswith("x.json") and "\n" not in msg


def test_cycle_message_names_the_cycle():
    with pytest.raises(DataflowError, match=r"b -> c -> b|c -> b -> c"):
        parse_dataflow(flow([("a", "S", 1), ("b", "T", 1), ("c", "U", 1)],
                            [["a", "b"], ["b", "c"], ["c", "b"]]))


def test_load_reports_file_and_json_position(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"id": "x",\n "tasks": [}')
    with pytest.raises(DataflowError, match=r"bad.json: not JSON: .* line 2"):
        load_dataflow(p)
    with pytest.raises(DataflowError, match="cannot read file"):
        load_dataflow(tmp_path / "missing.json")


def test_round_trip(tmp_path):
    data = flow([("a", "S", "source"), ("b", "X", {"k": [1, 2]})], [["a", "b"]])
    p = tmp_path / "d.json"
    p.write_text(json.dumps(data))
    f = load_dataflow(p)
    assert parse_dataflow(f.to_dict()) == f
