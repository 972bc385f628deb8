"""The reusable dataflow manager: merge on submit (section 4.1), unmerge on remove (4.2).

Book-keeping, in the paper's symbols:

- the submitted DAGs ``D`` and the running tasks, one per equivalence class (keyed by signature,
  see :mod:`reuse.core.equivalence`), with their wiring;
- ``Delta``: running DAG -> the submitted DAGs it supports; ``Phi``: submitted DAG -> its running
  DAG;
- for each submitted sink, the running task that produces its output.

Because every task of a submitted DAG lies in the ancestor graph of one of its sinks, Constraints
1 and 2 together say: the running tasks are exactly the distinct signatures of the submitted tasks.
So a running task is kept while at least one submitted DAG uses it (``users``), and ``remove``
stops exactly the tasks outside the remaining sinks' ancestor graphs, ``T_t``.

Running DAGs. The paper splits a running DAG into the connected components of its streams, and
keeps ``Phi`` as a function onto one running DAG. The two agree when every submitted DAG is
connected. A submitted DAG made of two independent pipelines would be split over two running DAGs
by the first rule, so we define a running DAG as a connected component of the relation "shares a
running task with", taken over the submitted DAGs (each submitted DAG is always whole inside one
running DAG). For connected submitted DAGs this is the paper's stream-connected component.

Containment. Under a policy with containment rules (issue 25, item 3), ``submit`` first rewrites
the dataflow into its *plan* (:func:`reuse.core.containment.contain`): a narrow task reads from
a running wider one, spelled in the plan as that running task. The manager merges and unmerges
the plan; :attr:`submitted` keeps the dataflow as the user wrote it, and ``Default`` counts that.
A running task's users are the DAGs whose *plans* hold it, so a wider task stays while a
residual's dataflow needs it. Its *owners* are the users that hold it as one of their own
tasks, not as an inserted copy: a remove that leaves a task used but unowned (the wide task of
residuals whose owner left) re-plans the dataflows that hold it, in the same delta
(:mod:`reuse.core.replan`, issue 36), so that containment never runs a task no one asked for.

Costs. ``submit`` is O(|D_n|) plus moving the smaller running DAGs of ``Y`` into the largest
(small-to-large, so each DAG moves O(log n) times in total). ``remove`` is O(|D_r|) when the
removed DAG's remaining tasks form one connected piece (the common case: one source); otherwise a
split check explores the running DAG from each piece at once, edge by edge, and stops as soon as
the pieces meet or all but one are exhausted, so a split costs the size of the smaller parts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reuse.core.containment import Rewrite, contain
from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.core.equivalence import Signature, check_dedup
from reuse.core.errors import ManagerError
from reuse.core.matching import EXACT, MatchPolicy
from reuse.core.plan import PlanDelta, RunningTask
from reuse.core.replan import Replan, replan

__all__ = ["Manager", "RunningDag"]


@dataclass(frozen=True)
class RunningDag:
    """A snapshot of one running (merged) DAG: its tasks, streams and ``Delta`` entry."""

    id: str
    tasks: tuple[str, ...]
    streams: tuple[tuple[str, str], ...]
    supports: tuple[str, ...]


Journal = Callable[[dict[str, Any]], None]


class Manager:
    """Merges submitted dataflows into running DAGs and unmerges them on removal.

    Every operation either completes and returns a :class:`~reuse.core.plan.PlanDelta`, or raises a
    :class:`~reuse.core.errors.ReuseError` having changed nothing. With a ``journal`` callable, each
    operation is written to it (and must be durable there) before the in-memory state changes;
    :mod:`reuse.core.state` provides one. ``match`` decides which tasks are equivalent
    (:mod:`reuse.core.matching`): ``EXACT`` by default, or the semantic policy of
    :func:`reuse.tasks.matching.match_policy`.

    Examples
    --------
    >>> from reuse.core.dataflow import parse_dataflow
    >>> def chain(name, *types):
    ...     ids = [f"t{i}" for i in range(len(types))]
    ...     return parse_dataflow({"id": name,
    ...         "tasks": [{"id": i, "type": t, "config": {}} for i, t in zip(ids, types)],
    ...         "streams": [[a, b] for a, b in zip(ids, ids[1:])]})
    >>> m = Manager()
    >>> m.submit(chain("A", "SYS", "Parse", "Kalman", "Out")).start.__len__()
    4
    >>> delta = m.submit(chain("B", "SYS", "Parse", "Average", "Out"))
    >>> len(delta.reused), len(delta.start), m.task_count, m.default_task_count
    (2, 2, 6, 8)
    >>> m.remove("A").stop
    ('A.t3', 'A.t2')
    """

    def __init__(self, journal: Journal | None = None, *, match: MatchPolicy = EXACT,
                 replan: bool = True) -> None:
        self._journal = journal
        self.match = match
        #: whether a remove re-plans the dataflows left holding an unowned wide task (issue 36;
        #: :mod:`reuse.core.replan`). On by default: that is the planner's meaning of
        #: containment. A runtime that cannot enact a re-plan's hand-over turns it off (see
        #: :func:`reuse.runtime.common.planners.make_planner`), and then containment may run
        #: more tasks than exact after a wide dataflow leaves.
        self.replan = replan
        self._submitted: dict[str, Dataflow] = {}
        self._plans: dict[str, Dataflow] = {}  # dag -> what was merged (containment rewrites)
        self._rewrites: dict[str, tuple[Rewrite, ...]] = {}
        # running task id -> type -> the running tasks of that type reading it, by id
        self._children: dict[str, dict[str, dict[str, RunningTask]]] = {}
        self._sigs: dict[str, dict[str, Signature]] = {}  # dag -> task id -> signature
        self._sigset: dict[str, frozenset[Signature]] = {}
        self._own: dict[str, frozenset[Signature]] = {}  # dag -> its own tasks' signatures
        self._owners: dict[Signature, int] = {}  # signature -> users holding it as own task
        self._tasks: dict[Signature, RunningTask] = {}
        self._sig_of: dict[str, Signature] = {}  # running task id -> signature
        self._users: dict[Signature, set[str]] = {}  # signature -> submitted DAGs using it
        self._phi: dict[str, str] = {}
        self._delta: dict[str, set[str]] = {}
        self._group_tasks: dict[str, set[Signature]] = {}
        self._next_group = 1
        self._default_tasks = 0

    # --- queries -------------------------------------------------------------------------------

    @property
    def submitted(self) -> Mapping[str, Dataflow]:
        """The submitted DAGs ``D``, in submission order."""
        return self._submitted

    def plan(self, dag_id: str) -> Dataflow:
        """The dataflow merged for a submitted DAG: the DAG itself, or its containment rewrite
        (:mod:`reuse.core.containment`), which holds every task of the DAG and the same sinks."""
        return self._plans[dag_id]

    def rewrites(self, dag_id: str) -> tuple[Rewrite, ...]:
        """The containment steps that made a submitted DAG's plan (empty: none)."""
        return self._rewrites.get(dag_id, ())

    def plan_signatures(self, dag_id: str) -> Mapping[str, Signature]:
        """A submitted DAG's plan task id -> signature."""
        return self._sigs[dag_id]

    def own_signatures(self, dag_id: str) -> frozenset[Signature]:
        """The signatures of a submitted DAG's own tasks in its plan (not the copies of running
        tasks the containment rewrite inserted)."""
        return self._own[dag_id]

    def running_task_of(self, signature: Signature) -> RunningTask:
        """The running task of a signature that runs."""
        return self._tasks[signature]

    def user_set(self, signature: Signature) -> frozenset[str]:
        """The submitted DAGs whose plans hold a running task, by its signature."""
        return frozenset(self._users[signature])

    def owner_count(self, signature: Signature) -> int:
        """How many submitted DAGs hold a running task as one of their own tasks."""
        return self._owners[signature]

    def running_by_signature(self, signature: Signature) -> RunningTask | None:
        """The running task of an equivalence class, if one runs."""
        return self._tasks.get(signature)

    def running_children(self, task_id: str, type_: str | None = None,
                         ) -> tuple[RunningTask, ...]:
        """The running tasks (of a type, if given) that read a running task's output, in no
        particular order."""
        kids = self._children[task_id]
        if type_ is not None:
            return tuple(kids[type_].values()) if type_ in kids else ()
        return tuple(c for of_type in kids.values() for c in of_type.values())

    @property
    def task_count(self) -> int:
        """Running tasks with reuse: the number of distinct equivalence classes submitted."""
        return len(self._tasks)

    @property
    def default_task_count(self) -> int:
        """Tasks that would run without reuse: the sum of the submitted DAGs' sizes."""
        return self._default_tasks

    @property
    def running_dag_count(self) -> int:
        return len(self._delta)

    def phi(self, dag_id: str) -> str:
        """``Phi``: the running DAG that contains a submitted DAG."""
        return self._phi[dag_id]

    def delta(self, running_dag: str) -> frozenset[str]:
        """``Delta``: the submitted DAGs a running DAG supports."""
        return frozenset(self._delta[running_dag])

    def running_tasks(self) -> list[RunningTask]:
        return list(self._tasks.values())

    def running_task(self, task_id: str) -> RunningTask:
        return self._tasks[self._sig_of[task_id]]

    def users(self, task_id: str) -> frozenset[str]:
        """The submitted DAGs that a running task serves (its reuse count is the size)."""
        return frozenset(self._users[self._sig_of[task_id]])

    def reuse_counts(self) -> dict[str, int]:
        """Running task id -> number of submitted DAGs it serves."""
        return {t.id: len(self._users[s]) for s, t in self._tasks.items()}

    def running_id(self, dag_id: str, task_id: str) -> str:
        """The running task that computes a submitted task's stream."""
        return self._tasks[self._sigs[dag_id][task_id]].id

    def sink_map(self, dag_id: str) -> dict[str, str]:
        """Each sink of a submitted DAG -> the running task producing its output."""
        flow = self._plans[dag_id]
        return {s: self.running_id(dag_id, s) for s in flow.sinks}

    def running_dags(self) -> list[RunningDag]:
        """Every running DAG with its tasks (topological by id order of start) and streams."""
        out = []
        for gid in sorted(self._delta, key=_group_key):
            tasks = [self._tasks[s] for s in self._group_tasks[gid]]
            tasks.sort(key=lambda t: t.id)
            streams = tuple(sorted((p, t.id) for t in tasks for p in t.parents))
            out.append(RunningDag(gid, tuple(t.id for t in tasks), streams,
                                  tuple(sorted(self._delta[gid]))))
        return out

    # --- merge (section 4.1) -------------------------------------------------------------------

    def submit(self, flow: Dataflow) -> PlanDelta:
        """Merge a de-dup dataflow ``D_n`` into the running DAGs.

        ``Y`` is the set of running DAGs sharing a source with ``D_n``; ``T_o`` (the union of the
        maximal ancestor intersection ``Lambda-hat(D_m, D_n)``) is the set of submitted tasks
        whose signature is already running (that set is closed under ancestors); ``T_x = T_n \\
        T_o`` are started, wired by ``S*_x`` inside ``T_x`` and by the boundary streams ``S+_x``
        from ``T_o``; ``Y`` and the new tasks become one running DAG ``D_m``.
        Under containment rules the merged DAG is the plan (:meth:`plan`), not ``D_n`` as written.
        """
        if flow.id in self._submitted:
            raise ManagerError("is already submitted (remove it first)", file=flow.source,
                               dag=flow.id)
        ordered = self.match.ordered_tasks(flow)
        sig = check_dedup(flow, self.match, ordered)
        rewrites: tuple[Rewrite, ...] = ()
        plan = flow
        if self.match.containment:
            plan, rewrites, sig = contain(flow, self, self.match, sig, ordered)
            # a wide task a narrow one reads counts its input order iff the narrow one does
            # (:func:`~reuse.core.containment.contain`); nothing else changes
            ordered = ordered | {r.via for r in rewrites if r.task in ordered}
        new_ids: dict[Signature, str] = {}
        taken: set[str] = set()
        for tid in plan.order:
            s = sig[tid]
            if s not in self._tasks:
                new_ids[s] = self._fresh_id(f"{flow.id}.{tid}", taken)
                taken.add(new_ids[s])

        def rid(s: Signature) -> str:
            return new_ids[s] if s in new_ids else self._tasks[s].id

        start = tuple(
            RunningTask(new_ids[sig[t]], sig[t], plan.task(t).type, plan.task(t).config,
                        tuple(rid(sig[p]) for p in
                              self.match.inputs(plan.parents[t], sig, t in ordered)))
            for t in plan.order if sig[t] in new_ids)
        reused = tuple(self._tasks[sig[t]].id for t in plan.order if sig[t] not in new_ids)
        connect = tuple((rid(sig[u]), rid(sig[d])) for u, d in plan.streams
                        if sig[u] in new_ids and sig[d] in new_ids)
        boundary = tuple((rid(sig[u]), rid(sig[d])) for u, d in plan.streams
                         if sig[u] not in new_ids and sig[d] in new_ids)
        overlapping = {self._group_of(sig[s]) for s in plan.sources if sig[s] in self._tasks}
        merged = tuple(sorted(overlapping, key=_group_key))
        if merged:
            target = max(merged, key=lambda g: (len(self._delta[g]), -_group_key(g)[1]))
        else:
            target = f"R{self._next_group}"
        sinks = {s: rid(sig[s]) for s in plan.sinks}
        delta = PlanDelta("submit", flow.id, start=start, connect=connect, boundary=boundary,
                          reused=reused, merged=merged, running_dag=target, sinks=sinks)
        self._write({"op": "submit", "dag": flow.to_dict(), "source": flow.source})

        # commit: nothing below can fail
        if not merged:
            self._next_group += 1
            self._delta[target] = set()
            self._group_tasks[target] = set()
        for g in merged:
            if g != target:
                for d in self._delta.pop(g):
                    self._phi[d] = target
                    self._delta[target].add(d)
                self._group_tasks[target] |= self._group_tasks.pop(g)
        for task in start:
            self._add_task(task, target)
        self._submitted[flow.id] = flow
        self._hold(flow.id, plan, rewrites, sig)
        self._phi[flow.id] = target
        self._delta[target].add(flow.id)
        self._default_tasks += len(flow)
        return delta

    # --- unmerge (section 4.2) -----------------------------------------------------------------

    def remove(self, dag_id: str) -> PlanDelta:
        """Unmerge a submitted dataflow ``D_r`` from its running DAG ``D_i = Phi(D_r)``.

        ``T_t``: the tasks of ``D_i`` in no remaining sink's ancestor graph, i.e. used by no other
        submitted DAG; ``S_t``: their incoming streams (a stopped task's children are stopped
        too). What remains of ``D_i`` is split into its connected parts ``D_mj``.
        """
        if dag_id not in self._submitted:
            raise ManagerError("is not submitted", dag=dag_id)
        plan = self._plans[dag_id]
        sig = self._sigs[dag_id]
        gid = self._phi[dag_id]
        if self.match.containment and self.replan:
            again = replan(self, dag_id, self._fresh_id)
            if again is not None:
                return self._remove_replanning(dag_id, again)
        stop_sigs = [sig[t] for t in reversed(plan.order) if self._users[sig[t]] == {dag_id}]
        stopping = set(stop_sigs)
        stop = tuple(self._tasks[s].id for s in stop_sigs)
        disconnect = tuple((p, self._tasks[s].id) for s in stop_sigs
                           for p in self._tasks[s].parents)
        pieces = _pieces(plan, sig, stopping)
        self._write({"op": "remove", "dag": dag_id})

        # commit
        self._release(dag_id)
        self._drop(stop_sigs)
        self._default_tasks -= len(self._submitted[dag_id])
        del self._submitted[dag_id], self._phi[dag_id]
        self._delta[gid].discard(dag_id)
        self._group_tasks[gid] -= stopping
        if not self._delta[gid]:
            del self._delta[gid], self._group_tasks[gid]
            split_into: tuple[str, ...] = ()
        elif len(pieces) > 1:
            split_into = (gid, *self._split(gid, pieces))
        else:
            split_into = (gid,)
        return PlanDelta("remove", dag_id, stop=stop, disconnect=disconnect, running_dag=gid,
                         split_into=split_into)

    def _remove_replanning(self, dag_id: str, again: Replan) -> PlanDelta:
        """Unmerge ``dag_id`` and give the DAGs of ``again`` their new plans, in one delta.

        Why one step: the tasks the old plans lose and the ones the new plans start change at
        one cut (see :class:`~reuse.core.plan.PlanDelta`). The re-planned DAGs stay in the
        running DAG: their new plans read only what their old ones read above the narrow
        tasks, so the running DAG can only split, as after any unmerge.
        """
        gid = self._phi[dag_id]
        old = [self._plans[d] for d in (dag_id, *again.order)]
        old_sigs = [self._sigs[d] for d in (dag_id, *again.order)]
        stop = tuple(self._tasks[s].id for s in again.stop)
        disconnect = tuple((p, self._tasks[s].id) for s in again.stop
                           for p in self._tasks[s].parents)
        new_ids = {t.id for t in again.start}
        connect = tuple((p, t.id) for t in again.start for p in t.parents if p in new_ids)
        boundary = tuple((p, t.id) for t in again.start for p in t.parents if p not in new_ids)
        self._write({"op": "remove", "dag": dag_id})

        # commit: nothing below can fail
        for d in (dag_id, *again.order):
            self._release(d)
        self._drop(again.stop)
        for task in again.start:
            self._add_task(task, gid)
        for d in again.order:
            self._hold(d, again.plans[d], again.rewrites[d], again.sigs[d])
        self._default_tasks -= len(self._submitted[dag_id])
        del self._submitted[dag_id], self._phi[dag_id]
        self._delta[gid].discard(dag_id)
        self._group_tasks[gid] -= set(again.stop)
        pieces = _pieces_of([*zip(old, old_sigs, strict=True),
                             *((again.plans[d], again.sigs[d]) for d in again.order)],
                            self._tasks)
        split_into = (gid, *self._split(gid, pieces)) if len(pieces) > 1 else (gid,)
        replanned = {d: self.sink_map(d) for d in again.order}
        return PlanDelta("remove", dag_id, start=again.start, connect=connect, boundary=boundary,
                         stop=stop, disconnect=disconnect, running_dag=gid,
                         split_into=split_into, handover=dict(again.handover),
                         replanned=replanned, absorbs=dict(again.absorbs))

    def _hold(self, dag_id: str, plan: Dataflow, rewrites: tuple[Rewrite, ...],
              sig: Mapping[str, Signature]) -> None:
        """Record a submitted DAG's plan as its running tasks' users and owners."""
        own = frozenset(sig[t.id] for t in self._submitted[dag_id].tasks)
        for s in sig.values():
            self._users[s].add(dag_id)
        for s in own:
            self._owners[s] += 1
        self._plans[dag_id] = plan
        if rewrites:
            self._rewrites[dag_id] = rewrites
        else:
            self._rewrites.pop(dag_id, None)
        self._sigs[dag_id] = dict(sig)
        self._sigset[dag_id] = frozenset(sig.values())
        self._own[dag_id] = own

    def _release(self, dag_id: str) -> None:
        """Forget a submitted DAG's plan (the inverse of :meth:`_hold`)."""
        for s in self._sigset[dag_id]:
            self._users[s].discard(dag_id)
        for s in self._own[dag_id]:
            self._owners[s] -= 1
        del self._plans[dag_id], self._sigs[dag_id], self._sigset[dag_id], self._own[dag_id]
        self._rewrites.pop(dag_id, None)

    def _add_task(self, task: RunningTask, gid: str) -> None:
        self._tasks[task.signature] = task
        self._sig_of[task.id] = task.signature
        self._users[task.signature] = set()
        self._owners[task.signature] = 0
        self._group_tasks[gid].add(task.signature)
        self._children[task.id] = {}
        for p in task.parents:
            self._children[p].setdefault(task.type, {})[task.id] = task

    def _drop(self, stop: Iterable[Signature]) -> None:
        """Forget stopped tasks, given children first (a stopped task's children are stopped
        too)."""
        for s in stop:
            task = self._tasks.pop(s)
            del self._sig_of[task.id]
            del self._users[s], self._owners[s]
            del self._children[task.id]
            for p in task.parents:
                kids = self._children[p][task.type]
                del kids[task.id]
                if not kids:
                    del self._children[p][task.type]

    def _split(self, gid: str, pieces: list[set[Signature]]) -> list[str]:
        """Split running DAG ``gid`` along the pieces left by a removal; return the new DAG ids.

        One search per piece walks the bipartite graph (running task -- submitted DAG using it),
        one edge per search in turn. Searches that meet are fused; a search that runs out of
        edges has found a whole component, which becomes a new running DAG. The last search
        standing keeps ``gid``.
        """
        n = len(pieces)
        fused = list(range(n))

        def root(i: int) -> int:
            while fused[i] != i:
                fused[i] = fused[fused[i]]
                i = fused[i]
            return i

        owner_sig: dict[Signature, int] = {}
        owner_dag: dict[str, int] = {}
        seen_sigs: list[set[Signature]] = [set() for _ in range(n)]
        seen_dags: list[set[str]] = [set() for _ in range(n)]
        frontier: list[deque[tuple[bool, Iterator[str]]]] = [deque() for _ in range(n)]
        for i, piece in enumerate(pieces):
            for s in piece:
                owner_sig[s] = i
                seen_sigs[i].add(s)
                frontier[i].append((True, iter(self._users[s])))
        active = set(range(n))
        finished: list[int] = []
        while len(active) > 1:
            for i in list(active):
                if i not in active:
                    continue
                q = frontier[i]
                node: str | None = None
                from_sig = False
                while q:
                    from_sig, it = q[0]
                    node = next(it, None)
                    if node is not None:
                        break
                    q.popleft()
                if node is None:
                    active.discard(i)
                    finished.append(i)
                    if len(active) <= 1:
                        break
                    continue
                owners = owner_dag if from_sig else owner_sig
                other = owners.get(node)
                if other is None:
                    owners[node] = i
                    if from_sig:
                        seen_dags[i].add(node)
                        q.append((False, iter(self._sigset[node])))
                    else:
                        seen_sigs[i].add(node)
                        q.append((True, iter(self._users[node])))
                    continue
                j = root(other)
                if j == i:
                    continue
                big, small = (i, j) if len(seen_sigs[i]) >= len(seen_sigs[j]) else (j, i)
                fused[small] = big
                seen_sigs[big] |= seen_sigs[small]
                seen_dags[big] |= seen_dags[small]
                frontier[big].extend(frontier[small])
                frontier[small].clear()
                active.discard(small)
                if len(active) <= 1:
                    break
        new_ids = []
        for i in sorted(finished, key=lambda k: min(seen_dags[k])):
            new = f"R{self._next_group}"
            self._next_group += 1
            self._delta[gid] -= seen_dags[i]
            self._group_tasks[gid] -= seen_sigs[i]
            self._delta[new] = seen_dags[i]
            self._group_tasks[new] = seen_sigs[i]
            for d in seen_dags[i]:
                self._phi[d] = new
            new_ids.append(new)
        return new_ids

    # --- helpers -------------------------------------------------------------------------------

    def _group_of(self, s: Signature) -> str:
        return self._phi[next(iter(self._users[s]))]

    def _fresh_id(self, wanted: str, taken: set[str]) -> str:
        if wanted not in self._sig_of and wanted not in taken:
            return wanted
        n = 2
        while f"{wanted}#{n}" in self._sig_of or f"{wanted}#{n}" in taken:
            n += 1
        return f"{wanted}#{n}"

    def _write(self, record: dict[str, Any]) -> None:
        if self._journal is not None:
            self._journal(record)

    # --- persistence ---------------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """The whole state as JSON data (see :mod:`reuse.core.state`)."""
        state: dict[str, Any] = {
            "version": 1,
            "submitted": [self._submitted_state(d) for d in self._submitted],
            "tasks": [t.to_dict() for t in self._tasks.values()],
            "phi": dict(self._phi),
            "next_group": self._next_group,
        }
        if self.match.name != EXACT.name:
            state["match"] = self.match.name
        return state

    def _submitted_state(self, dag_id: str) -> dict[str, Any]:
        flow = self._submitted[dag_id]
        item: dict[str, Any] = {"dag": flow.to_dict(), "source": flow.source}
        if dag_id in self._rewrites:
            item["plan"] = self._plans[dag_id].to_dict()
            item["rewrites"] = [r.__dict__ for r in self._rewrites[dag_id]]
        return item

    @classmethod
    def from_state(cls, state: Mapping[str, Any], journal: Journal | None = None, *,
                   match: MatchPolicy = EXACT, replan: bool = True) -> Manager:
        """Rebuild a manager from :meth:`to_state` data (the inverse, checked by the tests).

        ``match`` must be the policy the state was saved under (its signatures depend on it).
        A DAG's plan is read as saved, not rewritten again: the rewrite depended on what was
        running when the DAG was submitted.
        """
        saved = state.get("match", EXACT.name)
        if saved != match.name:
            raise ManagerError(f"the state was saved with match policy {saved!r}, not "
                               f"{match.name!r}")
        m = cls(journal=journal, match=match, replan=replan)
        for t in state["tasks"]:
            task = RunningTask.from_dict(t)
            m._tasks[task.signature] = task
            m._sig_of[task.id] = task.signature
            m._users[task.signature] = set()
            m._owners[task.signature] = 0
            m._children[task.id] = {}
        for task in m._tasks.values():
            for p in task.parents:
                m._children[p].setdefault(task.type, {})[task.id] = task
        for item in state["submitted"]:
            flow = parse_dataflow(item["dag"], source=item.get("source"))
            plan = flow
            if "plan" in item:
                plan = parse_dataflow(item["plan"], source=item.get("source"))
                m._rewrites[flow.id] = tuple(Rewrite(**r) for r in item["rewrites"])
            sig = check_dedup(plan, match)
            gid = state["phi"][flow.id]
            m._submitted[flow.id] = flow
            m._hold(flow.id, plan, m._rewrites.get(flow.id, ()), sig)
            m._phi[flow.id] = gid
            m._delta.setdefault(gid, set()).add(flow.id)
            m._group_tasks.setdefault(gid, set()).update(sig.values())
            m._default_tasks += len(flow)
        m._next_group = int(state["next_group"])
        return m

    def apply(self, record: Mapping[str, Any]) -> PlanDelta:
        """Replay one journal record (as written before an operation) on this manager."""
        if record["op"] == "submit":
            return self.submit(parse_dataflow(record["dag"], source=record.get("source")))
        if record["op"] == "remove":
            return self.remove(record["dag"])
        raise ManagerError(f"unknown journal operation {record['op']!r}")


def _group_key(gid: str) -> tuple[str, int]:
    digits = gid.lstrip("R")
    return ("R", int(digits)) if digits.isdigit() else (gid, 0)


def _pieces(flow: Dataflow, sig: Mapping[str, Signature],
            stopping: set[Signature]) -> list[set[Signature]]:
    """Connected parts (by ``flow``'s streams) of the tasks of ``flow`` that keep running.

    Those tasks are closed under ancestors, and every stream between two of them keeps running
    (the child's other users have the same parents), so each part stays connected after removal.
    """
    keep = [t for t in flow.order if sig[t] not in stopping]
    parent = {t: t for t in keep}

    def find(t: str) -> str:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for u, d in flow.streams:
        if u in parent and d in parent:
            parent[find(u)] = find(d)
    parts: dict[str, set[Signature]] = {}
    for t in keep:
        parts.setdefault(find(t), set()).add(sig[t])
    return list(parts.values())



def _pieces_of(plans: Sequence[tuple[Dataflow, Mapping[str, Signature]]],
               running: Mapping[Signature, RunningTask]) -> list[set[Signature]]:
    """Connected parts of the still running tasks of several plans (a remove's, and the old
    and new plans of the DAGs it re-planned), joined by the plans' streams and by signature.

    Every part after the change holds one of these tasks (what lost a user is in one of the
    plans), and two tasks a plan's stream joins stay joined (a running task's users hold its
    parents too), so the split search of :meth:`Manager._split` may start from them.
    """
    parent: dict[Signature, Signature] = {}

    def find(s: Signature) -> Signature:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for flow, sig in plans:
        for t in flow.order:
            if sig[t] in running:
                parent.setdefault(sig[t], sig[t])
        for u, d in flow.streams:
            if sig[u] in running and sig[d] in running:
                parent[find(sig[u])] = find(sig[d])
    parts: dict[Signature, set[Signature]] = {}
    for s in parent:
        parts.setdefault(find(s), set()).add(s)
    return list(parts.values())
