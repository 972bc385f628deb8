"""The deployment of the shared-query engine: which task runs in which shard, over which events.

The inplace engine runs every task inside a fixed set of long-running shard queries, so a merge
or an unmerge starts and stops no query. What changes is data: the *deployment*, a versioned
mapping from shards to tasks, each task with its window ``[J, R)`` of source ``seq`` (its join
point and end cut). A batch takes a snapshot of it (an :class:`Epoch`) and runs, in every shard,
the shard's tasks over the batch's events. Everything here is plain data and pure decisions; no
Spark, so it is tested on its own (``tests/runtime/engines/shared/test_deploy.py``).

Why the windows make changes exact (the cut argument)
------------------------------------------------------
Batches claim contiguous ranges ``[lo, hi)`` of source ``seq``; the *frontier* is the first
``seq`` no batch has claimed. A change takes effect at a cut ``>=`` the frontier, so no batch
that has run, or runs again after a restart, sees a task's window move under it: for every
``seq`` below the frontier the deployment's windows are final. A new task therefore processes
every event from its ``J`` on, and an ended task none from its ``R`` on.

Why a running DAG lives whole in one shard
-------------------------------------------
A *unit* is a connected component of the deployed tasks (parent links, ended tasks that still
process events below their cut included). A unit runs in one shard, so a task's parents are
always computed in the same worker, in the same batch, and no reused output crosses the bus.
When a submit connects units in different shards (running DAGs merge), the smaller ones move to
the shard of the largest, at the frontier; task state lives with the task, not the shard, so a
move is exact. The price: one unit's work is capped by what one core can do.

Replicas (k-safety, issue 13)
-----------------------------
With ``reuse run --k-safe K`` every live task that at least ``U`` submitted dataflows use runs
``K`` more times as *replicas* (``<task>@replica<r>``), each level ``r`` a copy of the
replicated tasks' subgraph (that set is closed under parents: a dataflow that uses a task uses
its ancestors, so a parent has at least the users of its child). A replica's parents are the
replicas of the same level, so a replica unit is self-contained, and :meth:`Deployment.replicate`
keeps it in a shard that holds neither its primaries nor another level of them (anti-affinity
at the shard level; the engine runs each shard of a batch as one Spark task). A replica joins
at a batch boundary at or after the cut that made its task shared: a batch ``[lo, hi)`` that a
requested start falls strictly inside moves the start to ``hi``, so the replica's first batch
starts exactly where the primary's saved state ends and it is seeded with that state (the
engine copies it; ``replica_of`` in the spec; a resume takes the starts from the last saved
batch); one made with its primary keeps its start. Replicas end with their primary, or when it
falls below ``U`` users.

Load balance: a new unit goes to the least loaded shard; after each change, one whole unit
moves from the most to the least loaded shard if that lowers the maximum load by more than
``margin`` (5%). Load is the sum of task weights (the inplace engine's: CPU per event).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import parents_first
from reuse.runtime.common.ledger import LedgerReplica
from reuse.runtime.common.planners import NewTask, Placement, Removal

__all__ = ["DeployedTask", "Start", "End", "Move", "Free", "Replicate", "Action", "Epoch",
           "Deployment", "REPLICA_MARK", "replica_level"]


@dataclass(frozen=True)
class DeployedTask:
    """A task as deployed: its wiring, shard and window ``[start, end)`` (``end`` None: open)."""

    id: str
    type: str
    config: Any = field(compare=False)
    parents: tuple[str, ...]
    kind: str
    shard: int
    start: int
    end: int | None = None
    record: bool = False
    replica_of: str | None = None
    takes_over: str | None = None
    absorbs: tuple[str, ...] = ()

    @property
    def stream(self) -> str:
        return NewTask(self.id, self.type, self.config, self.parents, self.kind).stream

    def spec(self) -> dict[str, Any]:
        """What a shard worker needs to run it (JSON-able)."""
        return {"id": self.id, "type": self.type, "config": self.config,
                "parents": list(self.parents), "kind": self.kind, "start": self.start,
                "end": self.end, "record": self.record, "replica_of": self.replica_of,
                "takes_over": self.takes_over, "absorbs": list(self.absorbs),
                "stream": self.stream if self.kind == "source" else None}


@dataclass(frozen=True)
class Start:
    """Task ``task`` runs in ``shard`` from ``seq`` ``at`` on."""

    task: str
    shard: int
    at: int


@dataclass(frozen=True)
class End:
    """Task ``task`` takes no event ``>= at``."""

    task: str
    at: int


@dataclass(frozen=True)
class Move:
    """A unit moves between shards at the frontier ``at`` (with its tasks' state)."""

    tasks: tuple[str, ...]
    src: int
    dst: int
    at: int


@dataclass(frozen=True)
class Free:
    """An ended task leaves the deployment: every batch now starts past its end cut."""

    task: str
    at: int


@dataclass(frozen=True)
class Replicate:
    """Replica ``task`` of ``of`` runs in ``shard`` from the first batch boundary ``>= at``."""

    task: str
    of: str
    shard: int
    at: int


Action = Start | End | Move | Free | Replicate

#: a replica's id is its primary's, this mark and its level (``t@replica1``)
REPLICA_MARK = "@replica"


def replica_level(task: str) -> int:
    """A replica's level ``r`` from its id (``t@replica2``, or ``t@replica2~3`` when made
    again); 0 for a primary. The split layout shifts level ``r``'s partitions by ``r``."""
    _, mark, rest = task.rpartition(REPLICA_MARK)
    level = rest.split("~", 1)[0]
    return int(level) if mark and level.isdigit() else 0


@dataclass(frozen=True)
class Epoch:
    """A snapshot of the deployment taken by one batch: per shard, its tasks parents-first."""

    version: int
    shards: tuple[tuple[dict[str, Any], ...], ...]

    @property
    def empty(self) -> bool:
        return not any(self.shards)


class Deployment:
    """Tasks, shards and windows of the inplace engine; changed only through its methods.
    ``shards``: the shared query's partitions (at least 1); ``weight``: a deployed task's load
    (default 1, sources 0; the inplace engine passes each task's measured CPU per event)."""

    def __init__(self, shards: int,
                 weight: Callable[[DeployedTask], float] | None = None) -> None:
        if not isinstance(shards, int) or shards < 1:
            raise SparkRuntimeError(f"shards must be a positive integer, got {shards!r}")
        self.shards = shards
        self._weight = weight or (lambda t: 0.0 if t.kind == "source" else 1.0)
        self.tasks: dict[str, DeployedTask] = {}
        self.version = 0
        self.frontier = 0
        self.history: list[Action] = []
        self.margin = 0.05
        #: every replica ever deployed: ``{"of", "level", "start", "end"}`` (freed ones too),
        #: the windows its outputs are checked against
        self.replica_log: dict[str, LedgerReplica] = {}

    # --- queries -----------------------------------------------------------------------------

    def load(self, shard: int) -> float:
        """Sum of the weights of the live tasks in ``shard``."""
        return sum(self._weight(t) for t in self.tasks.values()
                   if t.shard == shard and t.end is None)

    def loads(self) -> list[float]:
        return [self.load(s) for s in range(self.shards)]

    def live(self) -> list[str]:
        return [t for t, d in self.tasks.items() if d.end is None]

    def units(self) -> list[set[str]]:
        """Connected components of the deployed tasks (undirected parent links, and a
        re-plan's hand-over links while both ends are deployed: a started task's state comes
        from the tasks it takes over and absorbs, in its shard)."""
        adj: dict[str, set[str]] = {t: set() for t in self.tasks}
        for t, d in self.tasks.items():
            for p in (*d.parents, *([d.takes_over] if d.takes_over else []), *d.absorbs):
                if p in adj:
                    adj[t].add(p)
                    adj[p].add(t)
        seen: set[str] = set()
        out = []
        for t in self.tasks:
            if t in seen:
                continue
            comp, todo = set(), [t]
            while todo:
                x = todo.pop()
                if x in comp:
                    continue
                comp.add(x)
                todo.extend(adj[x] - comp)
            seen |= comp
            out.append(comp)
        return out

    def unit_of(self, task: str) -> set[str]:
        for u in self.units():
            if task in u:
                return u
        raise SparkRuntimeError("is not deployed", task=task)

    def check(self) -> None:
        """Invariants: every parent deployed in its child's shard; windows well formed."""
        for t, d in self.tasks.items():
            if not 0 <= d.shard < self.shards:
                raise SparkRuntimeError(f"is in shard {d.shard} of {self.shards}", task=t)
            if d.end is not None and d.end < d.start:
                raise SparkRuntimeError(f"ends at {d.end} before its start {d.start}", task=t)
            for p in d.parents:
                if p not in self.tasks:
                    raise SparkRuntimeError(f"has parent {p} that is not deployed", task=t)
                if self.tasks[p].shard != d.shard:
                    raise SparkRuntimeError(f"runs in shard {d.shard} but its parent {p} in "
                                            f"shard {self.tasks[p].shard}", task=t)
        held: dict[str, dict[int, str]] = {}
        for t, d in self.tasks.items():
            if d.end is not None and d.end <= self.frontier:
                continue  # takes no more events: nothing left to keep apart
            first = held.setdefault(d.replica_of or t, {}).setdefault(d.shard, t)
            if first != t:
                raise SparkRuntimeError(f"shares shard {d.shard} with {first}, a copy of the "
                                        "same task (replicas must sit apart)", task=t)

    # --- changes -----------------------------------------------------------------------------

    def _check_cut(self, at: int, what: str) -> None:
        if at < self.frontier:
            raise SparkRuntimeError(f"{what}: cut {at} is in the past (batches have claimed "
                                    f"every seq below {self.frontier})")

    def deploy(self, placement: Placement, at: int, *, record: Iterable[str] = ()) -> list[Action]:
        """Start the placement's new tasks at ``J = at`` in the shard of the unit they join.

        ``record``: tasks whose outputs are recorded (a dataflow's leaf task with no sink).
        Checks everything before changing anything.
        """
        self._check_cut(at, f"submit {placement.dag}")
        new = {t.id: t for t in placement.start}
        for t in placement.start:
            if t.id in self.tasks:
                raise SparkRuntimeError("is already deployed", task=t.id)
            for p in t.parents:
                if p not in new and (p not in self.tasks or self.tasks[p].end is not None):
                    raise SparkRuntimeError(f"reads {p}, which is not a live deployed task",
                                            task=t.id)
        recorded = set(record)
        for r in recorded:
            if r not in new and r not in self.tasks:
                raise SparkRuntimeError("is recorded but not deployed", task=r)
        old_shards = {p: self.tasks[p].shard for t in placement.start for p in t.parents
                      if p in self.tasks}
        # the units the new tasks connect, by shard and load
        touched: dict[int, float] = dict.fromkeys(old_shards.values(), 0.0)
        for u in self.units():
            shard = self.tasks[next(iter(u))].shard
            if u & set(old_shards):
                touched[shard] = touched.get(shard, 0.0) + sum(
                    self._weight(self.tasks[x]) for x in u)
        if touched:
            target = max(sorted(touched), key=lambda s: touched[s])
        else:
            loads = self.loads()
            target = min(range(self.shards), key=lambda s: (loads[s], s))
        actions: list[Action] = []
        for s in sorted(touched):
            if s == target:
                continue
            for u in self.units():
                if u & set(old_shards) and self.tasks[next(iter(u))].shard == s:
                    actions.append(self._move(u, target))
        for t in placement.start:
            self.tasks[t.id] = DeployedTask(t.id, t.type, t.config, t.parents, t.kind, target, at,
                                            None, t.id in recorded)
            actions.append(Start(t.id, target, at))
        for r in recorded - set(new):
            self.tasks[r] = replace(self.tasks[r], record=True)
        actions += self._balance()
        actions += self._place_replicas()
        self._changed(actions)
        return actions

    def end(self, removal: Removal, at: int, *, record: Iterable[str] = ()) -> list[Action]:
        """End the removal's tasks at ``R = at``: they take no event ``>= R`` and are freed
        once every batch starts past ``R``.

        A re-plan (``removal.start``, issue 36) starts its tasks at the same cut ``J = R``,
        in the shard of the stopped tasks they take over from (or of their parents): the
        old tasks give every ``seq < R``, the new ones every ``seq >= R``, so the re-planned
        dataflows' sinks see each ``seq`` once. ``takes_over`` tells the engine whose state
        a started task begins with, ``absorbs`` which wide tasks' states it adds (both in its
        shard). ``record``: started tasks whose outputs are recorded.
        Checks everything before changing anything.
        """
        self._check_cut(at, f"remove {removal.dag}")
        for t in removal.stop:
            if t not in self.tasks:
                raise SparkRuntimeError("is not deployed", task=t)
            if self.tasks[t].end is not None:
                raise SparkRuntimeError(f"already ends at {self.tasks[t].end}", task=t)
        new = {n.id: n for n in removal.start}
        shard: dict[str, int] = {}
        for n in removal.start:  # parents first (the manager's order)
            if n.id in self.tasks:
                raise SparkRuntimeError("is already deployed", task=n.id)
            for p in n.parents:
                if p not in new and (p not in self.tasks or self.tasks[p].end is not None
                                     or p in removal.stop):
                    raise SparkRuntimeError(f"reads {p}, which is not a live deployed task",
                                            task=n.id)
            old = removal.handover.get(n.id)
            if old is not None and old not in self.tasks:
                raise SparkRuntimeError(f"takes over {old}, which is not deployed", task=n.id)
            wides = removal.absorbs.get(n.id, ())
            for w in wides:
                if w not in self.tasks:
                    raise SparkRuntimeError(f"absorbs {w}, which is not deployed", task=n.id)
            homes = {shard[p] if p in new else self.tasks[p].shard for p in n.parents}
            # the state it starts with is in its shard's batch (a cut inside a batch is seeded
            # in the shard, run_shard), so what it takes over and absorbs runs there too
            homes.update(self.tasks[t].shard for t in ([old] if old else []) + list(wides))
            if len(homes) != 1:  # a re-plan stays inside one running DAG, so one unit
                raise SparkRuntimeError(f"would join shards {sorted(homes)} at a re-plan",
                                        task=n.id)
            shard[n.id] = homes.pop()
        recorded = set(record)
        actions: list[Action] = []
        for t in removal.stop:
            self.tasks[t] = replace(self.tasks[t], end=at)
            actions.append(End(t, at))
        for t in sorted(recorded - set(new)):  # a kept task that now computes a leaf sink
            if t in self.tasks and not self.tasks[t].record:
                self.tasks[t] = replace(self.tasks[t], record=True)
        for n in removal.start:
            self.tasks[n.id] = DeployedTask(n.id, n.type, n.config, n.parents, n.kind,
                                            shard[n.id], at, None, n.id in recorded,
                                            takes_over=removal.handover.get(n.id),
                                            absorbs=tuple(removal.absorbs.get(n.id, ())))
            actions.append(Start(n.id, shard[n.id], at))
        actions += self._balance()
        actions += self._place_replicas()
        self._changed(actions)
        return actions

    def move(self, task: str, shard: int) -> list[Action]:
        """Move the unit of ``task`` to ``shard`` at the frontier (tests, manual balancing)."""
        if not 0 <= shard < self.shards:
            raise SparkRuntimeError(f"there is no shard {shard} (0..{self.shards - 1})")
        unit = self.unit_of(task)
        if self.tasks[task].shard == shard:
            return []
        actions: list[Action] = [self._move(unit, shard)]
        actions += self._place_replicas()
        self._changed(actions)
        return actions

    def source_starts(self, name: Callable[[str], str] = str) -> dict[str, int]:
        """Source stream (as ``name`` calls it: a private replay's by the shared stream it
        copies) -> the first ``seq`` a source task still to run reads it from."""
        out: dict[str, int] = {}
        for t in self.tasks.values():
            if t.kind == "source" and (t.end is None or t.end > self.frontier):
                s = name(t.stream)
                out[s] = min(out.get(s, t.start), t.start)
        return out

    def claim(self, lo: int, hi: int) -> Epoch:
        """A batch over ``[lo, hi)`` takes its snapshot: tasks ended at or before ``lo`` are
        freed first (no batch will give them an event again), then the frontier moves to
        ``hi``. Called with the engine's lock held, like every change."""
        freed: list[Action] = []
        for t, d in list(self.tasks.items()):
            if d.end is not None and d.end <= lo and not any(
                    t in o.parents for o in self.tasks.values() if o.id != t
                    and (o.end is None or o.end > lo)):
                del self.tasks[t]
                freed.append(Free(t, lo))
        if freed:
            self._changed(freed)
        for t, d in list(self.tasks.items()):
            if d.replica_of is not None and lo < d.start < hi and not self._born_with(d):
                # a replica starts on a batch boundary, where its primary's state is saved
                start = hi if d.end is None else min(hi, d.end)
                self.tasks[t] = replace(d, start=start)
                self.replica_log[t]["start"] = start
        self.frontier = max(self.frontier, hi)
        return self.snapshot()

    def _born_with(self, d: DeployedTask) -> bool:
        """Made with its primary, from no state: both start cold at the cut, so no seeding and
        no move. Moved, its start was batch timing a resume cannot re-enact: a driver killed
        before its first batch left no state, and the resumed replica ran cold (2026-11-29)."""
        p = self.tasks.get(d.replica_of or "")
        return (p is not None and p.start == d.start and p.takes_over is None
                and not p.absorbs)

    def resume_starts(self, saved: Mapping[str, int]) -> None:
        """Replicas re-enacted at their cuts take the starts a dead driver's claims gave them
        (``saved``: its last saved batch's); else one moved in that batch runs cold."""
        for t, start in ((t, int(s)) for t, s in saved.items()):
            d = self.tasks.get(t)
            if d is not None and d.replica_of is not None and start > d.start:
                self.tasks[t] = replace(d, start=start)
                self.replica_log[t]["start"] = start

    def snapshot(self) -> Epoch:
        parents = {t: [p for p in d.parents if p in self.tasks] for t, d in self.tasks.items()}
        order = parents_first(parents)
        shards: list[list[dict[str, Any]]] = [[] for _ in range(self.shards)]
        for t in order:
            shards[self.tasks[t].shard].append(self.tasks[t].spec())
        return Epoch(self.version, tuple(tuple(s) for s in shards))

    def rebalance(self) -> list[Action]:
        """One balancing move if it lowers the maximum shard load (see the module doc)."""
        actions = self._balance()
        actions += self._place_replicas()
        self._changed(actions)
        return actions

    def replicate(self, wanted: Iterable[str], k: int, at: int) -> list[Action]:
        """Make the live replicas match ``wanted`` (the live primaries to run ``k`` more times)
        from cut ``at``: start the missing replicas, end those of tasks no longer wanted (or
        ended), and keep every replica unit apart from its primaries (see the module doc).

        Checks everything before changing anything: ``wanted`` must be live primaries whose
        live parents are wanted too, and there must be ``k + 1`` shards.
        """
        self._check_cut(at, "replicate")
        want = set(wanted)
        if want and k + 1 > self.shards:
            raise SparkRuntimeError(f"k-safety K={k} needs K+1={k + 1} shards to keep the "
                                    f"replicas apart, but there are {self.shards}")
        for t in sorted(want):
            d = self.tasks.get(t)
            if d is None or d.end is not None or d.replica_of is not None:
                raise SparkRuntimeError("is not a live primary task to replicate", task=t)
            for p in d.parents:
                if p not in want:
                    raise SparkRuntimeError(f"is replicated but its parent {p} is not (the "
                                            "replicated tasks must be closed under parents)",
                                            task=t)
        live = {(d.replica_of, self.replica_log[t]["level"]): t for t, d in self.tasks.items()
                if d.replica_of is not None and d.end is None}
        actions: list[Action] = []
        for (of, _level), t in sorted(live.items()):
            if of not in want:
                d = self.tasks[t]
                end = max(at, d.start)
                self.tasks[t] = replace(d, end=end)
                self.replica_log[t]["end"] = end
                actions.append(End(t, end))
        order = parents_first({t: [p for p in self.tasks[t].parents if p in want]
                               for t in want})
        created: list[str] = []
        for level in range(1, k + 1):
            for t in order:
                if (t, level) in live:
                    r = live[(t, level)]
                    if self.tasks[r].record != self.tasks[t].record:  # a leaf became recorded
                        self.tasks[r] = replace(self.tasks[r], record=self.tasks[t].record)
                    continue
                d = self.tasks[t]
                rid = self._fresh(f"{t}{REPLICA_MARK}{level}")
                parents = tuple(live[(p, level)] for p in d.parents)
                self.tasks[rid] = DeployedTask(rid, d.type, d.config, parents, d.kind, -1, at,
                                               None, d.record, t)
                self.replica_log[rid] = {"of": t, "level": level, "start": at, "end": None}
                live[(t, level)] = rid
                created.append(rid)
        placed = self._place_replicas()
        actions += [Replicate(r, t, self.tasks[r].shard, at) for r in created
                    for t in [self.tasks[r].replica_of] if t is not None]
        actions += placed
        self._changed(actions)
        return actions

    def replicas(self) -> dict[str, list[str]]:
        """Live primary -> its live replicas (by level)."""
        out: dict[str, list[str]] = {}
        for t, d in sorted(self.tasks.items(), key=lambda x: x[0]):
            if d.replica_of is not None and d.end is None:
                out.setdefault(d.replica_of, []).append(t)
        return out

    # --- internals ---------------------------------------------------------------------------

    def _move(self, unit: set[str], dst: int) -> Move:
        src = self.tasks[next(iter(unit))].shard
        for x in unit:
            self.tasks[x] = replace(self.tasks[x], shard=dst)
        return Move(tuple(sorted(unit)), src, dst, self.frontier)

    def _is_replica_unit(self, unit: set[str]) -> bool:
        return any(self.tasks[x].replica_of is not None for x in unit)

    def _fresh(self, wanted: str) -> str:
        n, rid = 1, wanted
        while rid in self.tasks or rid in self.replica_log:
            n += 1
            rid = f"{wanted}~{n}"
        return rid

    def _place_replicas(self) -> list[Action]:
        """Put each replica unit in one shard that holds neither its primaries nor another
        level's replicas of them: it stays where it is when it may, else it goes to the least
        loaded allowed shard (a new unit: where most of it already is, if allowed)."""
        out: list[Action] = []
        units = [u for u in self.units() if self._is_replica_unit(u)]
        units.sort(key=lambda u: (min(self.replica_log[x]["level"] for x in u), min(u)))
        taken: dict[str, set[int]] = {}  # primary -> shards its copies sit in
        for t, d in self.tasks.items():
            if d.replica_of is None:
                taken.setdefault(t, set()).add(d.shard)
        loads = self.loads()
        for u in units:
            prims = {self.tasks[x].replica_of for x in u}
            banned = set().union(*(taken.get(p, set()) for p in prims if p is not None))
            shards = [self.tasks[x].shard for x in u if self.tasks[x].shard >= 0]
            allowed = [s for s in range(self.shards) if s not in banned]
            if not allowed:
                raise SparkRuntimeError(f"no shard is free of the copies of "
                                        f"{sorted(p for p in prims if p)[0]} "
                                        f"({self.shards} shards)")
            here = max(set(shards), key=lambda s: (shards.count(s), -s)) if shards else None
            if here is not None and here in allowed:
                dst = here
            else:
                dst = min(allowed, key=lambda s: (loads[s], s))
            moved = [x for x in u if self.tasks[x].shard not in (dst, -1)]
            for x in u:
                if self.tasks[x].shard != dst:
                    self.tasks[x] = replace(self.tasks[x], shard=dst)
            if moved:
                out.append(Move(tuple(sorted(moved)), shards[0] if shards else dst, dst,
                                self.frontier))
            for p in prims:
                if p is not None:
                    taken.setdefault(p, set()).add(dst)
        return out

    def _balance(self) -> list[Action]:
        if self.shards < 2:
            return []
        loads = self.loads()
        hi = max(range(self.shards), key=lambda s: (loads[s], -s))
        lo = min(range(self.shards), key=lambda s: (loads[s], s))
        best: tuple[float, set[str]] | None = None
        for u in self.units():
            if self.tasks[next(iter(u))].shard != hi or self._is_replica_unit(u):
                continue  # replicas are placed by the anti-affinity rule, not balanced
            w = sum(self._weight(self.tasks[x]) for x in u if self.tasks[x].end is None)
            new_max = max(loads[hi] - w, loads[lo] + w)
            # a move must lower the largest load by a clear margin, so that measured loads
            # that wobble do not send a unit back and forth
            if w > 0 and new_max < (1 - self.margin) * loads[hi] and (
                    best is None or new_max < best[0]):
                best = (new_max, u)
        if best is None:
            return []
        return [self._move(best[1], lo)]

    def _changed(self, actions: list[Action]) -> None:
        if actions:
            self.version += 1
            self.history += actions

    def as_dict(self) -> dict[str, Any]:
        """The whole deployment as JSON-able data (written beside the checkpoint)."""
        return {"version": self.version, "frontier": self.frontier, "shards": self.shards,
                "tasks": {t: {**d.spec(), "shard": d.shard} for t, d in self.tasks.items()}}

    def shard_of(self) -> Mapping[str, int]:
        return {t: d.shard for t, d in self.tasks.items()}
