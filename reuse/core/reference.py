"""A literal implementation of the merge and unmerge algorithms, for tests and benchmarks.

It follows sections 4.1 and 4.2 step by step on explicit running DAGs ``D_i<T_i, S_i>``, deciding
equivalence with :func:`reuse.core.equivalence.tasks_equivalent_literal` (ancestor graphs and a
bijection search), with no signatures and no indexes. It is slow by design: ``Lambda(D_m, D_n)``
tests every pair of config-similar tasks. :class:`reuse.core.manager.Manager` must agree with it on
every step: same running tasks (same ids), same wiring, same partition into running DAGs.

Two readings of the paper made explicit here:

- ``Lambda-hat(D_m, D_n)`` picks the ancestor graphs from ``D_n``'s side, so that ``T_o`` and
  ``T_x = T_n \\ T_o`` are sets of the submitted DAG's tasks (the formulas use them that way).
- After an unmerge, the stream-connected components are fused where one remaining submitted DAG
  has tasks in several of them, so that ``Phi`` stays a function (see :mod:`reuse.core.manager`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reuse.core.dataflow import Dataflow, Task, fresh_id
from reuse.core.equivalence import (
    AncestorGraph,
    ancestor_graph,
    check_dedup,
    maximal,
    tasks_equivalent_literal,
)
from reuse.core.errors import ManagerError

__all__ = ["ReferenceManager"]


@dataclass
class _Running:
    """A running DAG ``D_i<T_i, S_i>`` with the submitted DAGs it supports (``Delta(D_i)``)."""

    tasks: dict[str, Task] = field(default_factory=dict)
    streams: set[tuple[str, str]] = field(default_factory=set)
    supports: set[str] = field(default_factory=set)

    def as_dataflow(self) -> Dataflow:
        return Dataflow("running", tuple(self.tasks.values()), tuple(sorted(self.streams)))


class ReferenceManager:
    """The paper's manager, literally. Same public queries as the fast manager where compared."""

    def __init__(self) -> None:
        self.submitted: dict[str, Dataflow] = {}
        self.running: list[_Running] = []
        self.sinks: dict[str, dict[str, str]] = {}  # dag -> sink task -> running task id

    @property
    def task_count(self) -> int:
        return sum(len(r.tasks) for r in self.running)

    def phi(self, dag_id: str) -> _Running:
        return next(r for r in self.running if dag_id in r.supports)

    def partition(self) -> set[frozenset[str]]:
        """The running DAGs as sets of running task ids."""
        return {frozenset(r.tasks) for r in self.running}

    def wiring(self) -> set[tuple[str, str, str, tuple[str, ...]]]:
        """Every running task as (id, type, config, sorted parents)."""
        out = set()
        for r in self.running:
            for t in r.tasks.values():
                parents = tuple(sorted(u for u, d in r.streams if d == t.id))
                out.add((t.id, t.type, t.config_key, parents))
        return out

    # --- 4.1 -----------------------------------------------------------------------------------

    def submit(self, dn: Dataflow) -> None:
        if dn.id in self.submitted:
            raise ManagerError("is already submitted", dag=dn.id)
        check_dedup(dn)
        # Y = {D_i : T_i n T_n n R != 0}: running DAGs sharing a source task (sources have no
        # ancestors, so for them equivalence is config-similarity)
        src_n = {dn.task(s).abstract for s in dn.sources}
        overlapping = [r for r in self.running
                       if any(t.abstract in src_n for t in r.tasks.values()
                              if not any(d == t.id for _, d in r.streams))]
        dm = _Running()
        for r in overlapping:
            dm.tasks.update(r.tasks)
            dm.streams |= r.streams
            dm.supports |= r.supports
        match: dict[str, str] = {}  # task of D_n -> equivalent task of D_m
        a_hat: list[AncestorGraph] = []
        if dm.tasks:
            dm_flow = dm.as_dataflow()
            memo_m: dict[str, AncestorGraph] = {}
            memo_n: dict[str, AncestorGraph] = {}
            lam = []
            for tj in dn.order:
                for ti in dm.tasks:
                    if tasks_equivalent_literal(dm_flow, ti, dn, tj, memo_m, memo_n):
                        match[tj] = ti
                        lam.append(ancestor_graph(dn, tj, memo_n))
                        break
            a_hat = maximal(lam)  # Lambda-hat(D_m, D_n) = Omega(Lambda(D_m, D_n))
        t_o = set().union(*(a.tasks for a in a_hat)) if a_hat else set()
        s_o = set().union(*(a.streams for a in a_hat)) if a_hat else set()
        assert t_o == set(match) and s_o <= set(dn.streams)
        t_x = [t for t in dn.order if t not in t_o]
        taken = {tid for r in self.running for tid in r.tasks}
        new_id: dict[str, str] = {}
        for t in t_x:
            new_id[t] = fresh_id(f"{dn.id}.{t}", taken)
            taken.add(new_id[t])
        s_star = {(new_id[u], new_id[d]) for u, d in dn.streams if u not in t_o and d not in t_o}
        s_plus = {(match[u], new_id[d]) for u, d in dn.streams if u in t_o and d not in t_o}
        for t in t_x:
            task = dn.task(t)
            dm.tasks[new_id[t]] = Task(new_id[t], task.type, task.config)
        dm.streams |= s_star | s_plus
        dm.supports.add(dn.id)
        self.running = [r for r in self.running if r not in overlapping] + [dm]
        self.submitted[dn.id] = dn
        rid = {**match, **new_id}
        self.sinks[dn.id] = {s: rid[s] for s in dn.sinks}

    # --- 4.2 -----------------------------------------------------------------------------------

    def remove(self, dag_id: str) -> None:
        if dag_id not in self.submitted:
            raise ManagerError("is not submitted", dag=dag_id)
        di = self.phi(dag_id)
        ds = di.supports - {dag_id}
        di_flow = di.as_dataflow()
        memo: dict[str, AncestorGraph] = {}
        # A: ancestor graphs of the remaining output tasks (taken in D_i, at their equivalents)
        keep: set[str] = set()
        for dk in ds:
            for running_sink in self.sinks[dk].values():
                keep |= ancestor_graph(di_flow, running_sink, memo).tasks
        t_t = set(di.tasks) - keep
        s_t = {s for s in di.streams if s[0] in t_t or s[1] in t_t}
        for t in t_t:
            del di.tasks[t]
        di.streams -= s_t
        del self.submitted[dag_id], self.sinks[dag_id]
        self.running.remove(di)
        # forward traversal from the retained input tasks: connected components of D_j
        comp: dict[str, int] = {}
        adj: dict[str, set[str]] = {t: set() for t in di.tasks}
        for u, d in di.streams:
            adj[u].add(d)
            adj[d].add(u)
        for start in sorted(di.tasks):
            if start in comp:
                continue
            comp[start] = len(comp)
            stack = [start]
            while stack:
                for nxt in adj[stack.pop()]:
                    if nxt not in comp:
                        comp[nxt] = comp[start]
                        stack.append(nxt)
        label = {t: comp[t] for t in comp}
        # fuse components holding parts of one remaining submitted DAG (Phi is a function)
        root = {c: c for c in set(label.values())}

        def find(c: int) -> int:
            while root[c] != c:
                c = root[c]
            return c

        for dk in ds:
            comps = [find(label[t]) for running_sink in self.sinks[dk].values()
                     for t in ancestor_graph(di_flow, running_sink, memo).tasks]
            for c in comps[1:]:
                a, b = find(c), find(comps[0])
                if a != b:
                    root[a] = b
        parts: dict[int, _Running] = {}
        for t, task in di.tasks.items():
            parts.setdefault(find(label[t]), _Running()).tasks[t] = task
        for u, d in di.streams:
            parts[find(label[d])].streams.add((u, d))
        for dk in ds:
            parts[find(label[next(iter(self.sinks[dk].values()))])].supports.add(dk)
        self.running.extend(parts.values())

