from __future__ import annotations

import json

import networkx as nx
import pytest

from reuse.core.dataflow import parse_dataflow
from reuse.core.errors import ReuseError
from reuse.core.paths import riotbench_dir
from reuse.tasks.resources import read_properties
from reuse.testing import missing
from reuse.workloads.riotbench import (
    build_dataflows,
    merkle_signatures,
    source_configs,
    workload_stats,
    write_dags,
)

DATA = riotbench_dir()


@pytest.fixture(scope="module")
def dags():
    if not DATA.is_dir():
        pytest.skip(missing("data", "data/riotbench is not set up"))
    return build_dataflows(DATA)


def _config_similar_classes(dags) -> int:
    """Abstract tasks ``<type, config>``: classes of tasks whose type and config are equal (==)."""
    reps: list[tuple[str, object]] = []
    for d in dags:
        for t in d["tasks"]:
            if not any(t["type"] == typ and t["config"] == cfg for typ, cfg in reps):
                reps.append((t["type"], t["config"]))
    return len(reps)


def test_shape_and_stats(dags, literal_classes):
    stats = workload_stats(dags)
    # the paper's workload (section 5): 21 dataflows, 138 tasks, 19 distinct task types
    assert (stats["dags"], stats["tasks"], stats["distinct_types"]) == (21, 138, 19)
    # the rest derived here from the DAGs themselves, not from the code's output
    sizes = [len(d["tasks"]) for d in dags]
    assert sum(sizes) == stats["tasks"]
    assert (stats["min_tasks"], stats["max_tasks"]) == (min(sizes), max(sizes))
    assert all(4 <= n <= 8 for n in sizes)  # the paper: "each DAG having 4-8 tasks"
    roots = {t["type"] for d in dags for t in d["tasks"]
             if all(down != t["id"] for _, down in d["streams"])}
    types = {t["type"] for d in dags for t in d["tasks"]}
    assert roots == {"SYS", "TAXI", "FIT"}
    assert stats["distinct_types_excluding_sources"] == len(types - roots)
    assert stats["distinct_abstract_tasks"] == _config_similar_classes(dags)
    # merged tasks (the SEQ peak with reuse): classes of the literal <-> (VF2), not signatures
    assert stats["merged_tasks"] == literal_classes([parse_dataflow(d) for d in dags])
    assert len({d["id"] for d in dags}) == 21


def test_each_dag_is_acyclic_dedup_and_well_formed(dags):
    for d in dags:
        ids = [t["id"] for t in d["tasks"]]
        assert len(ids) == len(set(ids))
        g = nx.DiGraph()
        g.add_nodes_from(ids)
        g.add_edges_from(d["streams"])
        assert nx.is_directed_acyclic_graph(g) and nx.is_weakly_connected(g)
        for t in d["tasks"]:
            if g.in_degree(t["id"]) == 0:
                assert t["config"] == "source" and t["type"] in ("SYS", "TAXI", "FIT")
            if g.out_degree(t["id"]) == 0:
                assert t["config"] == "sink" and t["type"] == "MQTTPublish"
        sigs = merkle_signatures(d)
        assert len(set(sigs.values())) == len(ids), d["id"]  # de-dup
        json.dumps(d)


def test_prefixes_are_shared_across_dataflows(dags):
    seen: dict[str, set[str]] = {}
    for d in dags:
        for tid, s in merkle_signatures(d).items():
            seen.setdefault(s, set()).add(f"{d['id']}:{tid}")
    shared = [v for v in seen.values() if len(v) > 1]
    parse_sys = next(v for v in shared if "etl-sys:parse" in v)
    assert len(parse_sys) == 9  # every SYS dataflow reuses source -> SenMLParse


def test_configs_trace_back_to_properties():
    city = read_properties(DATA / "tasks_CITY.properties")
    taxi = read_properties(DATA / "tasks_TAXI.properties")
    sys_cfg, taxi_cfg = source_configs("SYS", DATA), source_configs("TAXI", DATA)
    rng = ",".join(f"{k}:{lo:g}:{hi:g}" for k, (lo, hi)
                   in sys_cfg["RangeFilter.drop"]["valid_range"].items())
    assert rng == city["FILTER.RANGE_FILTER.VALID_RANGE"]
    assert taxi_cfg["Join"]["max_count"] == int(taxi["JOIN.MAX_COUNT_VALUE"]) == 17
    assert sys_cfg["BlockWindowAverage"]["window"] == 5 and taxi_cfg["BlockWindowAverage"]["window"] == 10
    assert taxi_cfg["KalmanFilter"]["fields"] == taxi["STATISTICS.KALMAN_FILTER.USE_MSG_FIELDLIST"].split(",")
    assert taxi_cfg["Interpolation"]["window"] == 0 and sys_cfg["Interpolation"]["window"] == 5
    assert taxi_cfg["Annotate"]["file"] == "taxi-metadata-fulldataset.txt"
    assert taxi_cfg["SenMLParse"]["id_field"] == "taxi_identifier"


def test_same_type_differs_across_sources():
    cfgs = [source_configs(s, DATA) for s in ("SYS", "TAXI", "FIT")]
    for kind in ("SenMLParse", "RangeFilter.drop", "BloomFilterCheck", "Interpolation", "Join",
                 "Annotate", "CsvToSenML", "KalmanFilter", "BlockWindowAverage",
                 "DistinctApproxCount", "SecondOrderMoment"):
        rendered = {json.dumps(c[kind], sort_keys=True) for c in cfgs}
        assert len(rendered) == 3, kind


def test_write_dags(dags, tmp_path):
    paths = write_dags(dags, tmp_path)
    assert len(paths) == 21 and (tmp_path / "etl-sys.json").exists()
    text = (tmp_path / "pred-taxi.json").read_text()
    assert json.loads(text) == next(d for d in dags if d["id"] == "pred-taxi")
    assert text.startswith('{\n "id"')


KEYED = {"Interpolation", "KalmanFilter", "SlidingLinearRegression", "BlockWindowAverage",
         "SecondOrderMoment"}


def test_keying_goes_into_every_keyed_task_config(dags):
    by_sensor = build_dataflows(DATA, keying="sensor")
    assert [d["id"] for d in by_sensor] == [d["id"] for d in dags]
    for field_dag, sensor_dag in zip(dags, by_sensor, strict=True):
        assert field_dag["streams"] == sensor_dag["streams"]
        for ft, st in zip(field_dag["tasks"], sensor_dag["tasks"], strict=True):
            assert ft["type"] == st["type"]
            if ft["type"] in KEYED:
                assert ft["config"]["group_by"] == ["obs"]
                assert st["config"]["group_by"] == ["sensor", "obs"]
                assert {**ft["config"], "group_by": None} == {**st["config"], "group_by": None}
            else:
                assert ft["config"] == st["config"]
    # a keyed task computes another stream under the other keying: never shared across keyings
    field_sigs = {d["id"]: merkle_signatures(d) for d in dags}
    for d in by_sensor:
        for tid, sig in merkle_signatures(d).items():
            if any(t["type"] in KEYED for t in d["tasks"] if t["id"] == tid):
                assert sig != field_sigs[d["id"]][tid]
    assert workload_stats(by_sensor)["merged_tasks"] == workload_stats(dags)["merged_tasks"]
    with pytest.raises(ReuseError, match="unknown keying 'meter'"):
        build_dataflows(DATA, keying="meter")


def test_parse_emits_non_meta_fields_and_bloom_holds_out_odd_lines():
    taxi = source_configs("TAXI", DATA)
    assert taxi["SenMLParse"]["fields"][0] == "taxi_identifier"
    assert "taxi_identifier" in taxi["Join"]["fields"]
    sys_cfg = source_configs("SYS", DATA)
    assert "source" not in sys_cfg["SenMLParse"]["fields"]  # a meta field in CITY
    assert sys_cfg["BloomFilterCheck"]["train_stride"] == 2
    assert sys_cfg["SecondOrderMoment"]["estimator"] == "riotbench"
    assert sys_cfg["SecondOrderMoment"]["fields"] == list(sys_cfg["RangeFilter.drop"]["valid_range"])
