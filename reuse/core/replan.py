"""Re-planning on removal (issue 36, item 3): residuals never keep a wide task alive alone.

A containment plan (:mod:`reuse.core.containment`) makes a narrow task read a running wide task
``W`` that *another* dataflow owns (has as one of its own tasks). Removing that owner used to
leave ``W`` running for the residuals alone: ``W`` is a task no one asked for, so ``semantic``
ran more tasks than ``exact`` from then on. Reuse by meaning must never cost more than reuse by
identity, so when ``W`` loses its last *own* user (every dataflow still using it reads it
through an inserted copy: an *orphan*), the dataflows that hold it are planned again.

Why the argument is by own users. Call a running task *owned* when some submitted dataflow has
it as one of its own tasks (a task of the dataflow as written, at its plan's signature), and
call the plans *consistent* when two own tasks with the same signature as written have the
same plan signature too (the containment planner prefers a wide task behind which the narrow
task already runs, so a second tenant with the same filter shares the first's residual). Then
``own task as written -> its running task`` is a function onto the running tasks, so there are
no more running tasks than distinct tasks as written, which is what the policy runs without
containment rules (and, for tasks whose input order does not count, at most what ``exact``
runs: a canonical form only merges more). A residual costs one task, like the narrow task it
replaces; an inserted copy costs nothing while its task is owned. The only step that breaks
"every running task is owned" is a remove, at the removed dataflow's own tasks, and this module
restores it there; :mod:`reuse.core.invariants` checks both conditions after every operation.

Why re-plan the holders from their dataflows as written, with the ordinary planner, rather than
patch their plans. The holders of an orphan are re-planned by :func:`~reuse.core.containment.
contain` against the running tasks as they will be (the orphan and everything only the removed
dataflow and the holders use hidden; what earlier holders' new plans start, visible), so a new
plan is exactly what a submit at that moment would make: it is de-dup, checked step by step,
and the invariants need no new case. A holder may then read another running wide task, read
an earlier holder's promoted task, or run its exact plan: each is one task per own task, so the
bound holds whatever is chosen. The order only decides how much work the residuals save: the
widest holder goes first (:func:`widest_first`), so its narrow task is *promoted* (reads the
original inputs again) and the holders it contains become residuals behind it, as they would
have had they been submitted after it. Tasks the holders' old and new plans share keep running
(same id, no restart), and a re-plan that would orphan another task (a holder's old residual
that a dataflow outside the holders reads through a copy) takes that task's holders in too,
until nothing is orphaned (the set only grows, so this stops).

Why the hand-over is exact. Every task a re-plan starts is a holder's own task whose plan
signature changed: the promoted narrow task, a residual that now reads another wide task, and
what lies below them. By the containment rule each computes the same stream as the task it
replaces (:attr:`Replan.handover`), so the runtime stops the old tasks and starts the new ones
at one cut ``R``, the new ones continuing the old ones' state (see
:class:`~reuse.core.plan.PlanDelta`): the holders' sinks see the same records, the ones from
``R`` on from their new running sink tasks.

Why a stateful residual is never re-planned behind a wide task (rules with ``fresh_inputs``,
the windows' ``panes``). A window residual's state is not the narrow task's: it holds the
whole panes it has read, and the values of the block still open sit in the wide task's state.
A residual started at ``R`` behind another wide task would begin with *that* task's partial
blocks (its promise, :mod:`reuse.tasks.containment`), which are not the ones the dataflow's
window has then: the hand-over would not be exact. So a re-plan lets such a task share only a
residual that already runs (:func:`~reuse.core.containment.contain`, ``new_stateful``), and
otherwise gives it the dataflow's own plan for it, reading its inputs directly; the started
task continues the old residual's state *combined* with the state at ``R`` of every wide task
of its chain (:attr:`Replan.absorbs`). That combine is the task layer's (a block's count and
exact sum add: :meth:`reuse.tasks.stats.BlockWindowAverage.absorb`); the core only names the
tasks. It costs nothing against the bound: one task per own task, as before. The stateless
rules (``range``, ``bloom``) promote the widest holder as above.

Examples
--------
>>> from reuse.core.dataflow import parse_dataflow
>>> from reuse.core.matching import ContainmentRule, MatchPolicy
>>> from reuse.core.manager import Manager
>>> inside = ContainmentRule("interval", "F", lambda w, n: w[0] <= n[0] and n[1] <= w[1])
>>> m = Manager(match=MatchPolicy("toy", containment=(inside,)))
>>> def flow(dag, lo, hi):
...     return parse_dataflow({"id": dag, "tasks": [{"id": "s", "type": "S", "config": 0},
...         {"id": "f", "type": "F", "config": [lo, hi]}, {"id": "o", "type": "O", "config": 0}],
...         "streams": [["s", "f"], ["f", "o"]]})
>>> for dag, lo, hi in [("wide", 0, 100), ("a", 10, 20), ("b", 5, 50)]:
...     _ = m.submit(flow(dag, lo, hi))
>>> m.running_task("a.f").parents, m.running_task("b.f").parents
(('wide.f',), ('wide.f',))
>>> delta = m.remove("wide")
>>> delta.stop
('wide.o', 'b.o', 'b.f', 'a.o', 'a.f', 'wide.f')
>>> [(t.id, t.parents) for t in delta.start][::2]  # b promoted, a behind it; their sinks too
[('b.f#2', ('wide.s',)), ('a.f#2', ('b.f#2',))]
>>> delta.handover["a.f#2"], delta.replanned["a"]
('a.f', {'o': 'a.o#2'})
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from reuse.core.containment import Rewrite, RunningGraph, contain
from reuse.core.dataflow import Dataflow, Task
from reuse.core.equivalence import Signature, check_dedup
from reuse.core.matching import ContainmentRule, MatchPolicy
from reuse.core.plan import RunningTask

__all__ = ["Replan", "Planned", "replan", "widest_first"]


class Planned(RunningGraph, Protocol):
    """What :func:`replan` reads of the manager (:class:`~reuse.core.manager.Manager`)."""

    match: MatchPolicy

    @property
    def submitted(self) -> Mapping[str, Dataflow]:
        """The submitted dataflows as written, in submission order."""

    def plan(self, dag_id: str) -> Dataflow:
        """A submitted dataflow's plan."""

    def rewrites(self, dag_id: str) -> tuple[Rewrite, ...]:
        """The containment steps of its plan."""

    def plan_signatures(self, dag_id: str) -> Mapping[str, Signature]:
        """Plan task id -> signature."""

    def own_signatures(self, dag_id: str) -> frozenset[Signature]:
        """The plan signatures of the dataflow's own tasks (not the inserted copies)."""

    def running_task_of(self, signature: Signature) -> RunningTask:
        """The running task of a signature that runs."""

    def user_set(self, signature: Signature) -> frozenset[str]:
        """The submitted dataflows whose plans hold a running task."""

    def owner_count(self, signature: Signature) -> int:
        """How many of them hold it as an own task."""


@dataclass(frozen=True)
class Replan:
    """What a remove changes beyond the removed dataflow's own unmerge.

    Attributes
    ----------
    order
        The re-planned dataflows, in the order they were planned (widest first).
    plans, rewrites, sigs
        Each one's new plan, its containment steps and its signatures.
    start
        The running tasks to start, parents first.
    stop
        The signatures of every task to stop (the removed dataflow's and the old plans'),
        children first.
    handover
        Started task id -> the running task whose stream (and so state) it continues: a
        stopped one, or (its state copied) one that keeps running for other dataflows.
    absorbs
        Started task id -> the wide tasks whose state at the cut it adds to its
        predecessor's: a stateful residual (a rule with ``fresh_inputs``) re-planned to read
        its inputs directly, and the chain of wide tasks of its type it read (see the module
        doc).
    """

    order: tuple[str, ...]
    plans: Mapping[str, Dataflow]
    rewrites: Mapping[str, tuple[Rewrite, ...]]
    sigs: Mapping[str, Mapping[str, Signature]]
    start: tuple[RunningTask, ...]
    stop: tuple[Signature, ...]
    handover: Mapping[str, str]
    absorbs: Mapping[str, tuple[str, ...]]


FreshId = Callable[[str, set[str]], str]


def replan(m: Planned, dag_id: str, fresh_id: FreshId) -> Replan | None:
    """The re-plan that removing ``dag_id`` needs, or ``None`` when no task is orphaned (the
    common case: then the remove is the paper's unmerge alone).

    ``fresh_id(wanted, taken)`` names a new task (the manager's, so the ids are the ones a
    submit would choose). Nothing is changed: the manager commits the result.
    """
    gone = frozenset({dag_id})
    holders: set[str] = set()
    new: _Planning | None = None
    touched = set(m.plan_signatures(dag_id).values())
    plain = False
    while True:
        found = _orphans(m, touched, gone, holders, new)
        if not found:
            break
        before = len(holders)
        for s in sorted(found):
            holders |= _users_after(m, s, gone, holders, new)
        # An orphan only the new plans hold (none is known to arise) makes no progress: fall
        # back to the holders' plans as written, which insert no copy and so hold no orphan.
        plain = plain or len(holders) == before
        new = _plan_all(m, gone, holders, fresh_id, plain)
        touched = {s for d in (*gone, *holders) for s in m.plan_signatures(d).values()}
        touched |= {s for sig in new.sigs.values() for s in sig.values()}
    if new is None:
        return None
    stop = {s for d in (*gone, *holders) for s in m.plan_signatures(d).values()
            if not _users_after(m, s, gone, holders, new)}
    handover: dict[str, str] = {}
    absorbs: dict[str, tuple[str, ...]] = {}
    started = {t.signature: t for t in new.start}
    for d in new.order:
        old, sig = m.plan_signatures(d), new.sigs[d]
        wides = _stateful_wides(m, d)
        for task in m.submitted[d].tasks:
            was, now = old[task.id], sig[task.id]
            if was != now and now in started and started[now].id not in handover:
                handover[started[now].id] = m.running_task_of(was).id
                if task.id in wides:
                    absorbs[started[now].id] = wides[task.id]
    return Replan(tuple(new.order), new.plans, new.rewrites, new.sigs, tuple(new.start),
                  _children_first(m, stop), handover, absorbs)


def _stateful_wides(m: Planned, d: str) -> dict[str, tuple[str, ...]]:
    """A dataflow's stateful residuals (rewritten by a rule with ``fresh_inputs``) -> the
    running ids of the wide tasks above each in its current plan: its ancestors of the rule's
    type, every one a wide task of its chain (:meth:`reuse.core.containment._Plan.fresh`),
    nearest first."""
    rules = {r.name: r for r in m.match.containment}
    plan, sig = m.plan(d), m.plan_signatures(d)
    out: dict[str, tuple[str, ...]] = {}
    for r in m.rewrites(d):
        rule = rules.get(r.rule)
        if rule is None or not rule.fresh_inputs or r.task in out:
            continue
        chain: list[str] = []
        todo = list(plan.parents[r.task])
        while todo:
            p = todo.pop(0)
            if plan.task(p).type == rule.type and p not in chain:
                chain.append(p)
                todo.extend(plan.parents[p])
        out[r.task] = tuple(m.running_task_of(sig[p]).id for p in chain)
    return out


@dataclass
class _Planning:
    order: list[str]
    plans: dict[str, Dataflow]
    rewrites: dict[str, tuple[Rewrite, ...]]
    sigs: dict[str, dict[str, Signature]]
    own: dict[str, frozenset[Signature]]
    start: list[RunningTask]


def _users_after(m: Planned, s: Signature, gone: frozenset[str], holders: set[str],
                 new: _Planning | None) -> set[str]:
    """Who holds ``s`` once ``gone`` is removed and the holders have their new plans."""
    out = set(m.user_set(s)) - gone - holders if m.running_by_signature(s) is not None else set()
    if new is not None:
        out |= {d for d in holders if s in new.own[d] or s in new.sigs[d].values()}
    return out


def _owned_after(m: Planned, s: Signature, gone: frozenset[str], holders: set[str],
                 new: _Planning | None) -> bool:
    n = m.owner_count(s) if m.running_by_signature(s) is not None else 0
    n -= sum(1 for d in (*gone, *holders) if s in m.own_signatures(d))
    if new is not None:
        n += sum(1 for d in holders if s in new.own[d])
    return n > 0


def _orphans(m: Planned, touched: Iterable[Signature], gone: frozenset[str], holders: set[str],
             new: _Planning | None) -> set[Signature]:
    """Tasks still used after the change, but by no dataflow as one of its own tasks. (The
    owner count is asked first: it is O(1), while the users after the change copy the task's
    user set, thousands of dataflows for a shared source or parser; asked first, the users
    made every semantic remove at 100k running tasks 3.5x slower, 191 -> 690 us per submit
    and remove, ``benchmarks/bench_containment.py``.)"""
    return {s for s in touched if not _owned_after(m, s, gone, holders, new)
            and _users_after(m, s, gone, holders, new)}


def _plan_all(m: Planned, gone: frozenset[str], holders: set[str], fresh_id: FreshId,
              plain: bool = False) -> _Planning:
    """Plan every holder again, widest first, against the running tasks as they will be
    (``plain``: each as written, with no containment step)."""
    leaving = gone | holders
    hidden = {s for d in leaving for s in m.plan_signatures(d).values()
              if m.user_set(s) <= leaving}
    view = _View(m, hidden)
    out = _Planning([], {}, {}, {}, {}, [])
    taken: set[str] = set()
    match = m.match
    for d in widest_first(m, [x for x in m.submitted if x in holders]):
        flow = m.submitted[d]
        ordered = match.ordered_tasks(flow)
        base = check_dedup(flow, match, ordered)
        plan, rewrites, sig = ((flow, (), dict(base)) if plain
                               else contain(flow, view, match, base, ordered,
                                            new_stateful=False))
        ordered = ordered | {r.via for r in rewrites if r.task in ordered}
        for tid in plan.order:
            s = sig[tid]
            if view.running_by_signature(s) is not None:
                continue
            if s in hidden:  # kept: a task of the old plans the new one holds too
                view.revive(s)
                continue
            task = plan.task(tid)
            rid = fresh_id(f"{d}.{tid}", taken)
            taken.add(rid)
            parents = tuple(view.id_of(sig[p])
                            for p in match.inputs(plan.parents[tid], sig, tid in ordered))
            started = RunningTask(rid, s, task.type, task.config, parents)
            view.add(started)
            out.start.append(started)
        out.order.append(d)
        out.plans[d], out.rewrites[d], out.sigs[d] = plan, rewrites, sig
        out.own[d] = frozenset(sig[t.id] for t in flow.tasks)
    return out


def widest_first(m: Planned, dags: Sequence[str]) -> list[str]:
    """``dags`` in the order to plan them: each one after every one whose rewritten (narrow)
    task strictly contains one of its own over the same inputs, else in the given order (a
    cycle, possible with several narrow tasks per dataflow, is broken by that order).

    Why: a dataflow planned first runs its narrow task where the others can read it, so the
    widest one is promoted and the ones inside it become its residuals. Any order keeps the
    bound of the module doc; this one keeps the residuals' savings.
    """
    rules = {r.name: r for r in m.match.containment}
    narrow = {d: _narrow_tasks(m, d, rules) for d in dags}

    def wider(a: str, b: str) -> bool:
        for ta, ra, ins in narrow[a]:
            for tb, rb, ins_b in narrow[b]:
                if ra is rb and ta.type == tb.type and ins == ins_b and _strictly(m, ra, ta, tb):
                    return True
        return False

    left = list(dags)
    out = []
    while left:
        pick = next((d for d in left if not any(wider(o, d) for o in left if o != d)), left[0])
        out.append(pick)
        left.remove(pick)
    return out


def _narrow_tasks(m: Planned, d: str, rules: Mapping[str, ContainmentRule],
                  ) -> list[tuple[Task, ContainmentRule, tuple[Signature, ...]]]:
    """A dataflow's rewritten tasks as written, with their rule and their inputs (plan
    signatures of the parents, as written the wide task reads them too)."""
    flow, sig = m.submitted[d], m.plan_signatures(d)
    seen, out = set(), []
    for r in m.rewrites(d):
        if r.task in seen or r.rule not in rules:
            continue
        seen.add(r.task)
        ins = tuple(sorted(sig[p] for p in flow.parents[r.task]))
        out.append((flow.task(r.task), rules[r.rule], ins))
    return out


def _strictly(m: Planned, rule: ContainmentRule, wide: Task, narrow: Task) -> bool:
    match = m.match
    kw, kn = match.task_key(wide), match.task_key(narrow)
    return (match.contains(rule, kw, wide.config, kn, narrow.config)
            and not match.contains(rule, kn, narrow.config, kw, wide.config))


def _children_first(m: Planned, stop: set[Signature]) -> tuple[Signature, ...]:
    """The stopped tasks, each after every stopped task that reads it (so the manager can drop
    them one by one); ties by running id, so the order is the same on every replay."""
    by_id = {m.running_task_of(s).id: s for s in stop}
    order: list[Signature] = []
    seen: set[str] = set()

    def visit(tid: str) -> None:
        seen.add(tid)
        for p in m.running_task(tid).parents:
            if p in by_id and p not in seen:
                visit(p)
        order.append(by_id[tid])

    for tid in sorted(by_id):
        if tid not in seen:
            visit(tid)
    return tuple(reversed(order))


class _View:
    """The running tasks as a re-plan will leave them, for :func:`contain`: the manager's,
    without ``hidden`` (used only by the leaving dataflows) unless a new plan holds one again,
    and with the tasks the new plans start."""

    def __init__(self, m: Planned, hidden: set[Signature]) -> None:
        self.m, self.hidden = m, hidden
        self.revived: set[Signature] = set()
        self.added: dict[Signature, RunningTask] = {}
        self.added_ids: dict[str, RunningTask] = {}
        self.kids: dict[str, dict[str, list[RunningTask]]] = {}

    def visible(self, s: Signature) -> bool:
        return s not in self.hidden or s in self.revived

    def revive(self, s: Signature) -> None:
        self.revived.add(s)

    def add(self, task: RunningTask) -> None:
        self.added[task.signature] = task
        self.added_ids[task.id] = task
        for p in task.parents:
            self.kids.setdefault(p, {}).setdefault(task.type, []).append(task)

    def id_of(self, s: Signature) -> str:
        task = self.running_by_signature(s)
        assert task is not None, s  # a plan's parents are planned (or kept) before it
        return task.id

    def running_by_signature(self, signature: Signature) -> RunningTask | None:
        if signature in self.added:
            return self.added[signature]
        if not self.visible(signature):
            return None
        return self.m.running_by_signature(signature)

    def running_task(self, task_id: str) -> RunningTask:
        if task_id in self.added_ids:
            return self.added_ids[task_id]
        return self.m.running_task(task_id)

    def running_children(self, task_id: str, type_: str | None = None,
                         ) -> tuple[RunningTask, ...]:
        old: Iterable[RunningTask] = ()
        if task_id not in self.added_ids:
            old = (c for c in self.m.running_children(task_id, type_)
                   if self.visible(c.signature))
        kids = self.kids.get(task_id, {})
        new = kids.get(type_, []) if type_ is not None else [c for cs in kids.values()
                                                              for c in cs]
        return (*old, *new)
