"""A remove that re-plans (issue 36) in the runtime's plain-data layer: the planner's
:class:`Removal` and the shared engine's :meth:`Deployment.end` (no Spark)."""

from __future__ import annotations

from reuse.core.dataflow import parse_dataflow
from reuse.core.manager import Manager
from reuse.core.matching import ContainmentRule, MatchPolicy
from reuse.runtime.common.planners import ReusePlanner
from reuse.runtime.engines.shared.deploy import Deployment, End, Start

INTERVAL = ContainmentRule("interval", "F", lambda w, n: w[0] <= n[0] and n[1] <= w[1])
TOY = MatchPolicy("toy", containment=(INTERVAL,))


def flow(dag: str, lo: int, hi: int):
    return parse_dataflow({"id": dag, "tasks": [
        {"id": "s", "type": "S", "config": "source"}, {"id": "f", "type": "F", "config": [lo, hi]},
        {"id": "o", "type": "MQTTPublish", "config": {}}], "streams": [["s", "f"], ["f", "o"]]})


def test_a_re_planning_remove_starts_the_new_tasks_at_the_same_cut():
    planner, dep = ReusePlanner(Manager(match=TOY)), Deployment(2)
    for at, (dag, lo, hi) in enumerate([("wide", 0, 40), ("a", 5, 35), ("b", 10, 20)]):
        dep.deploy(planner.submit(flow(dag, lo, hi)), at)
    removal = planner.remove("wide")
    assert [t.id for t in removal.start] == ["a.f#2", "a.o#2", "b.f#2", "b.o#2"]
    assert removal.start[0].parents == ("wide.s",) and removal.start[2].parents == ("a.f#2",)
    assert dict(removal.handover) == {"a.f#2": "a.f", "a.o#2": "a.o", "b.f#2": "b.f",
                                      "b.o#2": "b.o"}
    assert removal.sinks == {"a": {"o": "a.o#2"}, "b": {"o": "b.o#2"}}
    actions = dep.end(removal, 5)
    assert {a.task for a in actions if isinstance(a, End)} == set(removal.stop)
    assert [a.task for a in actions if isinstance(a, Start)] == [t.id for t in removal.start]
    dep.check()
    new = dep.tasks["b.f#2"]
    assert (new.start, new.end, new.takes_over) == (5, None, "b.f")
    assert new.shard == dep.tasks["wide.s"].shard == dep.tasks["b.f"].shard
    assert dep.tasks["b.f"].end == 5 and dep.tasks["b.f"].spec()["takes_over"] is None
