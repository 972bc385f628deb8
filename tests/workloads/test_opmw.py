"""Tests of the OPMW workload loader on the real WINGS corpus and on hand-written OPMW fixtures."""

from __future__ import annotations

import json
import re
import warnings
from graphlib import TopologicalSorter
from pathlib import Path

import pytest

from reuse.core.paths import opmw_corpus_dir
from reuse.testing import missing
from reuse.workloads import opmw
from reuse.workloads.rdf_fixups import parse_wings_rdfxml

REPO = Path(__file__).resolve().parents[2]
CORPUS = opmw_corpus_dir()
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# most tests check the explicit mapping: variable-named sources and one sink task per output
EXPLICIT = {"sources": "variable", "sinks": "output"}
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=missing("data", f"{CORPUS} absent: run scripts/setup.sh (or copy the shared folder's data/opmw)"))

SINGLE_PROCESS = {"Classifier", "Classify", "CorrelationScore", "Discretize", "Modeler", "PlotTopics",
                  "Randomize", "RandomizeASpecificFile", "ReduceDataset", "TermWeighting", "test"}


@pytest.fixture(scope="module")
def corpus() -> opmw.Corpus:
    with pytest.warns(opmw.OpmwWarning):
        return opmw.load_corpus(CORPUS, **EXPLICIT)


def _kinds(dag: dict) -> tuple[set[str], set[str]]:
    """Ids of tasks without incoming / without outgoing streams."""
    ids = {t["id"] for t in dag["tasks"]}
    return ids - {d for _, d in dag["streams"]}, ids - {u for u, _ in dag["streams"]}


def _connected(dag: dict) -> bool:
    parent = {t["id"]: t["id"] for t in dag["tasks"]}

    def find(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in dag["streams"]:
        parent[find(a)] = find(b)
    return len({find(x) for x in parent}) == 1


def _rdf_counts() -> dict[str, int]:
    """Templates, processes (``wflow:hasNode``) and task types (``rdf:type`` of each node's
    ``wflow:hasComponent``) straight from the ``.owl`` files, over all and over usable (2+ node)
    templates: the reference the loader's counts are checked against."""
    import rdflib

    wflow = rdflib.Namespace("http://www.isi.edu/2007/08/workflow.owl#")
    counts = dict.fromkeys(("templates", "processes", "usable", "usable_processes"), 0)
    types: set[object] = set()
    usable_types: set[object] = set()
    for owl in sorted(CORPUS.glob("*/*.owl")):
        graph = parse_wings_rdfxml(owl)
        (template,) = graph.subjects(rdflib.RDF.type, wflow.WorkflowTemplate)
        nodes = set(graph.objects(template, wflow.hasNode))
        kinds = {k for n in nodes for k in graph.objects(graph.value(n, wflow.hasComponent),
                                                          rdflib.RDF.type)}
        counts["templates"] += 1
        counts["processes"] += len(nodes)
        types |= kinds
        if len(nodes) >= 2:
            counts["usable"] += 1
            counts["usable_processes"] += len(nodes)
            usable_types |= kinds
    return {**counts, "types": len(types), "usable_types": len(usable_types)}


@needs_corpus
def test_corpus_counts(corpus: opmw.Corpus) -> None:
    assert corpus.found == 70
    assert len(corpus.dataflows) == 59
    assert {s.template for s in corpus.skipped} == SINGLE_PROCESS
    assert all("1 process(es)" in s.reason for s in corpus.skipped)
    assert corpus.collapsed == {"iswc2010coauthors": 1, "senators": 1}
    stats = opmw.corpus_stats(corpus.dataflows, corpus.found)
    # the counts derived here from the RDF itself (wflow:hasNode, the component's rdf:type); the
    # corpus facts from data/README (70 templates, 348 processes, 109 types, 59 with 2+ tasks)
    rdf = _rdf_counts()
    assert (rdf["templates"], rdf["processes"], rdf["types"]) == (70, 348, 109)
    assert rdf["usable"] == len(corpus.dataflows) == 59 and rdf["templates"] == corpus.found
    # usable templates' processes, less the equivalent duplicates collapsed inside a template
    assert stats["tasks_processing"] == rdf["usable_processes"] - sum(corpus.collapsed.values())
    assert stats["unique_types_processing"] == rdf["usable_types"]
    assert stats["per_dag_processing"]["min"] == 2 and stats["per_dag_processing"]["max"] == 18
    table = opmw.paper_table(stats, opmw.corpus_stats(opmw.select(corpus.dataflows)))
    assert "| usable templates | 74 | 59 | - |" in table


@needs_corpus
def test_every_dag_is_a_valid_dedup_dataflow(corpus: opmw.Corpus) -> None:
    all_ids: set[str] = set()
    for dag in corpus.dataflows:
        ids = [t["id"] for t in dag["tasks"]]
        assert len(set(ids)) == len(ids) and all_ids.isdisjoint(ids), dag["id"]
        all_ids.update(ids)
        assert all(i.startswith(dag["id"] + "/") for i in ids)
        preds: dict[str, set[str]] = {i: set() for i in ids}
        for up, down in dag["streams"]:
            assert up != down and down in preds and up in preds
            preds[down].add(up)
        tuple(TopologicalSorter(preds).static_order())  # raises CycleError on a cycle
        roots, leaves = _kinds(dag)
        config = {t["id"]: t["config"] for t in dag["tasks"]}
        assert {i for i in ids if config[i] == "source"} == roots, dag["id"]
        assert {i for i in ids if config[i] == "sink"} == leaves, dag["id"]
        assert _connected(dag), dag["id"]  # measured: every usable template is connected
        sigs = opmw.signatures(dag)
        assert len(set(sigs.values())) == len(sigs), f"{dag['id']} is not de-dup"


@needs_corpus
def test_stemming_template_matches_hand_reading(corpus: opmw.Corpus) -> None:
    # Read by hand in Stemming.owl: InputLinks Words, Dataset -> StopWords and Size (parameter)
    # -> SmallWords; InOutLinks StopWords -> SmallWords -> Stemmer; OutputLink Stem <- Stemmer.
    dag = next(d for d in corpus.dataflows if d["id"] == "Stemming")
    assert {t["id"]: (t["type"], t["config"]) for t in dag["tasks"]} == {
        "Stemming/StopWords": ("ac/TextAnalytics:StopWords", "default"),
        "Stemming/SmallWords": ("SmallWords", "default"),
        "Stemming/Stemmer": ("Stemmer", "default"),
        "Stemming/in:Words": ("DataVariable[Words]", "source"),
        "Stemming/in:Dataset": ("DataVariable[Dataset]", "source"),
        "Stemming/out:Stem": ("Output:Stemming/Stem", "sink"),
    }
    assert dag["streams"] == [
        ["Stemming/SmallWords", "Stemming/Stemmer"], ["Stemming/Stemmer", "Stemming/out:Stem"],
        ["Stemming/StopWords", "Stemming/SmallWords"], ["Stemming/in:Dataset", "Stemming/StopWords"],
        ["Stemming/in:Words", "Stemming/StopWords"]]


@needs_corpus
def test_type_names_are_unambiguous(corpus: opmw.Corpus) -> None:
    names = corpus.type_names
    assert len(set(names.values())) == len(names)
    assert names["http://www.isi.edu/ac/dm/library.owl#Classifier"] == "dm:Classifier"
    assert names["http://www.isi.edu/ac/TextAnalytics/library.owl#Classifier"] == "TextAnalytics:Classifier"
    words = next(d for d in corpus.dataflows if d["id"] == "Words")
    assert "PatternFile[Input2PatternFile]" in {t["type"] for t in words["tasks"]}


@needs_corpus
def test_type_only_sources_collapse_parallel_branches() -> None:
    with pytest.warns(opmw.OpmwWarning):
        by_type = opmw.load_corpus(CORPUS, sources="type", sinks="output")
    words = next(d for d in by_type.dataflows if d["id"] == "Words")
    # Words compares two HTML documents through identical branches: 2 HTML + 4 pattern sources
    # and 2 x 5 branch steps fold into 1 + 1 and 5 (9 tasks go); merge, compare, sink remain.
    assert by_type.collapsed["Words"] == 9 and len(words["tasks"]) == 10
    for dag in by_type.dataflows:
        sigs = opmw.signatures(dag)
        assert len(set(sigs.values())) == len(sigs)


@needs_corpus
def test_selection_is_deterministic_per_seed(corpus: opmw.Corpus) -> None:
    dags = corpus.dataflows

    def ids(sel: list[dict]) -> list[str]:
        return [d["id"] for d in sel]

    first = ids(opmw.select(dags, seed=7))
    assert len(first) == 35 == len(set(first))
    assert first == ids(opmw.select(list(reversed(dags)), seed=7))  # input order is irrelevant
    assert first != ids(opmw.select(dags, seed=8))
    assert ids(opmw.select(dags)) == ids(opmw.select(dags, n=35, seed=opmw.DEFAULT_SEED))
    assert ids(opmw.select(dags, n=None)) == sorted(ids(dags))
    with pytest.raises(ValueError):
        opmw.select(dags, n=60)


@needs_corpus
def test_write_dags_round_trip(corpus: opmw.Corpus, tmp_path: Path) -> None:
    chosen = opmw.select(corpus.dataflows, n=3, seed=1)
    paths = opmw.write_dags(chosen, tmp_path / "out")
    assert [p.name for p in paths] == [f"{d['id']}.json" for d in chosen]
    assert [json.loads(p.read_text()) for p in paths] == chosen
    assert paths[0].read_text().startswith('{\n "id"')


@needs_corpus
def test_rdf_id_fixup_is_needed_and_sufficient() -> None:
    import rdflib

    owl = CORPUS / "Stemming" / "Stemming.owl"
    with pytest.raises(Exception, match="same ID"):
        rdflib.Graph().parse(owl, format="xml")
    graph = parse_wings_rdfxml(owl)
    wflow = rdflib.Namespace("http://www.isi.edu/2007/08/workflow.owl#")
    template = rdflib.URIRef("http://www.isi.edu/TextAnalytics/Stemming.owl#Stemming")
    assert len(set(graph.objects(template, wflow.hasNode))) == 3


def _expect_skip(path: Path, reason: str) -> opmw.Corpus:
    with pytest.warns(opmw.OpmwWarning, match=re.escape(str(path))) as record:
        result = opmw.load_corpus(path, **EXPLICIT)
    assert any(reason in str(w.message) for w in record), [str(w.message) for w in record]
    assert [s.path for s in result.skipped] == [str(path)]
    return result


@needs_corpus
def test_truncated_and_garbage_owl_are_skipped(tmp_path: Path) -> None:
    raw = (CORPUS / "Stemming" / "Stemming.owl").read_bytes()
    truncated = tmp_path / "Truncated.owl"
    truncated.write_bytes(raw[: len(raw) // 2])
    assert _expect_skip(truncated, "bad XML").dataflows == []
    garbage = tmp_path / "Garbage.owl"
    garbage.write_bytes(b"\x00\x01 not rdf at all <<<")
    assert _expect_skip(garbage, "bad XML").dataflows == []
    not_rdf = tmp_path / "NotRdf.owl"
    not_rdf.write_text("<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'/>")
    assert _expect_skip(not_rdf, "no wflow:WorkflowTemplate").dataflows == []


@needs_corpus
def test_wings_node_without_component_type_is_skipped(tmp_path: Path) -> None:
    text = (CORPUS / "Stemming" / "Stemming.owl").read_text(encoding="utf-8")
    untyped = text.replace('<acdom:Stemmer rdf:ID="component2">', '<rdf:Description rdf:ID="component2">', 1)
    untyped = untyped.replace("</acdom:Stemmer>", "</rdf:Description>", 1)
    assert untyped != text
    path = tmp_path / "Stemming.owl"
    path.write_text(untyped, encoding="utf-8")
    _expect_skip(path, "node Stemmer has 0 component types")


def test_opmw_cycle_is_skipped() -> None:
    _expect_skip(FIXTURES / "opmw_cycle.ttl", "cycle through")


def test_opmw_missing_type_skips_only_that_template() -> None:
    result = _expect_skip(FIXTURES / "opmw_missing_type.ttl", "process UNTYPED has 0 component types")
    assert [s.template for s in result.skipped] == ["FixtureUntyped"]
    assert result.dataflows == [{
        "id": "FixtureSecond",
        "tasks": [
            {"id": "FixtureSecond/FIRST", "type": "Tokenizer", "config": "default"},
            {"id": "FixtureSecond/SECOND", "type": "Stemmer", "config": "default"},
            {"id": "FixtureSecond/in:in2", "type": "DataVariable[in2]", "config": "source"},
            # SECOND is a leaf with no generated variable: it gets a sink named after the node
            {"id": "FixtureSecond/out:SECOND", "type": "Output:FixtureSecond/SECOND", "config": "sink"},
        ],
        "streams": [["FixtureSecond/FIRST", "FixtureSecond/SECOND"],
                    ["FixtureSecond/SECOND", "FixtureSecond/out:SECOND"],
                    ["FixtureSecond/in:in2", "FixtureSecond/FIRST"]],
    }]


def test_opmw_fixture_parses_to_expected_dag() -> None:
    result = opmw.load_corpus(FIXTURES / "opmw_good.ttl", **EXPLICIT)
    assert result.skipped == [] and result.collapsed == {}
    g = "FixtureGood/"
    assert result.dataflows == [{
        "id": "FixtureGood",
        "tasks": [
            {"id": g + "COUNT", "type": "Counter", "config": "default"},
            {"id": g + "STEM", "type": "Stemmer", "config": "default"},
            {"id": g + "TOKENIZE", "type": "Tokenizer", "config": "default"},
            {"id": g + "in:doc", "type": "TextFile[doc]", "config": "source"},  # threshold: a parameter
            {"id": g + "out:counts", "type": "Output:FixtureGood/counts", "config": "sink"},
        ],
        "streams": [[g + "COUNT", g + "out:counts"], [g + "STEM", g + "COUNT"], [g + "TOKENIZE", g + "COUNT"],
                    [g + "TOKENIZE", g + "STEM"], [g + "in:doc", g + "TOKENIZE"]],
    }]


def test_fixture_folder_loads_good_and_skips_bad() -> None:
    with pytest.warns(opmw.OpmwWarning):
        result = opmw.load_corpus(FIXTURES, **EXPLICIT)
    assert [d["id"] for d in result.dataflows] == ["FixtureGood", "FixtureSecond"]
    assert sorted(s.template or "" for s in result.skipped) == ["FixtureCycle", "FixtureUntyped"]
    assert result.found == 4


def test_signatures_detect_duplicates() -> None:
    dag = {"id": "d", "tasks": [{"id": "s", "type": "S", "config": "source"},
                                {"id": "a", "type": "T", "config": "default"},
                                {"id": "b", "type": "T", "config": "default"},
                                {"id": "c", "type": "T", "config": {"k": 1}}],
           "streams": [["s", "a"], ["s", "b"], ["s", "c"]]}
    sigs = opmw.signatures(dag)
    assert sigs["a"] == sigs["b"] != sigs["c"]


@needs_corpus
def test_default_mapping_uses_leaf_processes_as_sinks_and_ordinal_sources() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", opmw.OpmwWarning)
        default = opmw.load_corpus(CORPUS)
    stemming = next(d for d in default.dataflows if d["id"] == "Stemming")
    kinds = {t["id"]: (t["type"], t["config"]) for t in stemming["tasks"]}
    assert not any(c == "sink" for _, c in kinds.values())
    assert kinds["Stemming/in:Dataset"] == ("DataVariable", "source")
    assert kinds["Stemming/in:Words"] == ("DataVariable[2]", "source")
    for dag in default.dataflows:
        has_child = {a for a, _ in dag["streams"]}
        leaves = [t for t in dag["tasks"] if t["id"] not in has_child]
        assert leaves and all(t["config"] == "default" for t in leaves)
