"""The parse family's kernels (SenMLParse, Annotate, CsvToSenML) against their per-event tasks:
on the real RIoTBench streams, and on generated inputs built to reach every fallback to
``process`` (payloads orjson reads unlike json, shapes the batch path does not read).

Every equivalence goes through ``run_both`` (slices through the kernel, ``process`` or a
restart, with generated cuts), bit for bit (``rel`` is 0). Beside it, the kernels' columns
are typed as ``Batch.from_events`` types the per-event outputs, which the next kernel reads.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.base import TaskError
from reuse.tasks.columnar import Batch, kernel_for
from reuse.tasks.columnar import parse as kernels
from reuse.tasks.columnar.equivalence import Mismatch, compare, run_both
from reuse.tasks.sources import replay

STEPS = st.lists(st.sampled_from(["kernel", "event", "restart"]), max_size=6)


def cuts(n: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, n), max_size=5)


def same_types(make: Any, events: list[dict]) -> None:
    """The kernel's output columns have the dtypes ``from_events`` gives the per-event
    outputs (values are run_both's to compare)."""
    task, ref_task = make(), make()
    ref = Batch.from_events([o for e in events for o in ref_task.process(dict(e))])
    got = kernel_for(task).run(Batch.from_events([dict(e) for e in events]))
    assert {k: c.dtype for k, c in got.cols.items()} == {k: c.dtype for k, c in ref.cols.items()}


def raises_alike(make: Any, events: list[dict]) -> bool:
    """Whether ``process`` raises on these events; if so, the kernel raises the same error."""
    task = make()
    try:
        for e in events:
            task.process(dict(e))
    except Exception as per_event:
        with pytest.raises(type(per_event), match=re.escape(str(per_event))):
            kernel_for(make()).run(Batch.from_events([dict(e) for e in events]))
        return True
    return False


# --- real streams ------------------------------------------------------------------------------

SOURCES = ("SYS", "TAXI", "FIT")


@pytest.fixture(scope="module")
def streams(configs, data_dir):
    """Per source: its first events (looped: FIT has 45 lines), their observations, the joined
    messages and the annotated ones: what each kernel reads in the workload."""
    out = {}
    for src in SOURCES:
        cfg = configs[src]
        events = list(replay(src, data_dir, limit=240, loop=True))
        parse = make_task("SenMLParse", cfg["SenMLParse"])
        obs = [o for e in events for o in parse.process(dict(e))]
        join = make_task("Join", cfg["Join"])
        msgs = [m for o in obs for m in join.process(o)]
        ann = make_task("Annotate", cfg["Annotate"], data_dir=data_dir)
        out[src] = {"events": events, "obs": obs, "msgs": msgs,
                    "annotated": [a for m in msgs for a in ann.process(m)]}
    return out


@settings(max_examples=12)
@given(st.sampled_from(SOURCES), cuts(240), STEPS)
def test_senml_parse_on_real_streams(streams, configs, src, at, steps):
    events = streams[src]["events"]
    out = run_both(lambda: make_task("SenMLParse", configs[src]["SenMLParse"]), events, at, steps)
    assert len(out.reference) > len(events)  # the real stream fans out


@pytest.mark.parametrize("src", SOURCES)
def test_real_columns_are_typed_as_per_event(streams, configs, data_dir, src):
    cfg = configs[src]
    same_types(lambda: make_task("SenMLParse", cfg["SenMLParse"]), streams[src]["events"])
    same_types(lambda: make_task("Annotate", cfg["Annotate"], data_dir=data_dir),
               streams[src]["obs"])
    same_types(lambda: make_task("CsvToSenML", cfg["CsvToSenML"]), streams[src]["annotated"])


@settings(max_examples=12)
@given(st.sampled_from(SOURCES), st.sampled_from(["obs", "msgs"]), cuts(400), STEPS)
def test_annotate_on_real_streams(streams, configs, data_dir, src, kind, at, steps):
    run_both(lambda: make_task("Annotate", configs[src]["Annotate"], data_dir=data_dir),
             streams[src][kind][:400], at, steps)


@settings(max_examples=12)
@given(st.sampled_from(SOURCES), cuts(200), STEPS)
def test_csv_to_senml_on_real_streams(streams, configs, src, at, steps):
    out = run_both(lambda: make_task("CsvToSenML", configs[src]["CsvToSenML"]),
                   streams[src]["annotated"][:200], at, steps)
    assert all(json.loads(o["payload"])["e"] for o in out.candidate)


# --- generated SenML ---------------------------------------------------------------------------

NAMES = ["id", "t", "h", "lat", "timestamp", "other"]
# numbers json and orjson read alike, and ones they do not (beyond 64 bits, NaN, infinities)
NUMBERS = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                    st.integers(-2**70, 2**70), st.sampled_from([2**63, 2**64, -2**63 - 1,
                                                                 10**30, 2.0**70]))
TEXTS = st.one_of(st.sampled_from(["8", " 8.5 ", "1_0", "nan", "-inf", "1e400", "abc", "",
                                   "\u00e9", "\ud800"]),
                  st.text(st.characters(exclude_categories=["Cs"]), max_size=4))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXTS)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=2),
                   st.dictionaries(st.sampled_from(["a", "b"]), SCALARS, max_size=2))


@st.composite
def entries(draw: Any) -> dict[str, Any]:
    e: dict[str, Any] = {}
    name = draw(st.one_of(st.sampled_from(NAMES), st.none(), st.integers(0, 2), st.booleans(),
                          st.sampled_from([1.0, 2.0**70]), st.just(["t"])))
    if name is not None or draw(st.booleans()):
        e["n"] = name
    for key in draw(st.lists(st.sampled_from(["v", "v", "sv", "bv", "u"]), max_size=3,
                             unique=True)):
        e[key] = draw(VALUES if draw(st.integers(0, 4)) == 0 else SCALARS)
    return e


@st.composite
def payloads(draw: Any) -> Any:
    es = draw(st.lists(entries(), max_size=6))
    if es and draw(st.integers(0, 9)) == 0:  # an entry that is not an object
        es[draw(st.integers(0, len(es) - 1))] = draw(VALUES)
    msg: Any = {"e": es}
    if draw(st.booleans()):
        msg["bt"] = draw(st.one_of(SCALARS, st.just(1422748800000)))
    if draw(st.integers(0, 9)) == 0:
        msg = draw(st.one_of(VALUES, st.just({"x": 1}), st.just({"e": {"n": "t"}})))
    text = json.dumps(msg)
    form = draw(st.sampled_from(["plain", "plain", "plain", "prefix", "spaces", "dup", "cut",
                                 "deep", "garbage", "nonstr"]))
    if form == "prefix":
        return draw(st.sampled_from(["1422748800000,", "12,", " 7 ,", "x,", "1_0,"])) + text
    if form == "spaces":
        return f" \n{text}\t "
    if form == "dup":  # a repeated key: the last one counts, in both parsers
        return text.replace('"e": ', '"e": [], "e": ', 1)
    if form == "cut":
        return text[:draw(st.integers(0, len(text)))]
    if form == "deep":
        depth = draw(st.sampled_from([5, 900, 1100]))
        return text[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}" if text.startswith("{") \
            else text
    if form == "garbage":
        return draw(st.text(max_size=20))
    if form == "nonstr":
        return draw(st.one_of(st.none(), st.integers()))
    return text


@st.composite
def parse_configs(draw: Any) -> dict[str, Any]:
    names = st.sampled_from(NAMES + [1, True] if draw(st.integers(0, 4)) == 0 else NAMES)
    fields = draw(st.lists(names, max_size=5))
    meta = draw(st.lists(names, max_size=4))
    return {"id_field": draw(names), "meta_fields": meta, "fields": fields}


def parse_events(pays: list[Any]) -> list[dict[str, Any]]:
    events = []
    for i, p in enumerate(pays):
        e: dict[str, Any] = {"src": "SYS", "seq": i, "ts": 100 * i, "payload": p}
        if i % 7 == 3:
            del e["ts"]
        events.append(e)
    return events


@settings(max_examples=150)
@given(parse_configs(), st.lists(payloads(), max_size=12), cuts(12), STEPS)
def test_senml_parse_on_generated_payloads(cfg, pays, at, steps):
    """Malformed payloads, missing fields, str, bool, null and container values, "v" as
    strings, missing meta, NaN literals, integers beyond 64 bits, repeated keys, deep
    nesting: the kernel gives what process gives, or raises what it raises."""
    events = parse_events(pays)

    def make():
        return make_task("SenMLParse", cfg)

    bad = next((i for i, p in enumerate(pays) if not isinstance(p, str)), None)
    if bad is not None:  # process raises at the first event without a str payload
        with pytest.raises(TaskError, match=f"seq={bad} has no str payload"):
            kernel_for(make()).run(Batch.from_events(events))
        events = [e for e in events if isinstance(e["payload"], str)]
    run_both(make, events, at, steps)
    same_types(make, events)


def test_senml_parse_reads_tricky_payloads_exactly():
    """Each reason the kernel hands a payload to process, once, beside plain ones."""
    cfg = {"id_field": "id", "meta_fields": ["id", "timestamp"], "fields": ["t", "h"]}
    plain = '{"e":[{"n":"id","sv":"s1"},{"n":"t","v":"8"},{"n":"h","v":1}],"bt":5}'
    tricky = [
        '{"e":[{"n":"t","v":NaN}]}',                      # json reads NaN, orjson does not
        '{"e":[{"n":"t","sv":18446744073709551616}]}',    # beyond 64 bits: orjson makes a float
        '{"e":[{"n":"t","v":"1"}],"bt":100000000000000000000}',
        '{"e":[{"n":"t","sv":"\\ud800"}]}',               # a lone surrogate
        '{"e":[{"n":"t","v":[1]}]}',                      # a list as value
        '{"e":[{"n":["t"],"v":1}]}',                      # a list as name: no observation
        '{"e":[{"n":"t","v":1},{"n":"t","v":2}]}',        # the last of equal names
        '{"e":[{"n":"t","bv":0},{"n":"h"}]}',
        '{"e":{"n":"t"}}', '[1]', '12,{"e":[{"n":"t","v":"2"}]}', 'x,{}', '{"x":1}',
        '{"e":[{"n":"t","v":1}], "x": ' + "[" * 950 + "]" * 950 + "}",
    ]
    events = parse_events([plain, *tricky, plain])
    out = run_both(lambda: make_task("SenMLParse", cfg), events, [])
    assert [o["value"] for o in out.candidate if o["seq"] == 0] == [8.0, 1.0]
    only_v = ['{"e":[{"n":"t","v":1e19}]}', '{"e":[{"n":"t","v":2.5},{"n":"h","v":"x"}]}']
    run_both(lambda: make_task("SenMLParse", cfg), parse_events(only_v), [])


def test_configs_and_batches_process_cannot_read_raise_as_process_does():
    """A name that cannot key a dict, a schema row that is not [name, unit, kind], a batch
    without payloads, a meta that is not a dict: the same error from the kernel."""
    ev = {"seq": 0, "payload": '{"e":[{"n":"t","v":"1"}]}'}
    cases = [(make_task("SenMLParse", {"id_field": ["id"], "fields": ["t"]}), ev),
             (make_task("SenMLParse", {"id_field": "id", "fields": ["t"]}), {"seq": 0}),
             (make_task("CsvToSenML", {"id_field": "id", "schema": [["t", "far"]]}), ev),
             (make_task("CsvToSenML", {"id_field": "id", "schema": [["t", "far", "v"]]}),
              {"seq": 0, "meta": None})]
    for task, event in cases:
        with pytest.raises((TypeError, ValueError, TaskError)) as per_event:
            task.process(dict(event))
        with pytest.raises(type(per_event.value), match=re.escape(str(per_event.value))):
            kernel_for(task).run(Batch.from_events([dict(event)]))


def test_a_mutated_kernel_is_caught(monkeypatch):
    """The check is not vacuous: a kernel that trusted orjson with integers beyond 64 bits
    (the bound it checks set to infinity) gives another string for one, and run_both says so.
    """
    cfg = {"id_field": "id", "meta_fields": [], "fields": ["t"]}
    events = parse_events(['{"e":[{"n":"t","sv":18446744073709551616}]}'])
    run_both(lambda: make_task("SenMLParse", cfg), events, [])
    monkeypatch.setattr(kernels, "_BIG", math.inf)
    with pytest.raises(Mismatch, match="18446744073709551616"):
        run_both(lambda: make_task("SenMLParse", cfg), events, [])


# the premise of the batch path: where orjson reads a text and the kernel does not send it to
# process, json.loads reads it alike (types, dict order and float bits included)
JSONISH = st.lists(st.sampled_from(list('{}[]:,"\\ 0123456789-+.eEtruefalsnNaINfiy\t\n')
                                   + ['"a"', '"\\ud800"', "1e400", "18446744073709551616",
                                      '"\\u00e9"']), max_size=24).map("".join)


@settings(max_examples=400)
@given(st.one_of(JSONISH, NUMBERS.map(repr), st.floats().map(json.dumps)))
def test_orjson_reads_what_json_reads_where_the_kernel_trusts_it(text):
    try:
        fast = orjson.loads(text)
    except ValueError:
        return  # the kernel sends it to process
    if re.search(r"[0-9]{19}", text):
        return  # an integer that may pass 64 bits: the kernel checks the float it becomes
    compare(json.loads(text), fast)
    assert repr(json.loads(text)) == repr(fast)


# --- generated Annotate inputs ----------------------------------------------------------------

SENSORS = st.one_of(st.sampled_from(["ci4lr75sl000802ypo4qrcjda23", "ci4lr75v6000a02ypa256zigk27",
                                     "unknown", "None", "1"]), st.none(), st.integers(0, 2),
                    st.floats(0, 2), st.booleans())


@st.composite
def annotate_events(draw: Any) -> list[dict[str, Any]]:
    """Observations and joined messages, some sharing one ``meta`` (or ``fields``) dict as a
    message's observations do, with and without ``sensor`` and ``meta``."""
    out = []
    for i in range(draw(st.integers(0, 10))):
        shared = draw(st.dictionaries(st.sampled_from(["a", "location", "timestamp"]), SCALARS,
                                      max_size=3))
        sensor = draw(SENSORS)
        for _ in range(draw(st.integers(1, 3))):
            e: dict[str, Any] = {"src": "SYS", "seq": i, "ts": i}
            if draw(st.integers(0, 5)):
                e["sensor"] = sensor
            if draw(st.booleans()):
                e["fields"] = shared
                if draw(st.booleans()):
                    e["meta"] = {"m": 1}
            else:
                if draw(st.integers(0, 4)):
                    e["meta"] = shared
                e["obs"] = draw(st.sampled_from(["t", "h"]))
                if draw(st.integers(0, 4)):
                    e["value"] = draw(SCALARS)
            out.append(e)
    return out


@settings(max_examples=100)
@given(st.sampled_from([["location", "type"], ["location", "type", "extra"], [],
                        ["x", "x"]]), annotate_events(), cuts(30), STEPS)
def test_annotate_on_generated_events(data_dir, fields, events, at, steps):
    """Known and unknown sensors (and ones whose str is a known id), observations and joined
    messages mixed, meta and sensor missing, more fields than the file has values."""

    def make():
        return make_task("Annotate", {"file": "city-metadata.txt", "fields": fields},
                         data_dir=data_dir)

    out = run_both(make, events, at, steps)
    same_types(make, events)
    assert len(out.candidate) == len(events)


def test_annotate_shares_a_dict_only_where_the_input_did(data_dir):
    """The observations of one message share their annotated meta; rows without a meta, or
    with another one, get their own (so no output aliases another the per-event task kept
    apart)."""
    task = make_task("Annotate", {"file": "city-metadata.txt", "fields": ["location"]},
                     data_dir=data_dir)
    meta = {"a": 1}
    events = [{"sensor": "s", "meta": meta, "obs": "t"}, {"sensor": "s", "meta": meta, "obs": "h"},
              {"sensor": "s", "obs": "t"}, {"sensor": "s", "obs": "h"},
              {"sensor": "s", "meta": {"a": 1}, "obs": "t"}]
    out = kernel_for(task).run(Batch.from_events(events)).cols["meta"]
    assert out[0] is out[1]
    assert len({id(m) for m in out[1:]}) == 4
    compare([o for e in events for o in task.process(e)],
            kernel_for(task).run(Batch.from_events(events)).to_events())
    no_meta = [{"sensor": "s", "fields": {"t": 1}}, {"sensor": "s", "obs": "t"}]
    run_both(lambda: task, no_meta, [])


def test_csv_to_senml_writes_non_finite_floats_as_json_does():
    schema = [["t", "far", "v"], ["h", "per", "sv"], ["id", "string", "v"]]
    events = [{"seq": i, "ts": ts, "sensor": s, "fields": {"t": t, "h": t}}
              for i, (ts, s, t) in enumerate([(math.nan, "a", math.inf), (-math.inf, 1.5, -0.0),
                                              (1, None, math.nan), (2, "\ud800", "1e400")])]
    out = run_both(lambda: make_task("CsvToSenML", {"id_field": "id", "schema": schema}),
                   events, [])
    assert out.candidate[0]["payload"].startswith('{"bt": NaN, "e": [{"n": "t", "u": "far", '
                                                  '"v": Infinity}')


# --- generated CsvToSenML inputs --------------------------------------------------------------

CSV_VALUES = st.one_of(SCALARS, st.floats(), st.sampled_from([-0.0, math.inf, 1e300]),
                       st.integers(0, 9).flatmap(lambda k: st.lists(st.integers(), max_size=2)
                                                 if k == 0 else SCALARS))


@st.composite
def csv_events(draw: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 8))):
        e: dict[str, Any] = {"src": "SYS", "seq": i, "ts": draw(st.one_of(st.integers(0, 10**13),
                                                                        st.floats()))}
        if draw(st.integers(0, 5)):
            e["sensor"] = draw(st.one_of(SENSORS, st.text(max_size=3)))
        if draw(st.integers(0, 5)):
            e["meta"] = draw(st.dictionaries(st.sampled_from(["timestamp", "lat", "id", "t"]),
                                             CSV_VALUES, max_size=3))
            if draw(st.integers(0, 19)) == 0:  # not a dict: process's own error, or answer
                e["meta"] = draw(st.sampled_from([None, [], [["t", 1]]]))
        if draw(st.integers(0, 6)):
            e["fields"] = draw(st.dictionaries(st.sampled_from(["t", "h", "lat", "id"]),
                                               CSV_VALUES, max_size=4))
        elif draw(st.booleans()):
            e["obs"], e["value"] = draw(st.sampled_from(["t", "h"])), draw(CSV_VALUES)
        out.append(e)
    return out


SCHEMA = st.lists(st.tuples(st.sampled_from(["t", "h", "lat", "id", "timestamp", "100%"]),
                            st.sampled_from(["far", "per", "%s", "\u00e9"]),
                            st.sampled_from(["v", "sv", "x"])).map(list), max_size=6)


@settings(max_examples=150)
@given(SCHEMA, csv_events(), cuts(8), STEPS)
def test_csv_to_senml_on_generated_events(schema, events, at, steps):
    """Floats (NaN, infinities, -0.0), ints within and beyond 64 bits, numeric and other
    strings (escapes, non-ASCII, lone surrogates), bools, None, lists; meta or its timestamp
    missing; single observations: byte-identical payloads."""

    def make():
        return make_task("CsvToSenML", {"id_field": "id", "schema": schema})

    if raises_alike(make, events):  # a meta that is not a mapping
        return
    run_both(make, events, at, steps)
    same_types(make, events)
