"""Task equivalence (section 3.2): fast Merkle signatures, and the paper's literal definition.

Two tasks are *equivalent*, ``t_i <-> t_j``, when they are config-similar and their ancestor graphs
``alpha_D(t)`` are equivalent. The paper's wording asks only for a bijection between the ancestor
graphs' tasks that maps each task to a config-similar one. We also require the bijection to
preserve the wiring (``s = <a, b>`` in one graph iff ``<eps(a), eps(b)>`` in the other): two
ancestor graphs with the same tasks wired differently compute different streams, and the intent
of "ancestor graph" (the prospective provenance of the task's events) is exactly that wiring.

The fast form is a signature computed bottom-up::

    sig(t) = H(type(t), canonical config(t), sorted(sig(p) for p in pi_D(t)))

Two tasks of de-dup DAGs have equal signatures iff they are equivalent in the wiring-preserving
sense: by induction, ``sig(t)`` determines the signatures of all of ``t``'s ancestors and which of
them feed which, and in a de-dup DAG no two tasks share a signature, so matching signatures is
the bijection. A merge then looks up each submitted task's signature in a hash index, costing
O(size of the submitted DAG) instead of a pairwise search over the running tasks.

The literal form (:func:`ancestor_graph`, :func:`tasks_equivalent_literal`) follows the paper's
recurrences and searches for the bijection with networkx's VF2 isomorphism; it is slow and is
kept for tests and benchmarks.

A :class:`~reuse.core.matching.MatchPolicy` (``match=``) decides what is compared: ``EXACT``, the
default, is the signature above; a semantic policy hashes each task's canonical config and, for
a task whose input order counts, its parents' signatures in that order instead of sorted. The
literal form is the exact policy's only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx
from networkx.algorithms.isomorphism import DiGraphMatcher

from reuse.core.dataflow import Dataflow, Task
from reuse.core.errors import shown
from reuse.core.matching import EXACT, MatchPolicy

__all__ = [
    "task_signature",
    "signatures",
    "check_dedup",
    "dedup",
    "AncestorGraph",
    "ancestor_graph",
    "ancestor_graphs_equivalent",
    "tasks_equivalent_literal",
    "maximal",
]

Signature = str


def task_signature(type_: str, config_key: str, parent_signatures: Iterable[Signature], *,
                   ordered: bool = False) -> Signature:
    """The Merkle signature of a task from its type, canonical config and parents' signatures.

    The parents' signatures are hashed sorted, or in the order given when ``ordered``.

    Examples
    --------
    >>> a = task_signature("SYS", '"source"', [])
    >>> b = task_signature("Parse", '{}', [a])
    >>> b == task_signature("Parse", '{}', [a]) and b != task_signature("Parse", '{}', [])
    True
    """
    h = hashlib.blake2b(digest_size=16)
    # surrogatepass: a lone surrogate (only a Task built in Python can hold one; parsing
    # refuses them) hashes as itself instead of failing; valid text encodes as plain UTF-8
    h.update(f"{len(type_)}:{type_}|{len(config_key)}:{config_key}|".encode("utf-8",
                                                                            "surrogatepass"))
    for p in (parent_signatures if ordered else sorted(parent_signatures)):
        h.update(p.encode("ascii"))
    return h.hexdigest()


def signatures(flow: Dataflow, match: MatchPolicy = EXACT,
               ordered: frozenset[str] | None = None) -> dict[str, Signature]:
    """Signature of every task of ``flow``, by task id, computed in topological order.

    ``ordered`` is ``match.ordered_tasks(flow)`` if the caller has it already.

    Examples
    --------
    >>> from reuse.core.dataflow import parse_dataflow
    >>> f = parse_dataflow({"id": "f", "tasks": [{"id": i, "type": i.upper(), "config": {}}
    ...     for i in "sabj"], "streams": [["s", "a"], ["s", "b"], ["a", "j"], ["b", "j"]]})
    >>> g = parse_dataflow({**f.to_dict(), "streams": [["s", "a"], ["s", "b"], ["b", "j"],
    ...                                               ["a", "j"]]})
    >>> signatures(f)["j"] == signatures(g)["j"]  # exact: input order never counts
    True
    >>> in_order = MatchPolicy("ordered", commutes=lambda t: False)
    >>> signatures(f, in_order)["j"] == signatures(g, in_order)["j"]
    False
    """
    sig: dict[str, Signature] = {}
    if ordered is None:
        ordered = match.ordered_tasks(flow)
    for tid in flow.order:
        task = flow.task(tid)
        key = match.task_key(task)
        parents = match.inputs(flow.parents[tid], sig, tid in ordered)
        sig[tid] = task_signature(task.type, key, (sig[p] for p in parents),
                                  ordered=match.ordered_hash)
    return sig


def check_dedup(flow: Dataflow, match: MatchPolicy = EXACT,
                ordered: frozenset[str] | None = None) -> dict[str, Signature]:
    """Signatures of a de-dup DAG; a :class:`DataflowError` naming two equivalent tasks otherwise.

    Each submitted dataflow must be a de-dup DAG (section 3.2): two equivalent tasks in one DAG
    would compute the same stream twice, and the running DAGs could not stay de-dup.
    """
    sig = signatures(flow, match, ordered)
    first: dict[Signature, str] = {}
    for tid in flow.order:
        other = first.setdefault(sig[tid], tid)
        if other != tid:
            raise flow.error(
                f"is not de-dup: tasks '{shown(other)}' and '{shown(tid)}' are equivalent "
                f"(same type, config "
                f"and ancestor graph); merge them or pass --dedup", task=tid)
    return sig


def dedup(flow: Dataflow, match: MatchPolicy = EXACT) -> Dataflow:
    """The de-dup DAG equivalent to ``flow``: each set of equivalent tasks collapsed to its first.

    Collapsing is done in topological order, so a task whose parents were collapsed is compared
    with the collapsed parents (two tasks fed by equivalent parents become equivalent). Under a
    policy other than ``EXACT``, which tasks' input order counts is decided on ``flow``, and each
    kept task reads its inputs in the order its signature hashed them, so the result is de-dup
    under the same policy.
    """
    sig: dict[str, Signature] = {}
    keep: dict[Signature, str] = {}
    rename: dict[str, str] = {}
    wired: dict[str, list[str]] = {}
    ordered = match.ordered_tasks(flow)
    for tid in flow.order:
        task = flow.task(tid)
        renamed = list(dict.fromkeys(rename[p] for p in flow.parents[tid]))
        parents = match.inputs(renamed, sig, tid in ordered)
        key = match.task_key(task)
        s = task_signature(task.type, key, (sig[p] for p in parents), ordered=match.ordered_hash)
        rename[tid] = keep.setdefault(s, tid)
        sig[rename[tid]] = s
        wired.setdefault(rename[tid], parents)
    kept = set(rename.values())
    tasks = tuple(t for t in flow.tasks if t.id in kept)
    streams: list[tuple[str, str]] = []
    if match is EXACT:
        for up, down in flow.streams:
            stream = (rename[up], rename[down])
            if stream not in streams:
                streams.append(stream)
    else:
        streams = [(p, t) for t in flow.order if t in kept for p in wired[t]]
    return Dataflow(flow.id, tasks, tuple(streams), source=flow.source)


# --- the literal definitions, for tests and benchmarks -------------------------------------------

@dataclass(frozen=True)
class AncestorGraph:
    """``A<T, S>``: a task, its ancestors and the streams between them (``alpha_D(t)``)."""

    root: str
    tasks: frozenset[str]
    streams: frozenset[tuple[str, str]]

    def __le__(self, other: AncestorGraph) -> bool:
        """Sub-ancestor relation ``A_j subset A_i`` (tasks and streams both contained)."""
        return self.tasks <= other.tasks and self.streams <= other.streams


def ancestor_graph(flow: Dataflow, task_id: str,
                   _memo: dict[str, AncestorGraph] | None = None) -> AncestorGraph:
    """``alpha_D(t) = A<{t}, {s | down(s) = t}> U (union over p in pi_D(t) of alpha_D(p))``."""
    memo = {} if _memo is None else _memo
    for tid in flow.order:  # the recurrence, evaluated bottom-up so deep DAGs do not recurse
        if tid in memo:
            continue
        tasks = {tid}
        streams = {(p, tid) for p in flow.parents[tid]}
        for p in flow.parents[tid]:
            tasks |= memo[p].tasks
            streams |= memo[p].streams
        memo[tid] = AncestorGraph(tid, frozenset(tasks), frozenset(streams))
        if tid == task_id:
            break
    return memo[task_id]


def _as_graph(flow: Dataflow, graph: AncestorGraph) -> nx.DiGraph:
    g = nx.DiGraph()
    for tid in graph.tasks:
        g.add_node(tid, abstract=flow.task(tid).abstract)
    g.add_edges_from(graph.streams)
    return g


def ancestor_graphs_equivalent(flow_i: Dataflow, a_i: AncestorGraph,
                               flow_j: Dataflow, a_j: AncestorGraph) -> bool:
    """``A_i <-> A_j``: a bijection of config-similar tasks that also preserves the streams."""
    if len(a_i.tasks) != len(a_j.tasks) or len(a_i.streams) != len(a_j.streams):
        return False
    matcher = DiGraphMatcher(_as_graph(flow_i, a_i), _as_graph(flow_j, a_j),
                             node_match=lambda x, y: x["abstract"] == y["abstract"])
    return bool(matcher.is_isomorphic())


def tasks_equivalent_literal(flow_i: Dataflow, t_i: str, flow_j: Dataflow, t_j: str,
                             memo_i: dict[str, AncestorGraph] | None = None,
                             memo_j: dict[str, AncestorGraph] | None = None) -> bool:
    """``t_i <-> t_j`` by the definitions: config-similar, and ancestor graphs equivalent."""
    task_i: Task = flow_i.task(t_i)
    task_j: Task = flow_j.task(t_j)
    if task_i.abstract != task_j.abstract:
        return False
    return ancestor_graphs_equivalent(flow_i, ancestor_graph(flow_i, t_i, memo_i),
                                      flow_j, ancestor_graph(flow_j, t_j, memo_j))


def maximal(graphs: Iterable[AncestorGraph]) -> list[AncestorGraph]:
    """``Omega``: the ancestor graphs that are not sub-ancestors of another one in the set."""
    gs = list({(g.tasks, g.streams): g for g in graphs}.values())
    return [g for g in gs if not any(g is not h and g <= h for h in gs)]
