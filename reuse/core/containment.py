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
- The rewrite is checked, not trusted: at each step the plan's signatures are recomputed
  (below the narrow task: nothing else changes), and the step is kept only if the copy's
  signature *is* the running task's and the plan is still de-dup. A step that would not share
  (a wiring or input order the policy sees differently) is refused, and the task is left as
  submitted. Where the narrow task's input order counts, the wide task must read its inputs in
  that order, since the residual sees them in the wide task's order.
- The rules are the task layer's (:mod:`reuse.tasks.containment`); the core knows no task type.
- A stateful residual (a window reading a wider running window's blocks) needs two things the
  filters did not. Its input order counts, so the wide task must read the inputs in the
  narrow task's order (above). And its proof may hold only for some inputs: a rule declared
  with ``fresh_inputs`` is applied only to a task with no ancestor of its type in the submitted
  dataflow, and a residual moves further down a chain of running wide tasks only where each
  contains the next (:meth:`_Plan.fresh`). Warm state needs nothing here: a residual joins at
  its join point like any new task, and reads the wide task's outputs from there, which is
  what the reference execution runs (:mod:`reuse.tasks.containment` states the promise).

Which wide task: first one behind which the narrow task already runs (its residual is shared
too), else the narrowest candidate found by one pass (a candidate replaces the current one when
the current one contains it), ties by running task id. A rewritten task is looked at again, so
a narrow filter can end behind a chain of nested running ones (each step moves it one running
task down, so this stops). Candidates are the running children of the narrow task's first
input, of its type (:meth:`RunningGraph.running_children`), not a scan of the running tasks.

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
>>> plan, done, sig = contain(flow("narrow", 10, 20), m, policy)
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

from reuse.core.dataflow import Dataflow, Task, fresh_id
from reuse.core.equivalence import Signature, signatures, task_signature
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

    def running_children(self, task_id: str, type_: str | None = None,
                         ) -> Iterable[RunningTask]:
        """The running tasks (of a type, if given) that read a running task's output, in any
        order (:func:`contain` orders the candidates by id)."""


def contain(flow: Dataflow, running: RunningGraph, match: MatchPolicy = EXACT,
            sig: Mapping[str, Signature] | None = None, ordered: frozenset[str] | None = None,
            *, new_stateful: bool = True,
            ) -> tuple[Dataflow, tuple[Rewrite, ...], dict[str, Signature]]:
    """The plan of a de-dup dataflow under ``match``'s containment rules, and its steps.

    Parameters
    ----------
    flow
        The submitted dataflow (de-dup under ``match``).
    running
        The running tasks (a :class:`~reuse.core.manager.Manager`).
    match
        The policy: its signatures and its :attr:`~reuse.core.matching.MatchPolicy.containment`.
    sig
        ``flow``'s signatures under ``match``, if already computed.
    ordered
        ``match.ordered_tasks(flow)``, if already computed.
    new_stateful
        Whether a rule with ``fresh_inputs`` (a window's: its residual has state) may make a
        residual that does not run yet. A re-plan (:mod:`reuse.core.replan`) says no: a
        residual started at a cut would begin with the wide task's partial blocks, not with
        the blocks the dataflow's own window task has then; it may still share a residual
        that runs (nothing starts, nothing changes state).

    Returns
    -------
    tuple
        The plan (``flow`` itself when no step applies), the steps made, in order, and the
        plan's signatures (it is de-dup). The plan holds every task of ``flow`` with its id,
        type and config, and the same sinks.
    """
    rules = {r.type: r for r in match.containment}
    if ordered is None:
        ordered = match.ordered_tasks(flow)
    sigs = dict(signatures(flow, match, ordered) if sig is None else sig)
    if not rules or not any(t.type in rules for t in flow.tasks):
        return flow, (), sigs
    state = _Plan(flow, sigs, ordered, running, match, new_stateful)
    done: list[Rewrite] = []
    settled: set[str] = set()
    i = 0
    # One pass in topological order. A step changes only the rewritten task and what is below
    # it, so the tasks settled before it stay as they were decided; the rewritten task is
    # looked at again (a narrower running task may read the one it now reads), and so is any
    # task a step moved ahead of it in the order.
    while i < len(state.order):
        tid = state.order[i]
        if tid in settled:
            i += 1
            continue
        rule = rules.get(state.by_id[tid].type)
        rewrite = None if rule is None else state.step(tid, rule)
        if rewrite is None:
            settled.add(tid)
            i += 1
            continue
        done.append(rewrite)
        settled.add(rewrite.via)  # spelled as a running task: the ordinary merge shares it
        i = 0
    if not done:
        return flow, (), state.sig
    return state.dataflow(), tuple(done), state.sig


class _Plan:
    """A plan being rewritten: its tasks, streams, wiring and a topological order, edited in
    place (a :class:`Dataflow` is built once, at the end: validating one per step cost more
    than the step), its signatures and the tasks whose input order counts; the submitted
    dataflow, for the rules with ``fresh_inputs``."""

    def __init__(self, flow: Dataflow, sig: dict[str, Signature], ordered: frozenset[str],
                 running: RunningGraph, match: MatchPolicy, new_stateful: bool = True) -> None:
        self.flow, self.sig, self.ordered = flow, sig, ordered
        self.new_stateful = new_stateful
        self.running, self.match = running, match
        self.tasks = list(flow.tasks)
        self.streams = list(flow.streams)
        self.parents = dict(flow.parents)
        self.order = list(flow.order)
        self.by_id = {t.id: t for t in flow.tasks}
        self.by_sig = {s: t for t, s in sig.items()}
        self.submitted = flow
        self._fresh: dict[str, bool] = {}

    def dataflow(self) -> Dataflow:
        """The plan as a validated dataflow."""
        return Dataflow(self.flow.id, tuple(self.tasks), tuple(self.streams),
                        source=self.flow.source)

    def key(self, task: Task) -> str:
        """The config key signatures hash (the policy remembers it: canonical forms cost
        JSON)."""
        return self.match.task_key(task)

    def signature(self, tid: str, parents: Mapping[str, tuple[str, ...]],
                  sig: Mapping[str, Signature], ordered: bool) -> Signature:
        """A task's signature, wired by ``parents``, as
        :func:`~reuse.core.equivalence.signatures` computes it from its parents' in ``sig``."""
        task = self.by_id[tid]
        inputs = self.match.inputs(parents[tid], sig, ordered)
        return task_signature(task.type, self.key(task), [sig[p] for p in inputs],
                              ordered=self.match.ordered_hash)

    def step(self, tid: str, rule: ContainmentRule) -> Rewrite | None:
        """Rewrite ``tid`` behind a running wider task, or ``None`` (nothing changed)."""
        sig, running = self.sig, self.running
        task = self.by_id[tid]
        parents = self.parents[tid]
        if not parents or running.running_by_signature(sig[tid]) is not None:
            return None  # a source, or already running as it is: the ordinary merge shares it
        ups = [running.running_by_signature(sig[p]) for p in parents]
        if any(u is None for u in ups):
            return None  # a wide task over the same inputs needs those inputs running
        # The residual sees its inputs in the order the wide task reads them: where the order
        # counts for the narrow task, it must be the same order.
        ordered = tid in self.ordered
        want = [sig[p] for p in parents]
        if not ordered:
            want.sort()
        key, config, contains, n = self.key(task), task.config, self.match.contains, len(want)
        found = []
        for c in running.running_children(ups[0].id, task.type):  # type: ignore[union-attr]
            if len(c.parents) != n:
                continue
            if n > 1:  # one input: a child of the narrow task's input reads just it
                has = [running.running_task(p).signature for p in c.parents]
                if not ordered:
                    has.sort()
                if has != want:
                    continue
            if (contains(rule, c.signature, c.config, key, config)
                    and self.fresh(tid, rule, c)):
                found.append(c)
        if not found:
            return None
        found.sort(key=lambda c: c.id)
        # the narrow task already runs behind c only if c has a running child of its type
        shared = [c for c in found if running.running_children(c.id, task.type)
                  and running.running_by_signature(task_signature(
                      task.type, key, [c.signature], ordered=self.match.ordered_hash))]
        if rule.fresh_inputs and not self.new_stateful:
            found = shared  # only a residual that already runs (see contain's new_stateful)
            if not found:
                return None
        narrowest = found[0]
        for c in found[1:]:
            if contains(rule, narrowest.signature, narrowest.config, c.signature, c.config):
                narrowest = c
        for c in shared + [narrowest] + [c for c in found if c is not narrowest
                                         and c not in shared]:
            via = self.behind(tid, ordered, c)
            if via is not None:
                return Rewrite(tid, c.id, via, rule.name)
        return None

    def fresh(self, tid: str, rule: ContainmentRule, wide: RunningTask) -> bool:
        """Whether ``tid`` may read ``wide`` as far as ``rule.fresh_inputs`` asks (always, for
        a rule without it): no ancestor of ``tid`` in the submitted dataflow is of the rule's
        type (its inputs are as the proof has them), and every parent of ``tid`` of the type in
        the plan, a wide task it already reads, contains ``wide`` (so ``wide`` is fed what the
        proof allows too: by induction, the chain of wide tasks above ``tid``)."""
        if not rule.fresh_inputs:
            return True
        if tid not in self._fresh:
            seen, stack = set(), list(self.submitted.parents[tid])
            while stack:
                t = stack.pop()
                if t not in seen:
                    seen.add(t)
                    stack.extend(self.submitted.parents[t])
            self._fresh[tid] = all(self.submitted.task(t).type != rule.type for t in seen)
        return self._fresh[tid] and all(
            rule.contains(self.by_id[p].config, wide.config)
            for p in self.parents[tid] if self.by_id[p].type == rule.type)

    def behind(self, tid: str, ordered: bool, wide: RunningTask) -> str | None:
        """Make ``tid`` read from a copy of ``wide`` (or the plan's own task of its signature)
        instead of its inputs, and return the copy's id; ``None`` (nothing changed) unless the
        copy gets ``wide``'s signature and the plan stays de-dup."""
        sig = self.sig
        via = self.by_sig.get(wide.signature)
        copy = None
        parents = dict(self.parents)
        if via is None:  # a copy of the wide task, over the narrow one's inputs in its order
            copy = Task(fresh_id(f"{tid}.wider", self.by_id), wide.type, wide.config)
            via = copy.id
            parents[via] = self.parents[tid]
        parents[tid] = (via,)
        # The signatures change for the wide task (the plan's own may now have a child whose
        # input order counts, and then its own order counts too), the narrow task and what is
        # below it; nothing above: the wide task reads what the narrow one read, and was or is
        # now ordered iff the narrow one is.
        ordered_new = self.ordered | {via} if ordered else self.ordered
        new_sig = dict(sig)
        if copy is not None:
            self.by_id[via] = copy  # for signature(); dropped again below if refused
        new_sig[via] = self.signature(via, parents, new_sig, via in ordered_new)
        if new_sig[via] != wide.signature:
            if copy is not None:
                del self.by_id[via]
            return None
        order = self.order
        if copy is not None:  # just before the narrow task: after its inputs, and the order
            at = order.index(tid)  # stays the one the dataflow's own would give
            order = order[:at] + [via] + order[at:]
        changed = {via}
        for t in order[order.index(tid):]:
            if t == tid or any(p in changed for p in parents[t]):
                new_sig[t] = self.signature(t, parents, new_sig, t in ordered_new)
                changed.add(t)
        if len(set(new_sig.values())) != len(new_sig):
            if copy is not None:
                del self.by_id[via]
            return None
        streams: list[tuple[str, str]] = []
        placed = False
        feed = [(p, via) for p in self.parents[tid]] if copy is not None else []
        for up, down in self.streams:
            if down != tid:
                streams.append((up, down))
            elif not placed:  # the narrow task's inputs are replaced where its first one was
                streams += [*feed, (via, tid)]
                placed = True
        if copy is not None:
            self.tasks.insert(self.tasks.index(self.by_id[tid]), copy)
        self.streams, self.parents, self.order = streams, parents, order
        self.sig, self.ordered = new_sig, ordered_new
        self.by_sig = {s: t for t, s in new_sig.items()}
        if order.index(via) > order.index(tid):  # the plan's own wide task came later
            self.order = list(self.dataflow().order)
        return via
