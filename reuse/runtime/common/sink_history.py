"""Which running task computes a dataflow's sink, and from which cut (issue 36, re-planning).

A run's ledger gives each submitted incarnation its window ``[J, R)`` and, under ``sinks``,
the running sink task its submit chose. A remove that re-plans other dataflows
(:mod:`reuse.core.replan`) gives them new running sink tasks from its cut on: the old sink
task ends at the cut, the new one starts there, continuing its state. So a sink is computed by
a sequence of running tasks over consecutive sub-windows, recorded under ``sink_history``::

    "sinks": {"o": "a.o"},                                   # the submit's, kept as it was
    "sink_history": {"o": [[0, "a.o"], [120, "a.o#2"]]}      # [from cut, running id], ...

Why keep ``sinks`` as the submit wrote it: a ledger without a re-plan stays as it was, and a
reader that does not know the history still reads the right task up to the first cut. Every
reader of sink records (the accounting, the broker egress, the live engine's metrics) goes
through :func:`sink_segments` instead, so each task is read only over its own sub-window.
Nothing here imports Spark.

Examples
--------
>>> info = {"dag": "a", "J": 0, "R": None, "sinks": {"o": "a.o"}}
>>> sink_segments(info)
{'o': [('a.o', 0, None)]}
>>> record_replan(info, 120, {"o": "a.o#2"})
>>> sink_segments(info)
{'o': [('a.o', 0, 120), ('a.o#2', 120, None)]}
>>> info["R"] = 200
>>> sink_segments(info)["o"][-1]
('a.o#2', 120, 200)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from reuse.runtime.common.ledger import LedgerDag, LedgerTask

if TYPE_CHECKING:
    from reuse.runtime.common.planners import NewTask, Placement, Removal

__all__ = ["record_replan", "sink_segments", "current_sinks", "sink_outputs", "ledger_task",
           "ledger_submit", "ledger_removal"]

Segment = tuple[str, int, int | None]


def record_replan(info: LedgerDag, cut: int, sinks: Mapping[str, str]) -> None:
    """Note in a dataflow's ledger entry that its sinks are ``sinks`` from ``cut`` on (a sink
    whose running task did not change gets no new segment)."""
    hist = info.setdefault("sink_history",
                           {s: [[int(info["J"]), rid]] for s, rid in info["sinks"].items()})
    for s, rid in sinks.items():
        if hist[s][-1][1] != rid:
            hist[s].append([int(cut), rid])


def sink_segments(info: Mapping[str, Any]) -> dict[str, list[Segment]]:
    """Sink -> ``(running task, from, to)`` over the dataflow's window, in ``seq`` order
    (``to`` ``None``: the dataflow still runs)."""
    hist = info.get("sink_history") or {s: [[info["J"], rid]] for s, rid in info["sinks"].items()}
    out: dict[str, list[Segment]] = {}
    for s, steps in hist.items():
        ends = [int(a) for a, _ in steps[1:]] + [info["R"]]
        out[s] = [(rid, int(a), None if b is None else int(b))
                  for (a, rid), b in zip(steps, ends, strict=True)]
    return out


def sink_outputs(dags: Iterable[Mapping[str, Any]],
                 ) -> dict[str, list[tuple[str, str, int, int | None]]]:
    """Running sink task -> ``(dataflow, sink, J, R)`` for every dataflow it computes a sink
    of (a removed one's outputs below its cut ``R`` still count; after a re-plan, each task
    over its sub-window): what a broker-fed run publishes, and for whom."""
    out: dict[str, list[tuple[str, str, int, int | None]]] = {}
    for info in dags:
        for sink, segs in sink_segments(info).items():
            for rid, lo, hi in segs:
                out.setdefault(rid, []).append((info["dag"], sink, lo, hi))
    return out


def current_sinks(info: Mapping[str, Any]) -> dict[str, str]:
    """Sink -> the running task that computes it now (after the last re-plan)."""
    return {s: segs[-1][0] for s, segs in sink_segments(info).items()}


def ledger_task(task: NewTask, at: int) -> LedgerTask:
    """A started task as a run's ledger holds it, joined at ``at``: what the reference
    execution reads (a source's topic is its stream's)."""
    return {"type": task.type, "config": task.config, "parents": list(task.parents),
            "kind": task.kind, "topic": f"src:{task.stream}" if task.kind == "source"
            else task.id, "start": at, "end": None}


def ledger_submit(tasks: dict[str, LedgerTask], dags: dict[str, LedgerDag],
                  placement: Placement, at: int) -> None:
    """A submit with join point ``J`` = ``at`` in a run's ledger: its started tasks, and its
    incarnation's window and sinks. The shared engine and the tests that drive a deployment
    by hand write the ledger with it, as with :func:`ledger_removal`."""
    tasks.update({t.id: ledger_task(t, at) for t in placement.start})
    dags[placement.instance] = {"dag": placement.dag, "J": at, "R": None,
                                "sinks": dict(placement.sinks),
                                "tasks": [t.id for t in placement.start],
                                "reused": list(placement.reused)}


def ledger_removal(tasks: dict[str, LedgerTask], dags: dict[str, LedgerDag],
                   removal: Removal, cut: int) -> None:
    """A remove at cut ``R`` in a run's ledger (``tasks``, ``dags``, as the shared engine
    keeps them): the stopped tasks end at ``R``, the removed incarnation's window ends at
    ``R``, and a re-plan's started tasks join at ``R`` like a submit's, with the task each
    continues (``takes_over``) and the wide tasks it absorbs, and each re-planned dataflow's
    sinks change at ``R``. The engine and the tests that drive a deployment by hand write
    the ledger with it, so the reference execution reads what the engine enacted."""
    for t in removal.stop:
        tasks[t]["end"] = cut
    for n in removal.start:
        tasks[n.id] = {**ledger_task(n, cut), "takes_over": removal.handover.get(n.id),
                       "absorbs": list(removal.absorbs.get(n.id, ()))}
    dags[removal.instance]["R"] = cut
    for inst, sinks in removal.sinks.items():
        record_replan(dags[inst], cut, sinks)
