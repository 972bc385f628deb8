"""OPMW / WINGS workflow templates as streaming dataflows (the paper's first workload, section 5.1).

The paper took 35 of the 74 usable templates of the OPMW portal and kept "only the OPMW DAG
structure, with the task ID, type, and their connectivity". This module rebuilds that workload
from the templates in ``data/opmw/wings-corpus`` (a 2012 snapshot; the 2017 portal is gone, so
the numbers differ and :func:`paper_table` reports them side by side).

Inputs (both are parsed with rdflib and queried as triples, never with regexes)
  * native WINGS templates ``*/<Template>.owl`` (RDF/XML): ``wflow:hasNode`` lists the processes,
    a process' type is the ``rdf:type`` of its ``wflow:hasComponent``; ``wflow:InOutLink`` is a
    process -> process edge, ``wflow:InputLink`` a template input, ``wflow:OutputLink`` an output.
    Their repeated ``rdf:ID`` is fixed on the XML tree first (:mod:`reuse.workloads.rdf_fixups`).
  * OPMW exports ``*.ttl`` (``opmw:isStepOfTemplate``, ``opmw:uses``, ``opmw:isGeneratedBy``);
    a file may hold several templates.

Mapping decisions (the paper's model, section 3.1)
  * Processing task: id ``<Template>/<node>``, type = local name of the component type, config
    ``"default"``. Templates bind no concrete parameter values, so equivalence comes from type +
    ancestors only, as in the paper's use of the OPMW DAGs.
  * Types are shortened to the IRI's local name; when a corpus has one local name under several
    namespaces (this corpus: ``Classifier`` and ``Modeler`` in TextAnalytics and dm, and the
    ``StopWords`` data type vs the ``StopWords`` component), all of them keep their trailing
    namespace path segments as a prefix (``TextAnalytics:Classifier``, ``ac/TextAnalytics:StopWords``)
    until unique. The naming is therefore computed per :func:`load_corpus` call.
  * Source task: one per data input variable, id ``<Template>/in:<var>``, config ``"source"``,
    type = the variable's declared data type (``PatternFile``, ``GenesFile``; several types are
    joined sorted with ``+``; ``DataVariable`` when only the generic type is declared) plus a
    role suffix chosen by ``load_corpus(sources=...)``. Section 3.1 names a source by its type,
    so the suffix decides what may be shared across templates:
    ``"variable"`` ``PatternFile[Input2PatternFile]`` - same data type *and* role
    name; ``"ordinal"`` (default) ``PatternFile``, ``PatternFile[2]``... by variable-name order
    (the first input of a type in any template reads the same raw stream);
    ``"type"`` bare ``PatternFile`` - maximal sharing, but two inputs of one type become one
    stream, so parallel branches collapse (measured: 109 tasks collapsed, e.g. ``Words`` keeps
    one of its two documents; with "variable" or "ordinal" only 2 processes collapse).
  * Parameter inputs (``ParameterVariable``) are configuration, not streams (section 3.1 puts
    parameters in the task's config), so they are dropped - except for a process that would then
    have no input at all, which gets its parameters as sources so every root is a source task.
  * Sinks, chosen by ``load_corpus(sinks=...)``. ``"leaf"`` (default): no extra tasks; the
    template's leaf processes are its output tasks, as in the paper, which used "only the OPMW
    DAG structure" (measured on the seeded 35: SEQ peak reduction 38.5% vs 29.9% with "output"
    sinks, paper 42%). ``"output"``: one sink task per template output variable, id ``<Template>/out:<var>``, type
    ``Output:<Template>/<var>``, config ``"sink"``: section 3.1 says a sink's *type* names it and
    its config is the constant 'sink'; outputs are per user, so sinks are never shared. A leaf
    process with no declared output gets a sink ``Output:<Template>/<node>``.
  * De-dup (section 3.2): a template whose tasks have equal Merkle signatures (:func:`signatures`:
    same type, config and equivalent ancestors) is kept with the duplicates *collapsed* into the
    task with the smallest id (its streams are unioned); counts in :attr:`Corpus.collapsed`.
    Streams carry no port, so e.g. ``senators`` and ``iswc2010coauthors`` chart the two outputs
    of ``HitsLinkAnalysis`` with two ``CreateLineChart`` steps that become one (2 in the corpus).
    A collapse keeps the DAG acyclic and every sink, so the workload keeps all usable templates.
  * Skipped, with an :class:`OpmwWarning` (``warnings.warn``) naming the file and recorded in
    :attr:`Corpus.skipped`: unreadable XML/RDF, fewer than 2 processes or no process -> process
    edge (the paper's DAGs have 2-38 tasks: single-step templates are not dataflows), a cycle, a
    process with zero or several component types, a link to an unknown process, a process with no
    input, a duplicate template id. The corpus has 11 single-process templates; nothing else.
  * Counting: the paper's "2-38 tasks per DAG" fits processes only (with a source and a sink a
    DAG has at least 3 tasks), so :func:`corpus_stats` reports processes and all tasks.
"""

from __future__ import annotations

import json
import random
import statistics
import warnings
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any, Literal

import rdflib
from rdflib import RDF, Namespace, URIRef
from rdflib import Literal as RdfLiteral

from reuse.core import equivalence
from reuse.core.dataflow import parse_dataflow
from reuse.workloads import write_dags as write_dags  # re-exported for callers
from reuse.workloads.rdf_fixups import parse_wings_rdfxml

WFLOW = Namespace("http://www.isi.edu/2007/08/workflow.owl#")
OPMW = Namespace("http://www.opmw.org/ontology/")
DEFAULT_SEED = 2017  # the paper's year; any fixed seed gives a reproducible "arbitrary" choice
PAPER = {"usable": 74, "chosen": 35, "tasks": 471, "unique": 219, "min": 2, "max": 38}
# Vocabularies whose rdf:types describe the RDF model, not the task or data type.
_META_NS = (str(WFLOW), str(OPMW), "http://www.w3.org/ns/prov#", "http://purl.org/net/p-plan#",
            "http://www.w3.org/2002/07/owl#", "http://www.w3.org/2000/01/rdf-schema#")
_GENERIC = ("DataVariable", "ParameterVariable")  # plain names: same meaning in both vocabularies

Dataflow = dict[str, Any]
SourceNaming = Literal["variable", "ordinal", "type"]
SinkMode = Literal["leaf", "output"]
TypeKey = tuple[str, ...]  # full type IRIs (joined with '+' once shortened) or a plain name


class OpmwWarning(UserWarning):
    """A template file or template was skipped; the message names the file and the reason."""


class _Reject(Exception):
    """Internal: the template cannot become a dataflow (reason in the message)."""


@dataclass(frozen=True)
class Skipped:
    """A file or template left out of the workload, and why."""

    path: str
    template: str | None
    reason: str


@dataclass
class Corpus:
    """Result of :func:`load_corpus`.

    Attributes
    ----------
    dataflows
        Usable de-dup dataflow dicts, sorted by id.
    skipped
        Files or templates left out, with the reason (each was also warned about).
    collapsed
        Dataflow id -> number of duplicate tasks merged away (only ids with at least one).
    type_names
        Type IRI -> short type name used, for tracing a type back to its ontology.
    """

    dataflows: list[Dataflow] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    collapsed: dict[str, int] = field(default_factory=dict)
    type_names: dict[str, str] = field(default_factory=dict)

    @property
    def found(self) -> int:
        """Templates found: usable plus skipped (an unreadable file counts as one)."""
        return len(self.dataflows) + len(self.skipped)


@dataclass
class _Template:
    """Vocabulary-neutral template: processes, process edges, inputs and outputs."""

    name: str
    processes: dict[str, TypeKey]  # node local name -> component type
    edges: set[tuple[str, str]] = field(default_factory=set)
    inputs: dict[str, tuple[TypeKey, bool, set[str]]] = field(default_factory=dict)  # var -> (type, is_param, consumers)
    outputs: dict[str, set[str]] = field(default_factory=dict)  # var -> producers
    error: str | None = None  # why the template cannot be used, found while reading it


def _local(iri: str) -> str:
    """Fragment after ``#``, else the last path segment."""
    return iri.rsplit("#", 1)[1] if "#" in iri else iri.rstrip("/").rsplit("/", 1)[-1]


def _types(graph: rdflib.Graph, node: rdflib.term.Node) -> set[str]:
    """``rdf:type`` IRIs of ``node`` outside the model vocabularies (IRI-like literals accepted)."""
    out = set()
    for t in graph.objects(node, RDF.type):
        if isinstance(t, RdfLiteral) and "://" not in str(t):
            continue
        if not str(t).startswith(_META_NS):
            out.add(str(t))
    return out


def _var_type(graph: rdflib.Graph, var: rdflib.term.Node, is_param: bool) -> TypeKey:
    return tuple(sorted(_types(graph, var))) or ((_GENERIC[1],) if is_param else (_GENERIC[0],))


def _one_type(types: set[str], what: str) -> TypeKey:
    if len(types) != 1:
        raise _Reject(f"{what} has {len(types)} component types {sorted(types)}")
    return (types.pop(),)


def _ends(graph: rdflib.Graph, link: rdflib.term.Node, prop: URIRef,
          nodes: dict[rdflib.term.Node, str]) -> set[str]:
    """Node names at one end of a WINGS link; a node outside the template rejects it."""
    ends = set(graph.objects(link, prop))
    if not ends <= nodes.keys():
        raise _Reject(f"link {_local(str(link))} refers to a node outside the template")
    return {nodes[n] for n in ends}


def _guarded(name: str, read: Callable[[_Template], None]) -> _Template:
    """Run a per-template reader; a :class:`_Reject` marks this template only, not the file."""
    tpl = _Template(name, {})
    try:
        read(tpl)
    except _Reject as err:
        tpl.error = str(err)
    return tpl


def _wings_templates(path: Path) -> list[_Template]:
    """Read the WINGS templates of one ``.owl`` file (vocabulary a)."""
    graph = parse_wings_rdfxml(path)
    found = sorted(graph.subjects(RDF.type, WFLOW.WorkflowTemplate), key=str)
    if not found:
        raise _Reject("no wflow:WorkflowTemplate")

    def read(tmpl: rdflib.term.Node, tpl: _Template) -> None:
        nodes = {n: _local(str(n)) for n in graph.objects(tmpl, WFLOW.hasNode)}
        for node, name in nodes.items():
            comps = set(graph.objects(node, WFLOW.hasComponent))
            tpl.processes[name] = _one_type({t for c in comps for t in _types(graph, c)}, f"node {name}")
        links = set(graph.objects(tmpl, WFLOW.hasLink))
        if not links and len(found) == 1:
            links = {s for k in ("InOutLink", "InputLink", "OutputLink") for s in graph.subjects(RDF.type, WFLOW[k])}
        for link in links:
            origins = _ends(graph, link, WFLOW.hasOriginNode, nodes)
            dests = _ends(graph, link, WFLOW.hasDestinationNode, nodes)
            tpl.edges |= {(o, d) for o in origins for d in dests}
            for var in graph.objects(link, WFLOW.hasVariable):
                vname = _local(str(var))
                if dests and not origins:
                    is_param = (var, RDF.type, WFLOW.ParameterVariable) in graph
                    entry = tpl.inputs.setdefault(vname, (_var_type(graph, var, is_param), is_param, set()))
                    entry[2].update(dests)
                elif origins and not dests:
                    tpl.outputs.setdefault(vname, set()).update(origins)

    return [_guarded(_local(str(t)), partial(read, t)) for t in found]


def _opmw_templates(path: Path) -> list[_Template]:
    """Read the templates of one OPMW Turtle export (vocabulary b)."""
    graph = rdflib.Graph()
    graph.parse(path, format="turtle")
    steps: dict[rdflib.term.Node, dict[rdflib.term.Node, str]] = defaultdict(dict)
    for p in graph.subjects(RDF.type, OPMW.WorkflowTemplateProcess):
        for t in graph.objects(p, OPMW.isStepOfTemplate):
            steps[t][p] = _local(str(p))
    if not steps:
        raise _Reject("no opmw:WorkflowTemplateProcess with opmw:isStepOfTemplate")

    def read(tmpl: rdflib.term.Node, tpl: _Template) -> None:
        procs = steps[tmpl]
        used: set[rdflib.term.Node] = set()
        for p, name in procs.items():
            tpl.processes[name] = _one_type(_types(graph, p), f"process {name}")
            for var in graph.objects(p, OPMW.uses):
                used.add(var)
                gens = set(graph.objects(var, OPMW.isGeneratedBy))
                if not gens:
                    is_param = (var, RDF.type, OPMW.ParameterVariable) in graph or (
                        var, OPMW.isParameterOfTemplate, tmpl) in graph
                    entry = tpl.inputs.setdefault(_local(str(var)), (_var_type(graph, var, is_param), is_param, set()))
                    entry[2].add(name)
                for g in gens:
                    if g not in procs:
                        raise _Reject(f"variable {_local(str(var))} generated outside the template")
                    tpl.edges.add((procs[g], name))
        for var, p in graph.subject_objects(OPMW.isGeneratedBy):
            if p in procs and var not in used:
                tpl.outputs.setdefault(_local(str(var)), set()).add(procs[p])

    def name(tmpl: rdflib.term.Node) -> str:
        label = graph.value(tmpl, rdflib.RDFS.label)
        return str(label) if label else _local(str(tmpl))

    return [_guarded(name(t), partial(read, t)) for t in sorted(steps, key=str)]


def _to_dataflow(tpl: _Template, sources: SourceNaming, sinks: SinkMode = "leaf") -> tuple[list[tuple[str, TypeKey, str, Any]], set[tuple[str, str]]]:
    """Validate a template and build its tasks (id, full type key, type suffix, config) and streams."""
    if tpl.error:
        raise _Reject(tpl.error)
    if len(tpl.processes) < 2 or not tpl.edges:
        raise _Reject(f"{len(tpl.processes)} process(es), {len(tpl.edges)} process edge(s): not a dataflow")
    preds: dict[str, set[str]] = {p: set() for p in tpl.processes}
    for a, b in tpl.edges:
        preds[b].add(a)
    try:
        tuple(TopologicalSorter(preds).static_order())
    except CycleError as err:
        raise _Reject(f"cycle through {' -> '.join(err.args[1])}") from None
    pid = {p: f"{tpl.name}/{p}" for p in tpl.processes}
    tasks = [(pid[p], t, "", "default") for p, t in sorted(tpl.processes.items())]
    streams = {(pid[a], pid[b]) for a, b in tpl.edges}
    nth: dict[TypeKey, int] = defaultdict(int)
    fed = {c for _, is_param, cons in tpl.inputs.values() if not is_param for c in cons}
    for var, (vtype, is_param, consumers) in sorted(tpl.inputs.items()):
        targets = consumers if not is_param else {c for c in consumers if not preds[c] and c not in fed}
        if targets:
            nth[vtype] += 1
            suffix = {"type": "", "variable": f"[{var}]"}.get(sources, f"[{nth[vtype]}]" if nth[vtype] > 1 else "")
            tasks.append((f"{tpl.name}/in:{var}", vtype, suffix, "source"))
            streams |= {(f"{tpl.name}/in:{var}", pid[c]) for c in targets}
    for p in tpl.processes:
        if not preds[p] and not any(p in cons for _, _, cons in tpl.inputs.values()):
            raise _Reject(f"process {p} has no input")
    if sinks == "leaf":
        return tasks, streams
    outputs = dict(tpl.outputs)
    has_out = {a for a, _ in tpl.edges} | {p for ps in outputs.values() for p in ps}
    outputs.update({p: {p} for p in tpl.processes if p not in has_out})
    for var, producers in sorted(outputs.items()):
        sink = f"{tpl.name}/out:{var}"
        tasks.append((sink, (f"Output:{tpl.name}/{var}",), "", "sink"))
        streams |= {(pid[p], sink) for p in producers}
    return tasks, streams


def _short_names(keys: Iterable[str]) -> dict[str, str]:
    """Map type IRIs to local names, qualifying colliding ones with namespace path segments."""
    by_local: dict[str, set[str]] = defaultdict(set)
    for k in keys:
        by_local[_local(k)].add(k)
    names: dict[str, str] = {}
    for local, iris in by_local.items():
        if len(iris) == 1:
            names[iris.pop()] = local
            continue
        segs = {}
        for iri in iris:
            ns = iri[: len(iri) - len(local)].rstrip("#/").split("://", 1)[-1].split("/")[1:]
            segs[iri] = [s for s in ns if "." not in s] or ns  # drop 'library.owl'-like file names
        for depth in range(1, 1 + max(len(s) for s in segs.values())):
            cand = {iri: "/".join(s[-depth:]) + ":" + local for iri, s in segs.items()}
            if len(set(cand.values())) == len(cand):
                break
        else:
            cand = {iri: iri for iri in iris}
        names.update(cand)
    return names


def signatures(dag: Dataflow) -> dict[str, str]:
    """Signature per task (see :mod:`reuse.core.equivalence`); a de-dup DAG has them all distinct."""
    return equivalence.signatures(parse_dataflow(dag))


def _collapse(dag: Dataflow) -> int:
    """Collapse equivalent tasks in place (:func:`reuse.core.equivalence.dedup`); return how many went."""
    before = len(dag["tasks"])
    collapsed = equivalence.dedup(parse_dataflow(dag)).to_dict()
    dag["tasks"], dag["streams"] = collapsed["tasks"], collapsed["streams"]
    return before - len(dag["tasks"])


def _skip(corpus: Corpus, path: Path, template: str | None, reason: str) -> None:
    corpus.skipped.append(Skipped(str(path), template, reason))
    where = f"{path}" + (f" (template {template})" if template else "")
    warnings.warn(f"{where}: skipped: {reason}", OpmwWarning, stacklevel=3)


def load_corpus(root: str | Path, sources: SourceNaming = "ordinal",
                sinks: SinkMode = "leaf") -> Corpus:
    """Load every template under ``root`` as a de-dup dataflow dict; skip bad ones with a warning.

    Files read: ``root/*.owl`` and ``root/*/*.owl`` as WINGS RDF/XML, ``root/*.ttl`` as OPMW
    Turtle (the corpus' ``TemplateMetadata.ttl`` files carry no edges and sit one level down, so
    they are not read). ``root`` may also be a single file. ``sources`` picks the source
    naming described in the module docstring.

    Returns
    -------
    Corpus
        Usable dataflows sorted by id, skipped files/templates (each also warned about with an
        :class:`OpmwWarning`), collapsed-duplicate counts and the type-name map used.
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(root)
    files = [root] if root.is_file() else sorted(
        [*root.glob("*.owl"), *root.glob("*/*.owl"), *root.glob("*.ttl")])
    corpus = Corpus()
    built: list[tuple[Path, str, list[tuple[str, TypeKey, str, Any]], set[tuple[str, str]]]] = []
    seen: set[str] = set()
    for path in files:
        try:
            templates = (_opmw_templates if path.suffix == ".ttl" else _wings_templates)(path)
        except _Reject as err:
            _skip(corpus, path, None, str(err))
            continue
        except ET.ParseError as err:
            _skip(corpus, path, None, f"bad XML ({err})")
            continue
        except Exception as err:  # rdflib raises assorted parser errors on garbage input
            _skip(corpus, path, None, f"unreadable RDF ({type(err).__name__}: {err})")
            continue
        for tpl in templates:
            try:
                if tpl.name in seen:
                    raise _Reject("duplicate template id")
                tasks, streams = _to_dataflow(tpl, sources, sinks)
            except _Reject as err:
                _skip(corpus, path, tpl.name, str(err))
                continue
            seen.add(tpl.name)
            built.append((path, tpl.name, tasks, streams))
    iris = {k for *_, tasks, _ in built for _, key, _, _ in tasks for k in key if "://" in k}
    corpus.type_names = _short_names(sorted(iris))
    for _path, name, tasks, streams in sorted(built, key=lambda b: b[1]):
        dag = {"id": name,
               "tasks": [{"id": i, "type": "+".join(corpus.type_names.get(k, k) for k in key) + sfx, "config": c}
                         for i, key, sfx, c in sorted(tasks)],
               "streams": [list(s) for s in sorted(streams)]}
        n = _collapse(dag)
        if n:
            corpus.collapsed[name] = n
        corpus.dataflows.append(dag)
    return corpus


def _kind(task: dict[str, Any]) -> str:
    return task["config"] if task["config"] in ("source", "sink") else "processing"


def corpus_stats(dataflows: Sequence[Dataflow], found: int | None = None) -> dict[str, Any]:
    """Workload statistics, counting processes only and all tasks (sources + sinks too).

    ``unique_*_merged`` counts distinct Merkle signatures across the DAGs, i.e. the tasks left
    once every DAG is merged - one possible reading of the paper's "219 unique".
    """
    per_proc = [sum(_kind(t) == "processing" for t in d["tasks"]) for d in dataflows]
    per_all = [len(d["tasks"]) for d in dataflows]
    tasks = [t for d in dataflows for t in d["tasks"]]
    proc = [t for t in tasks if _kind(t) == "processing"]
    sigs = [(s, _kind(t)) for d in dataflows for t, s in
            zip(d["tasks"], (signatures(d)[t["id"]] for t in d["tasks"]), strict=True)]

    def spread(xs: list[int]) -> dict[str, float]:
        return {"min": min(xs, default=0), "max": max(xs, default=0),
                "mean": round(statistics.fmean(xs), 2) if xs else 0.0}

    return {
        "templates_found": found if found is not None else len(dataflows),
        "dags": len(dataflows),
        "tasks_processing": len(proc),
        "tasks_all": len(tasks),
        "sources": sum(_kind(t) == "source" for t in tasks),
        "sinks": sum(_kind(t) == "sink" for t in tasks),
        "streams": sum(len(d["streams"]) for d in dataflows),
        "unique_types_processing": len({t["type"] for t in proc}),
        "unique_abstract_processing": len({(t["type"], json.dumps(t["config"])) for t in proc}),
        "unique_types_all": len({t["type"] for t in tasks}),
        "unique_processing_merged": len({s for s, k in sigs if k == "processing"}),
        "unique_all_merged": len({s for s, _ in sigs}),
        "per_dag_processing": spread(per_proc),
        "per_dag_all": spread(per_all),
    }


def paper_table(all_stats: dict[str, Any], chosen_stats: dict[str, Any]) -> str:
    """Markdown table: the paper's section 5.1 numbers beside ours (processes | all tasks)."""
    def both(s: dict[str, Any], a: str, b: str) -> str:
        return f"{s[a]} / {s[b]}"

    def rng(s: dict[str, Any]) -> str:
        p, a = s["per_dag_processing"], s["per_dag_all"]
        return f"{p['min']}-{p['max']} (mean {p['mean']}) / {a['min']}-{a['max']} (mean {a['mean']})"

    rows = [
        ("templates found", "-", str(all_stats["templates_found"]), "-"),
        ("usable templates", PAPER["usable"], all_stats["dags"], "-"),
        ("chosen templates", PAPER["chosen"], "-", chosen_stats["dags"]),
        ("tasks (processes / all)", PAPER["tasks"], both(all_stats, "tasks_processing", "tasks_all"),
         both(chosen_stats, "tasks_processing", "tasks_all")),
        ("unique task types (processes / all)", PAPER["unique"],
         both(all_stats, "unique_types_processing", "unique_types_all"),
         both(chosen_stats, "unique_types_processing", "unique_types_all")),
        ("unique after merge (processes / all)", PAPER["unique"],
         both(all_stats, "unique_processing_merged", "unique_all_merged"),
         both(chosen_stats, "unique_processing_merged", "unique_all_merged")),
        ("tasks per DAG (processes / all)", f"{PAPER['min']}-{PAPER['max']}", rng(all_stats), rng(chosen_stats)),
    ]
    lines = ["| quantity | paper (2017 portal) | ours, all usable | ours, chosen |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)


def select(dataflows: Sequence[Dataflow], n: int | None = 35, seed: int = DEFAULT_SEED) -> list[Dataflow]:
    """Seeded choice of ``n`` dataflows (``n=None``: all usable), returned sorted by id.

    The paper picked 35 "arbitrary" templates (section 5.1); a uniform sample without
    replacement over the id-sorted list is the reproducible equivalent, independent of the
    input order.
    """
    pool = sorted(dataflows, key=lambda d: d["id"])
    if n is None:
        return pool
    if not 0 <= n <= len(pool):
        raise ValueError(f"cannot choose {n} of {len(pool)} dataflows")
    return sorted(random.Random(seed).sample(pool, n), key=lambda d: d["id"])
