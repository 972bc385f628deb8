"""Property tests: random overlapping de-dup DAG collections and random submit/remove sequences.

Collections are drawn as ancestor-closed pieces of a random "pool" DAG (so they overlap), with
fresh task ids per DAG, private extra tasks, forks, joins and several sources. After every
operation the invariants hold, the fast manager agrees with the literal reference one (same
running tasks and ids, same wiring, same running DAGs), and the running task count is the number
of equivalence classes among the submitted tasks. The runtime acts on the plan deltas, not the
states, so each delta is also checked against the reference's states before and after its step.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from reuse.core.dataflow import Dataflow, Task
from reuse.core.equivalence import dedup, signatures, tasks_equivalent_literal
from reuse.core.invariants import assert_invariants
from reuse.core.manager import Manager
from reuse.core.reference import ReferenceManager

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


def traces(data, flows) -> list[str]:
    """A random trace as DAG ids to toggle (submit if absent, else remove), then a full drain."""
    toggles = data.draw(st.lists(st.integers(0, len(flows) - 1), min_size=len(flows),
                                 max_size=24))
    present: list[str] = []
    out = []
    for i in toggles:
        dag = flows[i].id
        out.append(dag)
        if dag in present:
            present.remove(dag)
        else:
            present.append(dag)
    return out + present


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_traces_keep_invariants_and_agree_with_reference(data):
    flows = data.draw(collections())
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

    for dag in traces(data, flows):
        step(dag)
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
    from reuse.core.dataflow import canonical_config
    return canonical_config(config)


# --- plan deltas: what the runtime acts on -------------------------------------------------------

def _ref_tasks(ref: ReferenceManager) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """The reference's running tasks: id -> (type, canonical config, sorted parents)."""
    return {tid: (type_, config, parents) for tid, type_, config, parents in ref.wiring()}


def _streams(tasks) -> set[tuple[str, str]]:
    return {(p, tid) for tid, (_, _, parents) in tasks.items() for p in parents}


def _image(ref: ReferenceManager, flow: Dataflow) -> dict[str, str]:
    """Each task of a submitted DAG -> the running task equivalent to it, by the literal definition
    (ancestor graphs and VF2) over its running DAG: exactly one, as the running DAGs are de-dup."""
    running = next(r for r in ref.running if flow.id in r.supports).as_dataflow()
    memo_r: dict = {}
    memo_f: dict = {}
    out = {}
    for t in flow.order:
        found = [r for r in running.order
                 if tasks_equivalent_literal(running, r, flow, t, memo_r, memo_f)]
        assert len(found) == 1, (flow.id, t, found)
        out[t] = found[0]
    return out


def _exact(listed, expected: set, what: str) -> None:
    """A delta field lists exactly the expected items, each once."""
    assert len(listed) == len(set(listed)), f"{what} repeats an item: {listed}"
    assert set(listed) == expected, (f"{what}: extra {sorted(set(listed) - expected)}, "
                                     f"missing {sorted(expected - set(listed))}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_plan_deltas_are_the_difference_of_the_reference_states(data):
    """Each step's delta is derived here from the literal reference's states before and after
    the step (never from the code that builds it) and must match field by field; a runtime
    that enacts only the deltas ends each step with the reference's running tasks and streams.
    """
    flows = {f.id: f for f in data.draw(collections())}
    fast, ref = Manager(), ReferenceManager()
    enacted: dict[str, tuple[str, str, tuple[str, ...]]] = {}  # a runtime fed only the deltas
    fused = 0  # running DAGs merged into others or split off: steer the search towards them
    for dag in traces(data, list(flows.values())):
        tasks0, dags0 = _ref_tasks(ref), {rd.id: set(rd.tasks) for rd in fast.running_dags()}
        streams0 = _streams(tasks0)
        removing = dag in fast.submitted
        if removing:
            gid = fast.phi(dag)  # Phi(D_r), whose block holds D_r's sinks in the reference
            assert set(ref.sinks[dag].values()) <= dags0[gid]
            d = fast.remove(dag)
            assert d.running_dag == gid
            ref.remove(dag)
        else:
            d = fast.submit(flows[dag])
            ref.submit(flows[dag])
        tasks1 = _ref_tasks(ref)
        streams1 = _streams(tasks1)
        dags1 = {rd.id: set(rd.tasks) for rd in fast.running_dags()}
        assert {frozenset(ts) for ts in dags1.values()} == ref.partition()
        assert (d.op, d.dag) == ("remove" if removing else "submit", dag)
        new, gone = set(tasks1) - set(tasks0), set(tasks0) - set(tasks1)

        if removing:
            assert not (d.start or d.connect or d.boundary or d.reused or d.merged or d.sinks)
            assert not new
            _exact(d.stop, gone, "stop")
            _exact(d.disconnect, streams0 - streams1, "disconnect")
            for i, t in enumerate(d.stop):  # children first: a task stops after its readers
                readers = {c for p, c in streams0 if p == t}
                assert readers <= set(d.stop[:i]), (t, readers, d.stop)
            # Phi(D_r)'s remaining tasks, split into the running DAGs that hold them now
            parts = {g for g, ts in dags1.items() if ts <= dags0[gid]}
            _exact(d.split_into, parts, "split_into")
            assert set().union(*(dags1[g] for g in parts)) == dags0[gid] - gone
            changed = {gid}
            assert set(dags1) - set(d.split_into) == set(dags0) - changed
        else:
            flow = flows[dag]
            image = _image(ref, flow)
            assert not (d.stop or d.disconnect or d.split_into)
            assert not gone and set(image.values()) >= new
            _exact([t.id for t in d.start], new, "start")
            assert {t.id: (t.type, _key(t.config), tuple(sorted(t.parents))) for t in d.start} \
                == {t: tasks1[t] for t in new}
            for i, t in enumerate(d.start):  # parents first: each reads what already runs
                assert set(t.parents) <= set(tasks0) | {s.id for s in d.start[:i]}, (t, d.start)
            sig = signatures(flow)  # the key a running task is found by when reused later
            assert {t.id: t.signature for t in d.start} == {
                image[t]: sig[t] for t in flow.order if image[t] in new}
            reused = set(image.values()) & set(tasks0)
            _exact(d.reused, reused, "reused")
            added = streams1 - streams0
            assert streams0 <= streams1 and {c for _, c in added} <= new
            _exact(d.connect, {(p, c) for p, c in added if p in new}, "connect (S*_x)")
            _exact(d.boundary, {(p, c) for p, c in added if p not in new}, "boundary (S+_x)")
            assert dict(d.sinks) == {s: image[s] for s in flow.sinks} == ref.sinks[dag]
            # Y: the running DAGs holding a reused task, fused with the new tasks into one
            y = {g for g, ts in dags0.items() if ts & reused}
            _exact(d.merged, y, "merged")
            assert d.running_dag in dags1
            assert dags1[d.running_dag] == set().union(new, *(dags0[g] for g in y))
            changed = y
            assert set(dags1) - {d.running_dag} == set(dags0) - changed
            assert fast.phi(dag) == d.running_dag
        fused += max(0, len(d.merged) - 1) + max(0, len(d.split_into) - 1)
        for g in set(dags0) - changed:  # every other running DAG is untouched
            assert dags1[g] == dags0[g]

        # enact: start and stop tasks, and the streams must be those the parents name
        assert {(p, t.id) for t in d.start for p in t.parents} == set(d.connect) | set(d.boundary)
        for t in d.stop:
            del enacted[t]
        for s in d.start:
            enacted[s.id] = (s.type, _key(s.config), tuple(sorted(s.parents)))
        assert enacted == tasks1
    assert not enacted
    target(float(fused), label="running DAGs merged or split")
