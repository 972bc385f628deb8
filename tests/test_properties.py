"""Property tests: random overlapping de-dup DAG collections and random submit/remove sequences.

Collections are drawn as ancestor-closed pieces of a random "pool" DAG (so they overlap), with
fresh task ids per DAG, private extra tasks, forks, joins and several sources. After every
operation the invariants hold, the fast manager agrees with the literal reference one (same
running tasks and ids, same wiring, same running DAGs), and the running task count is the number
of equivalence classes among the submitted tasks.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.dataflow import Dataflow, Task
from reuse.equivalence import dedup, signatures, tasks_equivalent_literal
from reuse.invariants import assert_invariants
from reuse.manager import Manager
from reuse.reference import ReferenceManager

SOURCES = ["SYS", "TAXI", "FIT"]
TYPES = ["Parse", "Filter", "Kalman", "Join"]


@st.composite
def pools(draw) -> list[tuple[str, object, tuple[int, ...]]]:
    """A random DAG as (type, config, parents) per node, nodes in topological order."""
    n_sources = draw(st.integers(1, 3))
    n = draw(st.integers(n_sources + 1, 12))
    nodes: list[tuple[str, object, tuple[int, ...]]] = []
    for i in range(n):
        parents: tuple[int, ...] = ()
        if i >= n_sources and draw(st.integers(0, 5)) > 0:
            # mostly one parent (pipelines and forks), sometimes two or three (joins)
            k = draw(st.sampled_from([1, 1, 1, 2, 2, 3]))
            parents = tuple(sorted(draw(st.sets(st.integers(0, i - 1), min_size=1,
                                                max_size=min(i, k)))))
        if parents:
            nodes.append((draw(st.sampled_from(TYPES)), draw(st.integers(0, 1)), parents))
        else:
            nodes.append((draw(st.sampled_from(SOURCES)), "source", ()))
    return nodes


def closure(pool, chosen) -> list[int]:
    seen: set[int] = set()
    stack = list(chosen)
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(pool[i][2])
    return sorted(seen)


@st.composite
def collections(draw) -> list[Dataflow]:
    pool = draw(pools())
    flows = []
    for k in range(draw(st.integers(2, 7))):
        picked = draw(st.sets(st.integers(0, len(pool) - 1), min_size=1, max_size=3))
        nodes = closure(pool, picked)
        perm = draw(st.permutations(range(len(nodes))))
        name = {i: f"n{perm[j]}" for j, i in enumerate(nodes)}
        tasks = [Task(name[i], pool[i][0], pool[i][1]) for i in nodes]
        streams = [(name[p], name[i]) for i in nodes for p in pool[i][2]]
        if draw(st.booleans()):  # a private task hanging off one of the picked nodes
            at = draw(st.sampled_from(nodes))
            tasks.append(Task("private", draw(st.sampled_from(TYPES)), draw(st.integers(0, 2))))
            streams.append((name[at], "private"))
        flows.append(dedup(Dataflow(f"D{k}", tuple(tasks), tuple(streams))))
    return flows


def equivalence_classes(flows) -> int:
    return len({s for f in flows for s in signatures(f).values()})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_traces_keep_invariants_and_agree_with_reference(data):
    flows = data.draw(collections())
    toggles = data.draw(st.lists(st.integers(0, len(flows) - 1), min_size=len(flows),
                                       max_size=24))
    fast, ref = Manager(), ReferenceManager()
    present: list[str] = []

    def step(dag: str) -> None:
        if dag in present:
            fast.remove(dag)
            ref.remove(dag)
            present.remove(dag)
        else:
            flow = next(f for f in flows if f.id == dag)
            fast.submit(flow)
            ref.submit(flow)
            present.append(dag)
        assert_invariants(fast)
        assert fast.task_count == ref.task_count
        assert fast.task_count == equivalence_classes([fast.submitted[d] for d in present])
        wiring = {(t.id, t.type, _key(t.config), tuple(sorted(t.parents)))
                  for t in fast.running_tasks()}
        assert wiring == ref.wiring()
        assert {frozenset(rd.tasks) for rd in fast.running_dags()} == ref.partition()
        for d in present:
            assert fast.sink_map(d) == ref.sinks[d]

    for i in toggles:
        step(flows[i].id)
    for d in list(present):
        step(d)
    assert fast.task_count == 0 and fast.running_dag_count == 0


@settings(max_examples=80, deadline=None)
@given(collections())
def test_signature_equivalence_agrees_with_literal_definition(flows):
    sigs = {f.id: signatures(f) for f in flows}
    for f, g in itertools.combinations_with_replacement(flows, 2):
        for t in f.order:
            for u in g.order:
                if f is g and t == u:
                    continue
                same = sigs[f.id][t] == sigs[g.id][u]
                assert same == tasks_equivalent_literal(f, t, g, u), (f.id, t, g.id, u)


def _key(config):
    from reuse.dataflow import canonical_config
    return canonical_config(config)
