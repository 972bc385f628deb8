from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.resources import read_properties
from reuse.tasks.sources import replay
from reuse.workloads.riotbench import PROPERTIES_FILES


def test_senml_parse_first_sys_line(configs, data_dir):
    parse = make_task("SenMLParse", configs["SYS"]["SenMLParse"])
    ev = next(replay("SYS", data_dir, limit=1))
    out = parse.process(ev)
    assert [o["obs"] for o in out] == ["temperature", "humidity", "light", "dust", "airquality_raw"]
    assert [o["value"] for o in out] == [8.0, 53.7, 0.0, 411.02, 140.0]
    first = out[0]
    assert (first["src"], first["seq"], first["ts"]) == ("SYS", 0, 0)
    assert first["sensor"] == "ci4lr75sl000802ypo4qrcjda23"
    assert first["meta"]["longitude"] == 6.1668213 and first["meta"]["timestamp"] == 1422748800000
    json.dumps(out)


def test_senml_parse_taxi_keeps_strings(taxi_obs):
    first = [o for o in taxi_obs if o["seq"] == 0]
    vals = {o["obs"]: o["value"] for o in first}
    assert vals["hack_license"] == "08F944E76118632BE09B9D4B04C7012A"
    assert vals["fare_amount"] == 29.0
    assert first[0]["meta"]["payment_type"] == "CSH"


@pytest.mark.parametrize("src", ["SYS", "TAXI", "FIT"])
def test_senml_parse_emits_every_non_meta_field(src, configs, data_dir):
    """As the original's SenMLParse bolt: every schema field that is not a meta field is an
    observation, the id field included when it is not a meta field (TAXI's taxi_identifier)."""
    props = read_properties(data_dir / PROPERTIES_FILES[src])
    schema_file = props["PARSE.CSV_SCHEMA_FILEPATH"].rsplit("/", 1)[-1]
    names = (data_dir / schema_file).read_text().splitlines()[0].split(",")
    meta = props["PARSE.META_FIELD_SCHEMA"].split(",")
    parse = make_task("SenMLParse", configs[src]["SenMLParse"])
    ev = next(replay(src, data_dir, limit=1))
    out = parse.process(ev)
    body = {e["n"]: e for e in json.loads(ev["payload"])["e"]}
    expected = [n.strip() for n in names if n.strip() not in meta and n.strip() in body]
    assert [o["obs"] for o in out] == expected
    id_field = props["PARSE.ID_FIELD_SCHEMA"]
    assert (id_field in expected) == (src == "TAXI")
    if src == "TAXI":
        taxi = next(o for o in out if o["obs"] == "taxi_identifier")
        assert taxi["value"] == taxi["sensor"] == body["taxi_identifier"]["sv"]


def test_annotate_and_csv_to_senml(configs, data_dir, sys_obs):
    cfg = configs["SYS"]
    join = make_task("Join", cfg["Join"])
    msgs = [m for o in sys_obs for m in join.process(o)]
    ann = make_task("Annotate", cfg["Annotate"], data_dir=data_dir)
    annotated = ann.process(msgs[0])[0]
    assert annotated["fields"]["location"] is not None  # every SYS sensor is in city-metadata
    senml = make_task("CsvToSenML", cfg["CsvToSenML"]).process(annotated)[0]
    body = json.loads(senml["payload"])
    names = [e["n"] for e in body["e"]]
    assert names[:2] == ["timestamp", "source"] and names[-2:] == ["location", "type"]
    assert {"n": "temperature", "u": "far", "v": 8.0} in body["e"]
    assert senml["seq"] == 0


_JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=4)
                     | st.dictionaries(st.text(max_size=4), kids, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.one_of(
    st.text(max_size=60),  # anything at all
    _JSON.map(json.dumps),  # JSON that is not SenML
    st.lists(_JSON, max_size=4).map(lambda es: json.dumps({"e": es})),  # entries of any shape
    st.tuples(st.integers(), _JSON).map(lambda t: f"{t[0]},{json.dumps(t[1])}")))
def test_a_payload_that_is_not_senml_gives_no_observation_and_never_raises(payload):
    """Issue 34's fuzzing, one door further in: a well-formed MQTT message whose payload is
    garbage must not fail the shared query's batch (its re-run would fail again)."""
    parse = make_task("SenMLParse", {"id_field": "id", "meta_fields": ["id"],
                                     "fields": ["t", "h"]})
    out = parse.process({"src": "SYS", "seq": 1, "ts": 0, "payload": payload})
    assert isinstance(out, list)
    assert all(o["obs"] in ("t", "h") and o["seq"] == 1 for o in out)
