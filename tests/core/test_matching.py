"""Match policies in the core: exact is unchanged, order-free inputs only where nothing sees them.

The policies here are toys (a type ``U*`` commutes, anything else does not; configs compared as
floats), so the core is tested without the task layer; the task types' own canonical forms and
the semantic policy are tested in ``tests/tasks/test_matching.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.core.dataflow import parse_dataflow
from reuse.core.equivalence import check_dedup, dedup, signatures
from reuse.core.errors import ManagerError
from reuse.core.invariants import assert_invariants
from reuse.core.manager import Manager
from reuse.core.matching import EXACT, MatchPolicy

TOY = MatchPolicy("toy", canonical=lambda t, c: {k: float(v) for k, v in c.items()}
                  if isinstance(c, dict) else c, commutes=lambda t: not t.startswith("K"))


def flow(dag, tasks, streams):
    return parse_dataflow({"id": dag, "tasks": [{"id": i, "type": t, "config": c}
                                                for i, t, c in tasks], "streams": streams})


def union(dag, first, second, below=None, cfg=None):
    """src -> a, src -> b, {first, second} -> u [-> below] -> out: ``u`` reads ``first`` first."""
    tasks = [("s", "S", "source"), ("a", "A", {"x": 1}), ("b", "B", {"x": 2}),
             ("u", "U", cfg or {"n": 1})]
    streams = [["s", "a"], ["s", "b"], [first, "u"], [second, "u"]]
    last = "u"
    if below:
        tasks.append(("k", below, {}))
        streams.append(["u", "k"])
        last = "k"
    tasks.append(("o", "Out", "sink"))
    streams.append([last, "o"])
    return flow(dag, tasks, streams)


def test_exact_signatures_did_not_move():
    """The hash of today's exact signatures, computed on main before issue 25: Figures 2-4 rest
    on it, so the default policy must give it bit for bit."""
    f = flow("g", [("s", "SYS", "source"), ("a", "RangeFilter", {"valid_range": {"t": [1, 2]}}),
                   ("b", "KalmanFilter", {"fields": ["t"]}), ("j", "MQTTPublish", "sink")],
             [["s", "a"], ["s", "b"], ["b", "j"], ["a", "j"]])
    assert signatures(f) == signatures(f, EXACT) == {
        "s": "8415f99fc65a3fd3e89381edc905a37b", "a": "3fa3a41824cf7a3abcf5379974a99218",
        "b": "fd046157cc29e5e82922394475587595", "j": "ee492895e1d9365e59d9e2d8c39e468e"}


def test_exact_ignores_every_input_order():
    one, two = union("one", "a", "b", below="K"), union("two", "b", "a", below="K")
    assert signatures(one) == signatures(two)


def test_canonical_configs_give_one_signature():
    one, two = union("one", "a", "b", cfg={"n": 1}), union("two", "a", "b", cfg={"n": "1.0"})
    assert signatures(one)["u"] != signatures(two)["u"]
    assert signatures(one, TOY) == signatures(two, TOY)


def test_a_commuting_task_with_nothing_order_sensitive_below_is_order_free():
    one, two = union("one", "a", "b"), union("two", "b", "a")
    assert TOY.ordered_tasks(one) == frozenset()
    assert signatures(one, TOY) == signatures(two, TOY)


def test_order_counts_for_a_non_commuting_task_and_everything_above_one():
    one, two = union("one", "a", "b", below="K"), union("two", "b", "a", below="K")
    assert TOY.ordered_tasks(one) == {"s", "a", "b", "u", "k"}
    s1, s2 = signatures(one, TOY), signatures(two, TOY)
    assert s1["a"] == s2["a"] and s1["u"] != s2["u"] and s1["o"] != s2["o"]
    # a non-commuting task itself with swapped inputs
    k1 = flow("k1", [("s", "S", 0), ("a", "A", 0), ("b", "B", 0), ("j", "Kj", 0)],
              [["s", "a"], ["s", "b"], ["a", "j"], ["b", "j"]])
    k2 = flow("k2", [("s", "S", 0), ("a", "A", 0), ("b", "B", 0), ("j", "Kj", 0)],
              [["s", "a"], ["s", "b"], ["b", "j"], ["a", "j"]])
    assert signatures(k1, TOY)["j"] != signatures(k2, TOY)["j"]


@pytest.mark.parametrize("below", [None, "K"])
def test_manager_merges_swapped_inputs_only_where_order_is_free(below):
    m = Manager(match=TOY)
    m.submit(union("one", "a", "b", below=below))
    delta = m.submit(union("two", "b", "a", below=below))
    assert_invariants(m)
    if below is None:
        assert len(delta.start) == 0 and "one.u" in delta.reused
        # an order-free task is wired by signature order, whoever started it
        sig = signatures(union("one", "a", "b"), TOY)
        assert list(m.running_task("one.u").parents) == sorted(
            ["one.a", "one.b"], key=lambda t: sig[t.split(".")[1]])
    else:
        assert {t.id for t in delta.start} == {"two.u", "two.k", "two.o"}
        assert m.running_task("two.u").parents == ("one.b", "one.a")
    m.remove("one")
    assert_invariants(m)


@given(st.permutations(["a", "b", "c"]), st.booleans())
def test_dedup_under_a_policy_gives_a_dedup_dag(order, sensitive):
    """Two copies of a union (inputs in two orders) over three branches: collapsed when the
    order is free, kept apart otherwise; the result is de-dup under the same policy."""
    tasks = [("s", "S", 0), ("a", "A", 0), ("b", "B", 0), ("c", "C", 0), ("u1", "U", 0),
             ("u2", "U", 0)]
    streams = [["s", x] for x in "abc"] + [[x, "u1"] for x in "abc"] + [[x, "u2"] for x in order]
    for i, u in enumerate(("u1", "u2")):
        tasks.append((f"k{i}", "K" if sensitive else "V", {"i": i}))
        streams.append([u, f"k{i}"])
    f = flow("f", tasks, streams)
    d = dedup(f, TOY)
    check_dedup(d, TOY)
    kept = {t.id for t in d.tasks}
    assert ("u2" in kept) == (sensitive and list(order) != ["a", "b", "c"])


def test_state_remembers_its_policy():
    m = Manager(match=TOY)
    m.submit(union("one", "a", "b"))
    state = m.to_state()
    assert state["match"] == "toy" and "match" not in Manager().to_state()
    again = Manager.from_state(state, match=TOY)
    assert again.to_state() == state
    with pytest.raises(ManagerError, match="saved with match policy 'toy', not 'exact'"):
        Manager.from_state(state)
