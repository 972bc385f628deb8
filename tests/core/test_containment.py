"""Containment rewrites in the core (issue 25, item 3), on a toy model with no task layer.

The toy: sources emit the integers 0..39 (``S2`` shifted by 100), ``P`` multiplies by its
config plus one, a task with several inputs reads their union in input order, ``F`` with config ``[lo, hi]`` keeps ``lo <= x <= hi``, and ``O`` is a sink. The
toy rule ``interval`` (a running ``F`` contains a narrower one) is sound for that model, so what
is tested here is the core's part: the plan's wiring, the merge and unmerge of plans, the state,
and that every dataflow's sinks get the same integers from the running tasks as from the
dataflow run alone. The real rules are tested against the tasks' code in
``tests/tasks/test_containment.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.core.containment import contain
from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.core.equivalence import signatures
from reuse.core.invariants import assert_invariants
from reuse.core.manager import Manager
from reuse.core.matching import ContainmentRule, MatchPolicy

INTERVAL = ContainmentRule("interval", "F", lambda w, n: w[0] <= n[0] and n[1] <= w[1])
TOY = MatchPolicy("toy", commutes=lambda t: t != "K", containment=(INTERVAL,))
NO_RULES = MatchPolicy("toy", commutes=lambda t: t != "K")


def run(tasks: Mapping[str, tuple[str, Any, Sequence[str]]]) -> dict[str, list[int]]:
    """The toy model's output of every task (``id -> (type, config, parents)``, any order)."""
    out: dict[str, list[int]] = {}

    def of(tid: str) -> list[int]:
        if tid not in out:
            type_, config, parents = tasks[tid]
            if not parents:
                out[tid] = [x + (100 if type_ == "S2" else 0) for x in range(40)]
            else:
                seen = [x for p in parents for x in of(p)]
                if type_ == "F":
                    seen = [x for x in seen if config[0] <= x <= config[1]]
                elif type_ == "P":
                    seen = [x * (config + 1) for x in seen]
                elif type_ == "K":  # order-sensitive: a running sum
                    seen = [sum(seen[:i + 1]) for i in range(len(seen))]
                out[tid] = seen
        return out[tid]

    for tid in tasks:
        of(tid)
    return out


def run_flow(flow: Dataflow) -> dict[str, list[int]]:
    """Each sink's integers, sorted: a union's order is free unless a running sum is below
    it, and then the policy keeps the order (the sums differ otherwise)."""
    outs = run({t.id: (t.type, t.config, flow.parents[t.id]) for t in flow.tasks})
    return {s: sorted(outs[s]) for s in flow.sinks}


def run_running(m: Manager) -> dict[str, list[int]]:
    outs = run({t.id: (t.type, t.config, t.parents) for t in m.running_tasks()})
    return {t: sorted(v) for t, v in outs.items()}


def flow(dag: str, tasks: list[tuple[str, str, Any]], streams: list[list[str]]) -> Dataflow:
    return parse_dataflow({"id": dag, "tasks": [{"id": i, "type": t, "config": c}
                                                for i, t, c in tasks], "streams": streams})


def chain(dag: str, *filters: tuple[int, int], src: str = "S1", sink: Any = 0) -> Dataflow:
    """``src -> p -> f0 -> f1 ... -> o``."""
    tasks = [("s", src, "source"), ("p", "P", 0)]
    tasks += [(f"f{i}", "F", list(b)) for i, b in enumerate(filters)]
    tasks.append(("o", "O", sink))
    ids = [t[0] for t in tasks]
    return flow(dag, tasks, [[a, b] for a, b in zip(ids, ids[1:], strict=False)])


def check(m: Manager) -> None:
    """Invariants, outputs, and every rewrite's wider task still running under its id."""
    assert_invariants(m)
    running = run_running(m)
    for dag, asked in m.submitted.items():
        alone = run_flow(asked)
        assert run_flow(m.plan(dag)) == alone
        assert {s: running[r] for s, r in m.sink_map(dag).items()} == alone
        for r in m.rewrites(dag):
            assert m.running_id(dag, r.via) == r.wider


def test_a_narrow_filter_reads_the_running_wide_one():
    m = Manager(match=TOY)
    m.submit(chain("wide", (0, 30)))
    delta = m.submit(chain("narrow", (10, 20)))
    check(m)
    assert [t.id for t in delta.start] == ["narrow.f0", "narrow.o"]
    assert set(delta.reused) == {"wide.s", "wide.p", "wide.f0"}
    assert m.running_task("narrow.f0").parents == ("wide.f0",)
    assert m.users("wide.f0") == {"wide", "narrow"} and m.task_count == 6
    assert m.default_task_count == 8  # the DAGs as written
    assert [t.id for t in m.plan("narrow").tasks] == ["s", "p", "f0.wider", "f0", "o"]
    assert m.submitted["narrow"] == chain("narrow", (10, 20))


def test_removing_the_wide_owner_re_plans_the_residual():
    """No one asks for the wide task once its owner left: the residual's dataflow gets its
    plan as written, in the remove's own delta (issue 36; :mod:`reuse.core.replan`)."""
    m = Manager(match=TOY)
    m.submit(chain("wide", (0, 30)))
    m.submit(chain("narrow", (10, 20)))
    delta = m.remove("wide")
    check(m)
    assert set(delta.stop) == {"wide.o", "wide.f0", "narrow.f0", "narrow.o"}
    assert [(t.id, t.parents) for t in delta.start] == [("narrow.f0#2", ("wide.p",)),
                                                        ("narrow.o#2", ("narrow.f0#2",))]
    assert dict(delta.handover) == {"narrow.f0#2": "narrow.f0", "narrow.o#2": "narrow.o"}
    assert delta.replanned == {"narrow": {"o": "narrow.o#2"}}
    assert m.rewrites("narrow") == () and m.task_count == 4
    delta = m.remove("narrow")
    assert set(delta.stop) == {"narrow.o#2", "narrow.f0#2", "wide.p", "wide.s"}
    assert m.task_count == 0


def test_what_is_not_provably_inside_is_left_as_submitted():
    m = Manager(match=TOY)
    m.submit(chain("wide", (0, 30)))
    for dag in (chain("overlap", (10, 40)),  # not inside
                chain("other-src", (10, 20), src="S2"),  # other inputs
                flow("other-parent", [("s", "S1", "source"), ("p", "P", 1), ("f", "F", [1, 2]),
                                      ("o", "O", 0)], [["s", "p"], ["p", "f"], ["f", "o"]])):
        assert contain(dag, m, TOY)[:2] == (dag, ())
    assert contain(chain("narrow", (10, 20)), m, NO_RULES)[1] == ()
    assert contain(chain("same", (0, 30), sink=1), m, TOY)[1] == ()  # merged as it is


def test_a_second_residual_of_the_same_config_shares_the_first():
    """A running residual wins over a narrower wide task: the narrow task's own stream is
    already computed behind the first wide one."""
    m = Manager(match=TOY)
    m.submit(chain("wide", (0, 30)))
    m.submit(chain("a", (10, 20)))
    m.submit(chain("mid", (5, 25)))
    delta = m.submit(chain("b", (10, 20), sink=1))
    check(m)
    assert m.running_task("b.o").parents == ("a.f0",) and [t.id for t in delta.start] == ["b.o"]


def test_nested_running_filters_give_a_chain_of_residuals():
    m = Manager(match=TOY)
    m.submit(chain("wide", (0, 30)))
    m.submit(chain("mid", (5, 25)))  # behind wide
    m.submit(chain("narrow", (10, 20)))  # behind mid, behind wide
    check(m)
    assert m.running_task("mid.f0").parents == ("wide.f0",)
    assert m.running_task("narrow.f0").parents == ("mid.f0",)
    assert [(r.task, r.wider) for r in m.rewrites("narrow")] == [("f0", "wide.f0"),
                                                                 ("f0", "mid.f0")]
    m.remove("wide")  # mid is promoted, narrow reads it
    check(m)
    assert m.running_task("mid.f0#2").parents == ("wide.p",)
    assert m.running_task("narrow.f0#2").parents == ("mid.f0#2",)
    m.remove("mid")  # narrow runs as written
    check(m)
    assert {t.id for t in m.running_tasks()} == {"wide.s", "wide.p", "narrow.f0", "narrow.o"}


def test_the_narrowest_wide_task_is_chosen():
    m = Manager(match=TOY)
    m.submit(flow("two", [("s", "S1", "source"), ("p", "P", 0), ("a", "F", [0, 30]),
                          ("b", "F", [5, 25]), ("o", "O", 0)],
                  [["s", "p"], ["p", "a"], ["p", "b"], ["a", "o"], ["b", "o"]]))
    m.submit(chain("narrow", (10, 20)))
    check(m)
    assert m.running_task("narrow.f0").parents == ("two.b",)


def test_a_dataflow_that_has_the_wide_task_itself_reads_its_own():
    m = Manager(match=TOY)
    m.submit(chain("wide", (0, 30)))
    both = flow("both", [("s", "S1", "source"), ("p", "P", 0), ("w", "F", [0, 30]),
                         ("n", "F", [10, 20]), ("o", "O", 1)],
                [["s", "p"], ["p", "w"], ["p", "n"], ["w", "o"], ["n", "o"]])
    m.submit(both)
    check(m)
    assert len(m.plan("both")) == len(both) and m.plan("both").parents["n"] == ("w",)


def test_every_narrow_task_listed_before_the_own_wide_task_is_rewritten():
    """Reading its own wide task ``w``, listed after ``n1`` and ``n2``, moves ``n1`` after
    ``w`` in the order: ``n2`` comes before ``n1`` then, and must still be looked at (a pass
    that resumed at ``n1`` skipped it and left ``n2`` reading the inputs)."""
    m = Manager(match=TOY)
    m.submit(chain("wide", (0, 30)))
    both = flow("both", [("s", "S1", "source"), ("p", "P", 0), ("n1", "F", [10, 20]),
                         ("n2", "F", [5, 25]), ("w", "F", [0, 30]), ("o", "O", 1)],
                [["s", "p"], ["p", "n1"], ["p", "n2"], ["p", "w"], ["n1", "o"], ["n2", "o"],
                 ["w", "o"]])
    m.submit(both)
    check(m)
    assert [(r.task, r.via) for r in m.rewrites("both")] == [("n1", "w"), ("n2", "w")]
    assert m.plan("both").parents["n2"] == ("w",) and len(m.plan("both")) == len(both)


def test_a_union_filter_reads_a_wide_filter_over_the_same_union():
    def union(dag, lo, hi, order=("a", "b")):
        return flow(dag, [("s", "S1", "source"), ("a", "P", 0), ("b", "P", 1),
                          ("f", "F", [lo, hi]), ("o", "O", 0)],
                    [["s", "a"], ["s", "b"], [order[0], "f"], [order[1], "f"], ["f", "o"]])
    m = Manager(match=TOY)
    m.submit(union("wide", 0, 30))
    m.submit(union("narrow", 10, 20, order=("b", "a")))
    check(m)
    assert m.running_task("narrow.f").parents == ("wide.f",)


def test_an_order_sensitive_wide_task_is_not_read_in_another_order():
    """A union filter above a running sum reads its inputs in order; a narrow one over the same
    inputs in the other order would not get the wide one's signature, so it is not rewritten."""
    def union(dag, lo, hi, order, below):
        tasks = [("s", "S1", "source"), ("a", "P", 0), ("b", "P", 1), ("f", "F", [lo, hi]),
                 ("k", below, 0), ("o", "O", 0)]
        return flow(dag, tasks, [["s", "a"], ["s", "b"], [order[0], "f"], [order[1], "f"],
                                 ["f", "k"], ["k", "o"]])
    m = Manager(match=TOY)
    m.submit(union("wide", 0, 30, ("a", "b"), "K"))
    m.submit(union("narrow", 10, 20, ("b", "a"), "K"))
    check(m)
    assert m.rewrites("narrow") == ()
    m.submit(union("same-order", 10, 20, ("a", "b"), "K"))
    check(m)
    assert [r.wider for r in m.rewrites("same-order")] == ["wide.f"]


def test_the_own_wide_task_is_not_read_in_another_order_either():
    """The dataflow has the wide task itself, reading ``a`` then ``b`` above a running sum; its
    narrow filter reads ``b`` then ``a`` above another: reading the wide one would change the
    order it sees."""
    def both(dag, narrow_order):
        tasks = [("s", "S1", "source"), ("a", "P", 0), ("b", "P", 1), ("w", "F", [0, 30]),
                 ("kw", "K", 0), ("n", "F", [10, 20]), ("kn", "K", 1), ("o", "O", 0)]
        return flow(dag, tasks, [["s", "a"], ["s", "b"], ["a", "w"], ["b", "w"], ["w", "kw"],
                                 [narrow_order[0], "n"], [narrow_order[1], "n"], ["n", "kn"],
                                 ["kw", "o"], ["kn", "o"]])
    m = Manager(match=TOY)
    m.submit(both("first", ("a", "b")))  # nothing running yet: no rewrite
    m.submit(both("swapped", ("b", "a")))
    check(m)
    assert m.rewrites("first") == m.rewrites("swapped") == ()
    m.remove("first")
    m.submit(both("again", ("a", "b")))
    check(m)
    assert [r.via for r in m.rewrites("again")] == ["w"]


def test_reading_its_own_wide_task_must_not_change_that_tasks_signature():
    """The dataflow's own wide filter reads ``b, a`` and nothing below it sees the order, so it
    merges with a running one that reads ``a, b`` above a running sum (``a, b`` being the
    signature order, the two hash alike). Its narrow filter, above a running sum too, reads
    ``a, b``: reading the wide one would make the wide one's order count, in the order ``b,
    a``, which is no longer the running task's signature, so the rewrite is refused."""
    probe = flow("probe", [("s", "S1", "source"), ("a", "P", 0), ("b", "P", 1)],
                 [["s", "a"], ["s", "b"]])
    sig = signatures(probe, TOY)
    x, y = sorted("ab", key=lambda t: sig[t])

    def union_filter(lo, hi, order):
        return [[order[0], f"f{lo}"], [order[1], f"f{lo}"]]

    wide = flow("wide", [("s", "S1", "source"), ("a", "P", 0), ("b", "P", 1),
                         ("f0", "F", [0, 30]), ("k", "K", 0), ("o", "O", 0)],
                [["s", "a"], ["s", "b"], *union_filter(0, 30, (x, y)), ["f0", "k"], ["k", "o"]])
    both = flow("both", [("s", "S1", "source"), ("a", "P", 0), ("b", "P", 1),
                         ("f0", "F", [0, 30]), ("f10", "F", [10, 20]), ("k", "K", 1),
                         ("o", "O", 1)],
                [["s", "a"], ["s", "b"], *union_filter(0, 30, (y, x)),
                 *union_filter(10, 20, (x, y)), ["f10", "k"], ["f0", "o"], ["k", "o"]])
    m = Manager(match=TOY)
    m.submit(wide)
    delta = m.submit(both)
    check(m)
    assert "wide.f0" in delta.reused and m.rewrites("both") == ()


def test_state_and_journal_keep_the_plans():
    records: list[dict[str, Any]] = []
    m = Manager(records.append, match=TOY)
    m.submit(chain("wide", (0, 30)))
    m.submit(chain("narrow", (10, 20)))
    m.remove("wide")
    state = m.to_state()
    again = Manager.from_state(state, match=TOY)
    assert again.to_state() == state and again.rewrites("narrow") == m.rewrites("narrow")
    check(again)
    replayed = Manager(match=TOY)
    for r in records:
        replayed.apply(r)
    assert replayed.to_state() == state
    plain = Manager(match=TOY)
    plain.submit(chain("wide", (0, 30)))
    assert "plan" not in plain.to_state()["submitted"][0]


# --- random workloads -------------------------------------------------------------------------

@st.composite
def toy_flows(draw, dag: str) -> Dataflow:
    """A chain or a union over one or two sources, with one or two filters (bounds on a small
    grid, so that intervals often nest), sometimes a running sum below."""
    src = draw(st.sampled_from(["S1", "S1", "S1", "S2"]))
    shift = 100 if src == "S2" else 0
    bounds = st.tuples(st.integers(0, 6), st.integers(0, 6)).map(
        lambda b: [5 * min(b) + shift, 5 * max(b) + shift])
    tasks: list[tuple[str, str, Any]] = [("s", src, "source")]
    streams: list[list[str]] = []
    if draw(st.booleans()):  # a union of two branches, in either order
        tasks += [("a", "P", 0), ("b", "P", 1)]
        streams += [["s", "a"], ["s", "b"]]
        last = draw(st.permutations(["a", "b"]))
    else:
        tasks.append(("p", "P", draw(st.sampled_from([0, 0, 0, 1]))))
        streams.append(["s", "p"])
        last = ["p"]
    for i in range(draw(st.integers(1, 2))):
        tasks.append((f"f{i}", "F", draw(bounds)))
        streams += [[p, f"f{i}"] for p in last]
        last = [f"f{i}"]
    if draw(st.booleans()):
        tasks.append(("k", "K", 0))
        streams.append([last[0], "k"])
        last = ["k"]
    tasks.append(("o", "O", draw(st.integers(0, 2))))
    streams.append([last[0], "o"])
    return flow(dag, tasks, streams)


@st.composite
def workloads(draw) -> tuple[list[Dataflow], list[tuple[str, str]]]:
    flows = [draw(toy_flows(f"D{i}")) for i in range(draw(st.integers(2, 6)))]
    ops: list[tuple[str, str]] = []
    present: set[str] = set()
    for _ in range(draw(st.integers(len(flows), 3 * len(flows)))):
        dag = draw(st.sampled_from([f.id for f in flows]))
        ops.append(("remove" if dag in present else "submit", dag))
        present ^= {dag}
    return flows, ops


@settings(max_examples=150)
@given(workloads())
def test_any_submit_remove_order_keeps_outputs_and_invariants(work):
    """Random toy dataflows submitted and removed in any order: after every step the
    invariants hold, each dataflow's plan and the running tasks give each sink what the
    dataflow alone gives, and every wide task a residual reads is still running."""
    flows, ops = work
    by_id = {f.id: f for f in flows}
    m = Manager(match=TOY)
    for op, dag in ops:
        if op == "submit":
            m.submit(by_id[dag])
        else:
            m.remove(dag)
        check(m)


@pytest.mark.parametrize("lo_hi", [(10, 20), (0, 30)])
def test_a_plan_is_its_own_fixed_point(lo_hi):
    """Rewriting a plan again changes nothing: every narrow task already reads the narrowest
    running wide task there is."""
    m = Manager(match=TOY)
    m.submit(chain("wide", (0, 30)))
    m.submit(chain("mid", (5, 25)))
    plan, done, _ = contain(chain("n", lo_hi), m, TOY)
    assert contain(plan, m, TOY)[:2] == (plan, ())


# --- a rule whose proof holds for fresh inputs only (the task layer's ``panes``) -------------

FRESH = MatchPolicy("toy", commutes=lambda t: t != "K", containment=(
    ContainmentRule("interval", "F", INTERVAL.contains, fresh_inputs=True),))


@pytest.mark.parametrize("policy, rewritten", [(TOY, True), (FRESH, False)])
def test_a_fresh_inputs_rule_leaves_a_task_with_its_type_above_alone(policy, rewritten):
    """``narrow.f1`` reads ``f0``, a task of the rule's type: its inputs are not the ones
    such a proof covers, even though ``wide.f1`` over the same inputs contains it."""
    m = Manager(match=policy)
    m.submit(chain("wide", (0, 30), (0, 30)))
    m.submit(chain("narrow", (0, 30), (10, 20)))
    check(m)
    assert (m.running_task("narrow.f1").parents == ("wide.f1",)) is rewritten
    assert bool(m.rewrites("narrow")) is rewritten


@pytest.mark.parametrize("policy, below", [(TOY, "odd.f1"), (FRESH, "w1.f0")])
def test_a_fresh_inputs_residual_moves_down_only_to_a_task_its_wide_one_contains(policy, below):
    """``mid`` (5..25) first reads ``w1.f0`` (0..30); below it runs ``odd.f1`` (5..50, a
    user's filter reading ``w1.f0``), which contains ``mid`` but is not inside ``w1.f0``: under
    a fresh-inputs rule ``mid`` stays behind ``w1.f0``, since ``odd.f1``'s inputs are not what
    the proof covers. A third filter inside both then follows ``mid`` down the chain."""
    m = Manager(match=policy)
    m.submit(chain("w1", (0, 30)))
    m.submit(chain("odd", (0, 30), (5, 50)))
    assert m.running_task("odd.f1").parents == ("w1.f0",)
    m.submit(chain("mid", (5, 25)))
    check(m)
    assert m.running_task("mid.f0").parents == (below,)
    m.submit(chain("n", (10, 20)))
    check(m)
    assert m.running_task("n.f0").parents == ("mid.f0",)
    assert [r.wider for r in m.rewrites("n")][0] == "w1.f0"
