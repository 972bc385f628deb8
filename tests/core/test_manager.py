from __future__ import annotations

import pytest

from reuse.core.dataflow import parse_dataflow
from reuse.core.errors import DataflowError, ManagerError
from reuse.core.invariants import assert_invariants, violations
from reuse.core.manager import Manager


def flow(dag, tasks, streams):
    return parse_dataflow({"id": dag, "tasks": [{"id": i, "type": t, "config": c}
                                                for i, t, c in tasks], "streams": streams})


def snapshot(m: Manager):
    return (m.to_state(), m.task_count, m.default_task_count,
            {rd.id: (rd.tasks, rd.streams, rd.supports) for rd in m.running_dags()})


def test_figure1_merge_and_unmerge(figure1):
    """A, B, C share a source and prefix; D has another source; removing B gives A + C."""
    m = Manager()
    for name in "ABCD":
        m.submit(figure1[name])
        assert_invariants(m)
    dags = {rd.supports: set(rd.tasks) for rd in m.running_dags()}
    assert dags == {
        ("A", "B", "C"): {"A.src", "A.parse", "A.kalman", "A.avg", "A.out",
                          "B.slr", "B.out", "C.plot", "C.pub"},
        ("D",): {"D.src", "D.parse", "D.kalman", "D.avg", "D.out"},
    }
    # B reuses A's Kalman output; C reuses B's sliding regression output
    assert m.running_task("B.slr").parents == ("A.kalman",)
    assert m.running_task("C.plot").parents == ("B.slr",)
    assert m.sink_map("C") == {"pub": "C.pub"}
    assert m.default_task_count == 21 and m.task_count == 14

    delta = m.remove("B")
    assert delta.stop == ("B.out",) and delta.disconnect == (("B.slr", "B.out"),)
    assert_invariants(m)
    dags = {rd.supports: set(rd.tasks) for rd in m.running_dags()}
    assert dags[("A", "C")] == {"A.src", "A.parse", "A.kalman", "A.avg", "A.out",
                                "B.slr", "C.plot", "C.pub"}
    assert m.users("B.slr") == {"C"}


def test_submit_delta_lists_new_tasks_streams_and_boundary(figure1):
    m = Manager()
    m.submit(figure1["A"])
    d = m.submit(figure1["C"])
    assert [t.id for t in d.start] == ["C.reg", "C.plot", "C.pub"]
    assert d.reused == ("A.src", "A.parse", "A.kalman")
    assert d.boundary == (("A.kalman", "C.reg"),)
    assert d.connect == (("C.reg", "C.plot"), ("C.plot", "C.pub"))
    assert d.merged == ("R1",) and d.running_dag == "R1"
    assert d.start[0].config == {"predict": 10, "train": 10}


def test_failed_operations_change_nothing(figure1):
    m = Manager()
    m.submit(figure1["A"])
    before = snapshot(m)
    with pytest.raises(ManagerError, match="'A': is already submitted"):
        m.submit(figure1["A"])
    with pytest.raises(ManagerError, match="'Z': is not submitted"):
        m.remove("Z")
    bad = flow("E", [("s", "SYS", "source"), ("a", "X", 1), ("b", "X", 1)], [["s", "a"], ["s", "b"]])
    with pytest.raises(DataflowError, match="not de-dup"):
        m.submit(bad)
    assert snapshot(m) == before


def test_remove_in_any_order_and_everything_stops(figure1):
    for order in ("ABCD", "DCBA", "BDAC", "CABD"):
        m = Manager()
        for name in "ABCD":
            m.submit(figure1[name])
        for name in order:
            m.remove(name)
            assert_invariants(m)
        assert m.task_count == 0 and m.running_dag_count == 0 and not m.running_tasks()


def test_join_dag_merges_two_running_dags_and_removal_splits_them():
    left = flow("L", [("s", "SYS", "source"), ("p", "Parse", 1), ("o", "Out", "L")],
                [["s", "p"], ["p", "o"]])
    right = flow("R", [("s", "TAXI", "source"), ("p", "Parse", 1), ("o", "Out", "R")],
                 [["s", "p"], ["p", "o"]])
    join = flow("J", [("a", "SYS", "source"), ("b", "TAXI", "source"), ("pa", "Parse", 1),
                      ("pb", "Parse", 1), ("j", "Join", {}), ("o", "Out", "J")],
                [["a", "pa"], ["b", "pb"], ["pa", "j"], ["pb", "j"], ["j", "o"]])
    m = Manager()
    m.submit(left)
    m.submit(right)
    assert m.running_dag_count == 2
    d = m.submit(join)
    assert set(d.merged) == {"R1", "R2"} and m.running_dag_count == 1
    assert_invariants(m)
    d = m.remove("J")
    assert set(d.stop) == {"J.j", "J.o"} and len(d.split_into) == 2
    assert m.running_dag_count == 2
    assert_invariants(m)
    assert {rd.supports for rd in m.running_dags()} == {("L",), ("R",)}


def test_split_that_is_not_needed_is_not_made():
    # two sources joined by J and also by K: removing J leaves them connected through K
    def joiner(name):
        return flow(name, [("a", "SYS", "source"), ("b", "TAXI", "source"),
                           ("j", "Join", name), ("o", "Out", name)],
                    [["a", "j"], ["b", "j"], ["j", "o"]])
    m = Manager()
    m.submit(joiner("J"))
    m.submit(joiner("K"))
    d = m.remove("J")
    assert d.split_into == (d.running_dag,)
    assert_invariants(m)


def test_disconnected_submitted_dag_stays_whole():
    two = flow("T", [("a", "SYS", "source"), ("x", "X", 1), ("b", "TAXI", "source"),
                     ("y", "Y", 1)], [["a", "x"], ["b", "y"]])
    m = Manager()
    m.submit(two)
    assert m.running_dag_count == 1
    assert_invariants(m)


def test_task_ids_stay_unique_when_a_dag_id_comes_back():
    a1 = flow("A", [("s", "SYS", "source"), ("k", "K", 1), ("o", "Out", 1)], [["s", "k"], ["k", "o"]])
    b = flow("B", [("s", "SYS", "source"), ("k", "K", 1), ("z", "Z", 1)], [["s", "k"], ["k", "z"]])
    a2 = flow("A", [("s", "SYS", "source"), ("k", "K", 2), ("o", "Out", 1)], [["s", "k"], ["k", "o"]])
    m = Manager()
    m.submit(a1)
    m.submit(b)
    m.remove("A")  # A.s and A.k keep running for B
    d = m.submit(a2)
    assert {t.id for t in d.start} == {"A.k#2", "A.o"}
    assert_invariants(m)


def test_state_round_trip(figure1):
    m = Manager()
    for name in "ABCD":
        m.submit(figure1[name])
    m.remove("A")
    m2 = Manager.from_state(m.to_state())
    assert snapshot(m2) == snapshot(m)
    assert not violations(m2)
    # and the copy behaves the same from here on
    assert m2.remove("C").to_dict() == m.remove("C").to_dict()
