"""The system's constraints (section 3.3), checkable at any time from the manager's state.

- Constraint 1, sink coverage: every submitted sink has an equivalent running task.
- Constraint 2, task and stream minimization: every running task and stream lies in the ancestor
  graph of some submitted sink; the running DAGs are de-dup and pairwise disjoint.
- Book-keeping: ``Delta`` and ``Phi`` are inverse, and the running DAGs are exactly the connected
  components (see :mod:`reuse.core.manager` for the definition).
- Containment (issue 25): each submitted DAG's plan (:meth:`~reuse.core.manager.Manager.plan`,
  what the constraints are checked on) holds every task of the DAG as written and has the same
  sinks, and each task the rewrite inserted spells a running task; the index of running
  children matches the running tasks' parents. That a plan computes the DAG's streams is the
  rules' part, tested against the tasks' code (``tests/tasks/test_containment.py``).
- Containment never costs tasks (issue 36): every running task is some DAG's own task (not
  held only through inserted copies), and there are no more running tasks than distinct tasks
  among the DAGs as written (what the policy runs without containment rules; the argument is
  in :mod:`reuse.core.replan`); both only for a manager that re-plans (``Manager.replan``).

Everything is recomputed from the submitted DAGs alone, independently of the manager's indexes,
so a bug in the incremental book-keeping shows up as a violation.
"""

from __future__ import annotations

from collections import defaultdict

from reuse.core.dataflow import Dataflow
from reuse.core.equivalence import signatures, task_signature
from reuse.core.manager import Manager

__all__ = ["violations", "assert_invariants", "InvariantViolation"]


class InvariantViolation(AssertionError):
    """The manager's state breaks a constraint (a bug, never a user error)."""


def violations(m: Manager) -> list[str]:
    """Every broken invariant, as a sentence; empty when the state is consistent."""
    out: list[str] = []
    running = {t.signature: t for t in m.running_tasks()}
    by_id = {t.id: t for t in running.values()}
    if len(by_id) != len(running):
        out.append("two running tasks share an id")

    # what the submitted DAGs require: one running task per distinct signature
    needed: dict[str, set[str]] = defaultdict(set)
    needed_streams: set[tuple[str, str]] = set()
    owned: set[str] = set()
    as_written: set[str] = set()
    for dag_id, asked in m.submitted.items():
        flow = m.plan(dag_id)
        out.extend(_plan_violations(m, dag_id, asked, flow))
        sig = signatures(flow, m.match)
        owned.update(sig[t.id] for t in asked.tasks)
        as_written.update(signatures(asked, m.match).values() if flow is not asked
                          else sig.values())
        for s in sig.values():
            needed[s].add(dag_id)
        for u, d in flow.streams:
            needed_streams.add((sig[u], sig[d]))
        for sink in flow.sinks:
            if sig[sink] not in running:
                out.append(f"Constraint 1: sink {dag_id}/{sink} has no equivalent running task")
        if len(set(sig.values())) != len(sig):
            out.append(f"submitted DAG {dag_id} is not de-dup")
    for s, t in running.items():
        if not m.replan:  # a runtime that cannot enact re-plans keeps unowned wide tasks
            break
        if s in needed and s not in owned:
            out.append(f"running task {t.id} is no submitted DAG's own task (only containment "
                       f"copies read it: {sorted(needed[s])})")
    if m.replan and len(running) > len(as_written):
        out.append(f"containment runs {len(running)} tasks, more than the {len(as_written)} "
                   "distinct tasks of the DAGs as written")
    for s, t in running.items():
        if s not in needed:
            out.append(f"Constraint 2: running task {t.id} serves no submitted sink")
        elif m.users(t.id) != needed[s]:
            out.append(f"running task {t.id} users {sorted(m.users(t.id))} != {sorted(needed[s])}")

    # the recorded wiring must reproduce the signatures (running DAGs are de-dup, streams right)
    streams: set[tuple[str, str]] = set()
    for t in running.values():
        try:
            parent_sigs = [by_id[p].signature for p in t.parents]
        except KeyError as exc:
            out.append(f"running task {t.id} reads from {exc.args[0]}, which is not running")
            continue
        if task_signature(t.type, m.match.config_key(t.type, t.config), parent_sigs,
                          ordered=m.match.ordered_hash) != t.signature:
            out.append(f"running task {t.id} is wired unlike its equivalence class")
        streams.update((p, t.signature) for p in parent_sigs)
    if streams != needed_streams:
        out.append(f"Constraint 2: running streams differ from the submitted ancestor graphs "
                   f"({len(streams - needed_streams)} extra, {len(needed_streams - streams)} missing)")

    # Delta / Phi and the components
    comps = _components(m)
    recorded = {frozenset(m.delta(g)) for g in {m.phi(d) for d in m.submitted}}
    if recorded != comps:
        out.append("running DAGs (Delta) are not the connected components of the submitted DAGs")
    if m.running_dag_count != len(comps):
        out.append(f"{m.running_dag_count} running DAGs recorded, {len(comps)} components")
    for d in m.submitted:
        if d not in m.delta(m.phi(d)):
            out.append(f"Phi({d}) = {m.phi(d)} but Delta({m.phi(d)}) does not contain it")
    owner: dict[str, str] = {}
    for rd in m.running_dags():
        for tid in rd.tasks:
            if tid in owner:
                out.append(f"running task {tid} is in two running DAGs ({owner[tid]}, {rd.id})")
            owner[tid] = rd.id
        for d in rd.supports:
            for tid in m.sink_map(d).values():
                if owner.get(tid) != rd.id:
                    out.append(f"sink task {tid} of {d} is not in {d}'s running DAG {rd.id}")
    if set(owner) != set(by_id):
        out.append("running DAGs do not partition the running tasks")
    for t in running.values():
        kids = {c.id for c in m.running_children(t.id)}
        if kids != {c.id for c in running.values() if t.id in c.parents}:
            out.append(f"running children of {t.id} are recorded wrong")
    if m.default_task_count != sum(len(f) for f in m.submitted.values()):
        out.append("default task count is off")
    return out


def _plan_violations(m: Manager, dag_id: str, asked: Dataflow, plan: Dataflow) -> list[str]:
    """A plan holds the DAG as written plus copies of running tasks, with the same sinks."""
    out = []
    mine = {t.id: t for t in plan.tasks}
    if any(mine.get(t.id) != t for t in asked.tasks):
        out.append(f"the plan of {dag_id} lost or changed a task of the DAG")
    if set(plan.sinks) != set(asked.sinks):
        out.append(f"the plan of {dag_id} has other sinks than the DAG")
    if plan is not asked:
        sig = signatures(plan, m.match)
        for tid in set(mine) - {t.id for t in asked.tasks}:
            if m.running_by_signature(sig[tid]) is None:
                out.append(f"the plan of {dag_id} inserted {tid}, which spells no running task")
        last = {r.task: r for r in m.rewrites(dag_id)}  # a task rewritten twice reads the last
        for r in last.values():
            if r.via not in plan.parents.get(r.task, ()):
                out.append(f"the plan of {dag_id} does not read {r.task} from {r.via}")
    return out


def assert_invariants(m: Manager) -> None:
    """Raise :class:`InvariantViolation` listing every broken invariant."""
    found = violations(m)
    if found:
        raise InvariantViolation("; ".join(found))


def _components(m: Manager) -> set[frozenset[str]]:
    """Submitted DAGs grouped by the transitive "share a task" relation, recomputed from scratch."""
    parent = {d: d for d in m.submitted}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first: dict[str, str] = {}
    for dag_id in m.submitted:
        for s in signatures(m.plan(dag_id), m.match).values():
            other = first.setdefault(s, dag_id)
            parent[find(dag_id)] = find(other)
    groups: dict[str, set[str]] = defaultdict(set)
    for d in m.submitted:
        groups[find(d)].add(d)
    return {frozenset(g) for g in groups.values()}
