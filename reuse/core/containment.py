"""Containment (issue 25, item 3): a narrower task reads a running wider task's output.

A submitted task ``t_n`` of a type with a :class:`~reuse.core.matching.ContainmentRule` (a
``RangeFilter`` ``[a, b]``), whose own signature is not running, may sit beside a running task
``t_w`` of the same type over the same inputs whose config contains ``t_n``'s (a running
``[A, B]`` with ``A <= a`` and ``b <= B``). The rule promises that ``t_w`` keeps a superset of
what ``t_n`` keeps and that ``t_n`` applied to ``t_w``'s output is ``t_n``: so the dataflow in
which ``t_n`` reads from ``t_w`` computes the same streams, and ``t_n`` becomes a *residual*
task that only sees what ``t_w`` let through.

Why a rewrite of the submitted dataflow, as plain data, rather than a new kind of merge:

- :func:`contain` returns a new :class:`~reuse.core.dataflow.Dataflow`, the *plan*, in which
  ``t_w`` is spelled exactly as the running task (type, config, parents) and ``t_n`` reads from
  it. The manager then merges the plan by the ordinary signatures: ``t_w``'s copy has the
  running task's signature, so it is reused like any equal task, and nothing else in the merge
  changes.
- Unmerge stays the paper's: the plan names ``t_w``, so the dataflow counts among ``t_w``'s
  users, and removing the dataflow that started ``t_w`` leaves it running while a residual's
  dataflow still needs it (Constraint 2 counts the plans' tasks).
- The rewrite is checked, not trusted: after each step the plan's signatures are recomputed,
  and the step is kept only if the copy's signature *is* the running task's and the plan is
  still de-dup. A step that would not share (a wiring or input order the policy sees
  differently) is refused, and the task is left as submitted.

Which wide task: first one behind which the narrow task already runs (its residual is shared
too), else the narrowest candidate found by one pass (a candidate replaces the current one when
the current one contains it), ties by running task id. The step is repeated until nothing
changes, so a narrow filter can end behind a chain of nested running ones (each step moves it
one running task down, so this stops). Finding candidates costs the running children of the
narrow task's first input (:meth:`RunningGraph.running_children`), not a scan of the running
tasks.

Examples
--------
>>> from reuse.core.dataflow import parse_dataflow
>>> from reuse.core.matching import ContainmentRule, MatchPolicy
>>> from reuse.core.manager import Manager
>>> inside = ContainmentRule("interval", "F", lambda w, n: w[0] <= n[0] and n[1] <= w[1])
>>> policy = MatchPolicy("toy", containment=(inside,))
>>> def flow(dag, lo, hi):
...     return parse_dataflow({"id": dag, "tasks": [{"id": "s", "type": "S", "config": 0},
...         {"id": "f", "type": "F", "config": [lo, hi]}, {"id": "o", "type": "O", "config": 0}],
...         "streams": [["s", "f"], ["f", "o"]]})
>>> m = Manager(match=policy)
>>> _ = m.submit(flow("wide", 0, 100))
>>> plan, done = contain(flow("narrow", 10, 20), m, policy)
>>> [(t.id, t.config) for t in plan.tasks], plan.parents["f"]
([('s', 0), ('f.wider', [0, 100]), ('f', [10, 20]), ('o', 0)], ('f.wider',))
>>> done
(Rewrite(task='f', wider='wide.f', via='f.wider', rule='interval'),)
>>> contain(flow("other", 10, 200), m, policy)[1]   # not contained: left as submitted
()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from reuse.core.dataflow import Dataflow, Task
from reuse.core.equivalence import Signature, signatures, task_signature
from reuse.core.errors import DataflowError
from reuse.core.matching import EXACT, ContainmentRule, MatchPolicy
from reuse.core.plan import RunningTask

__all__ = ["Rewrite", "RunningGraph", "contain"]


@dataclass(frozen=True)
class Rewrite:
    """One containment step of a plan.

    Attributes
    ----------
    task
        The narrow task of the submitted dataflow, now a residual.
    wider
        The running task it reads from (its running id when the rewrite was made).
    via
        The plan's task that spells ``wider``: an inserted copy, or a task of the dataflow
        itself that already had its signature.
    rule
        The :class:`~reuse.core.matching.ContainmentRule` that allowed it.
    """

    task: str
    wider: str
    via: str
    rule: str


class RunningGraph(Protocol):
    """What :func:`contain` reads of the running tasks (the manager provides it)."""

    def running_by_signature(self, signature: Signature) -> RunningTask | None:
        """The running task of a signature, if one runs."""

    def running_task(self, task_id: str) -> RunningTask:
        """A running task by id."""

    def running_children(self, task_id: str) -> Iterable[RunningTask]:
        """The running tasks that read a running task's output."""


def contain(flow: Dataflow, running: RunningGraph, match: MatchPolicy = EXACT,
            ) -> tuple[Dataflow, tuple[Rewrite, ...]]:
    """The plan of a de-dup dataflow under ``match``'s containment rules, and its steps.

    Parameters
    ----------
    flow
        The submitted dataflow (de-dup under ``match``).
    running
        The running tasks (a :class:`~reuse.core.manager.Manager`).
    match
        The policy: its signatures and its :attr:`~reuse.core.matching.MatchPolicy.containment`.

    Returns
    -------
    tuple
        The plan (``flow`` itself when no step applies) and the steps made, in order. The plan
        holds every task of ``flow`` with its id, type and config, and the same sinks.
    """
    rules = {r.type: r for r in match.containment}
    if not rules:
        return flow, ()
    plan = flow
    sig = signatures(plan, match)
    done: list[Rewrite] = []
    progress = True
    while progress:
        progress = False
        ordered = match.ordered_tasks(plan)
        for tid in plan.order:
            rule = rules.get(plan.task(tid).type)
            if rule is None:
                continue
            step = _step(plan, sig, tid, tid in ordered, rule, running, match)
            if step is not None:
                plan, sig, rewrite = step
                done.append(rewrite)
                progress = True
                break
    return plan, tuple(done)


def _key(match: MatchPolicy, task: Task) -> str:
    return task.config_key if match is EXACT else match.config_key(task.type, task.config)


def _step(plan: Dataflow, sig: Mapping[str, Signature], tid: str, ordered: bool,
          rule: ContainmentRule, running: RunningGraph, match: MatchPolicy,
          ) -> tuple[Dataflow, dict[str, Signature], Rewrite] | None:
    """One rewrite of ``tid`` behind a running wider task, or ``None``. ``ordered``: whether
    ``tid``'s input order counts (:meth:`~reuse.core.matching.MatchPolicy.ordered_tasks`)."""
    task = plan.task(tid)
    parents = plan.parents[tid]
    if not parents or running.running_by_signature(sig[tid]) is not None:
        return None  # a source, or already running as it is: the ordinary merge shares it
    ups = [running.running_by_signature(sig[p]) for p in parents]
    if any(u is None for u in ups):
        return None  # a wide task over the same inputs needs those inputs running
    # The residual sees its inputs in the order the wide task reads them: where the order
    # counts for the narrow task, it must be the same order.
    want = [sig[p] for p in parents]
    if not ordered:
        want.sort()
    found = []
    for c in running.running_children(ups[0].id):  # type: ignore[union-attr]
        has = [running.running_task(p).signature for p in c.parents]
        if not ordered:
            has.sort()
        if c.type == task.type and has == want and rule.contains(c.config, task.config):
            found.append(c)
    if not found:
        return None
    found.sort(key=lambda c: c.id)
    key = _key(match, task)
    shared = [c for c in found if running.running_by_signature(
        task_signature(task.type, key, [c.signature], ordered=match.ordered_hash)) is not None]
    narrowest = found[0]
    for c in found[1:]:
        if rule.contains(narrowest.config, c.config):
            narrowest = c
    order = shared + [narrowest] + [c for c in found if c is not narrowest and c not in shared]
    for c in order:
        out = _behind(plan, sig, tid, c, match)
        if out is not None:
            new, new_sig, via = out
            return new, new_sig, Rewrite(tid, c.id, via, rule.name)
    return None


def _behind(plan: Dataflow, sig: Mapping[str, Signature], tid: str, wide: RunningTask,
            match: MatchPolicy,
            ) -> tuple[Dataflow, dict[str, Signature], str] | None:
    """``plan`` with ``tid`` reading from a copy of ``wide`` (or the plan's own task of its
    signature) instead of its inputs; ``None`` unless the copy gets ``wide``'s signature (the
    copy's inputs, and whether their order counts, are decided on the new plan)."""
    by_sig = {s: t for t, s in sig.items()}
    via = by_sig.get(wide.signature)
    tasks = list(plan.tasks)
    feed: list[tuple[str, str]] = []
    if via is None:  # a copy of the wide task, over the narrow one's inputs in its order
        via = _fresh(f"{tid}.wider", plan)
        tasks.insert(tasks.index(plan.task(tid)), Task(via, wide.type, wide.config))
        feed = [(p, via) for p in plan.parents[tid]]
    streams: list[tuple[str, str]] = []
    placed = False
    for up, down in plan.streams:
        if down != tid:
            streams.append((up, down))
        elif not placed:  # the narrow task's inputs are replaced where its first one was
            streams += [*feed, (via, tid)]
            placed = True
    try:
        new = Dataflow(plan.id, tuple(tasks), tuple(streams), source=plan.source)
    except DataflowError:  # pragma: no cover - the wide task never descends from the narrow
        return None
    new_sig = signatures(new, match)
    if new_sig[via] != wide.signature or len(set(new_sig.values())) != len(new_sig):
        return None
    return new, new_sig, via


def _fresh(wanted: str, plan: Dataflow) -> str:
    taken = {t.id for t in plan.tasks}
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}#{n}" in taken:
        n += 1
    return f"{wanted}#{n}"
