"""Blast radius: how many dataflows lose output when one executor fails (issue 13, item 3).

Reuse runs one task for every dataflow that needs it (section 4 of the paper), so one failure
can now hit many users at once. This module measures that at the planner level, on the state
after each step of a trace (as ``reuse plan`` counts tasks), under three modes. No runtime runs:
the placement below is a model of the live shared-query engine, not a record of it.

The placement rule
------------------
``E`` executors; a *unit* is a group of tasks that must run whole on one executor, weighed by
its task count. Units are placed largest first, each onto the least loaded executor (ties: the
lowest executor index; units of equal size keep their order), the LPT rule of :func:`balance`.
Every step is placed afresh, so the numbers depend on the state and not on the trace's history.
The live engine places incrementally (a new unit onto the least loaded shard, at most one
rebalancing move per change), so its placement can differ; this is the balance it aims at.

Default
    each submitted dataflow runs its own tasks as one unit.
Reuse
    each running DAG (the image of ``Phi``) is one unit, as the shared-query engine keeps a
    connected group of deployed tasks in one shard (:mod:`reuse.runtime.engines.shared.deploy`).
Reuse + k-safety (``K``, ``U``)
    Reuse's placement, then every running task used by at least ``U`` submitted dataflows (the
    parameters of issue 13's live ``reuse run --k-safe K --replicate-min-users U``) gets ``K``
    more replicas: its primary stays with its running DAG and each replica goes to the least
    loaded executor not yet holding it (tasks in running-DAG order, then by id; every replica
    adds 1 to its executor's load). The other tasks stay with their running DAG. ``K + 1 > E``
    is an error: the replicas need ``K + 1`` distinct executors.

Reuse + k-safety across applications (``replicas="apps"``)
    issue 24's ``reuse run --k-safe K --replicas apps``: ``K + 1`` engine instances, each on
    executors of its own (instance ``j`` on executors ``e`` with ``e mod (K+1) = j``). The home
    instance places every running DAG as Reuse does, on its executors; each other instance
    places the replicated part of each running DAG (its tasks used by ``>= U`` dataflows) as
    one unit on its executors. A failed executor takes down what one instance ran there; a
    replicated task survives in the other instances.

The loss rule
-------------
Executor ``e`` fails. A task is lost when every one of its replicas was on ``e``; a dataflow
loses output when any task it uses is lost: under Default its own tasks, under Reuse the running
tasks it maps to (its sinks' ancestor tasks, the manager's signatures). The blast radius of a
step is ``max_e |lost(e)|`` (the worst case) and the mean over the ``E`` executors.

Under Default and Reuse every dataflow lives on exactly one executor, so the mean is
``|P_k| / E`` in both; what reuse changes is the worst case, since all the dataflows of a
running DAG fall together. k-safety saves a dataflow only if every task it uses is replicated: a
task of its own (used by fewer than ``U`` dataflows) runs only beside its running DAG's primary.
The cost of k-safety is ``K`` extra task instances per replicated task (``replicas_extra``).

Examples
--------
Three users submit the same two-task pipeline; ``E = 2``:

>>> from reuse.core.dataflow import parse_dataflow
>>> from reuse.core.traces import Op
>>> def pipe(name):
...     return parse_dataflow({"id": name, "tasks": [{"id": "src", "type": "SYS", "config": 1},
...         {"id": "out", "type": "Sink", "config": 1}], "streams": [["src", "out"]]})
>>> flows = {d: pipe(d) for d in "ABC"}
>>> last = blast_trace(flows, [Op("submit", d) for d in "ABC"], executors=2)[-1]
>>> last.default_worst, last.reuse_worst, last.ksafe_worst, last.replicas_extra
(2, 3, 0, 2)
>>> last.default_mean, last.reuse_mean   # |P| / E both: reuse concentrates, it does not add
(1.5, 1.5)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reuse.core.dataflow import Dataflow
from reuse.core.errors import ReuseError
from reuse.core.manager import Manager
from reuse.core.plan import PlanDelta
from reuse.core.planner import StepRecord, replay, write_table
from reuse.core.traces import Op

__all__ = ["MODES", "Snapshot", "Placement", "check_parameters", "replicated", "snapshot", "balance",
           "default_placement", "reuse_placement", "ksafe_placement", "apps_placement",
           "KSAFE_PLACEMENTS", "lost", "blast_radius",
           "BlastStep", "blast_step", "blast_trace", "BLAST_COLUMNS", "write_blast", "peaks"]

#: the three modes, in the order of the CSV columns and the figure
MODES = ("default", "reuse", "ksafe")

#: what a dataflow needs: dataflow id -> the ids of the tasks whose loss cuts its output
Uses = Mapping[str, frozenset[str]]


def check_parameters(executors: int, k: int, min_users: int) -> None:
    """Reject a model that cannot be placed, with one line naming the parameter.

    Examples
    --------
    >>> check_parameters(2, 2, 2)
    Traceback (most recent call last):
    ...
    reuse.core.errors.ReuseError: k-safety K=2 needs K+1=3 distinct executors for each replicated task, but there are only 2
    """
    for name, value, least in (("executors", executors, 1), ("K", k, 0),
                               ("min users U", min_users, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ReuseError(f"{name} must be an integer >= {least}, got {value!r}")
    if k + 1 > executors:
        raise ReuseError(f"k-safety K={k} needs K+1={k + 1} distinct executors for each "
                         f"replicated task, but there are only {executors}")


def replicated(users: Mapping[str, int], min_users: int) -> set[str]:
    """The tasks k-safety replicates: those used by at least ``U`` submitted dataflows. One
    rule for this model and for the live engine (:class:`reuse.runtime.engines.shared.engine.InplaceRuntime`).

    >>> sorted(replicated({"src": 3, "parse": 2, "sink": 1}, 2))
    ['parse', 'src']
    """
    return {t for t, n in users.items() if n >= min_users}


@dataclass(frozen=True)
class Snapshot:
    """The system after one step, as the placement needs it (plain data, no manager).

    ``dataflows``: each submitted dataflow's own task ids (what Default runs), in submission
    order; ``running``: each running DAG's tasks, in running-DAG order; ``users``: each running
    task's submitted dataflows (``|users|`` is its reuse count).
    """

    dataflows: Mapping[str, tuple[str, ...]]
    running: Mapping[str, tuple[str, ...]]
    users: Mapping[str, frozenset[str]]

    def reuse_uses(self) -> dict[str, frozenset[str]]:
        """Each dataflow's running tasks: the inverse of ``users``."""
        out: dict[str, set[str]] = {d: set() for d in self.dataflows}
        for task, dags in self.users.items():
            for d in dags:
                out[d].add(task)
        return {d: frozenset(ts) for d, ts in out.items()}


def snapshot(manager: Manager) -> Snapshot:
    """Read a :class:`Snapshot` off the manager's current state."""
    return Snapshot(
        {d: tuple(t.id for t in f.tasks) for d, f in manager.submitted.items()},
        {rd.id: rd.tasks for rd in manager.running_dags()},
        {t.id: manager.users(t.id) for t in manager.running_tasks()})


@dataclass(frozen=True)
class Placement:
    """Where each task runs: task id -> the distinct executors holding one of its replicas."""

    executors: int
    replicas: Mapping[str, tuple[int, ...]]

    def loads(self) -> list[int]:
        """Task instances per executor."""
        out = [0] * self.executors
        for held in self.replicas.values():
            for e in held:
                out[e] += 1
        return out

    @property
    def extra(self) -> int:
        """Task instances beyond one per task: what replication costs."""
        return sum(len(held) - 1 for held in self.replicas.values())


def balance(units: Iterable[tuple[str, int]], executors: int) -> dict[str, int]:
    """LPT: place ``(unit, size)`` pairs largest first, each on the least loaded executor.

    Ties go to the lowest executor index; units of equal size keep their input order, so the
    result is deterministic.

    Examples
    --------
    >>> balance([("a", 1), ("b", 3), ("c", 2), ("d", 2)], 2)
    {'b': 0, 'c': 1, 'd': 1, 'a': 0}
    """
    load = [0] * executors
    out: dict[str, int] = {}
    for unit, size in sorted(units, key=lambda u: -u[1]):
        e = min(range(executors), key=lambda i: (load[i], i))
        out[unit] = e
        load[e] += size
    return out


def _whole(units: Mapping[str, tuple[str, ...]], executors: int,
           name: Callable[[str, str], str] = lambda unit, task: task,
           ) -> dict[str, tuple[int, ...]]:
    """Each unit placed whole (:func:`balance`): its tasks' single executor, by task id."""
    where = balance(((u, len(ts)) for u, ts in units.items()), executors)
    return {name(u, t): (where[u],) for u, ts in units.items() for t in ts}


def default_placement(state: Snapshot, executors: int) -> tuple[Placement, Uses]:
    """Default: every dataflow's own tasks as one unit (task ids ``<dag>/<task>``)."""
    replicas = _whole(state.dataflows, executors, lambda d, t: f"{d}/{t}")
    uses = {d: frozenset(f"{d}/{t}" for t in ts) for d, ts in state.dataflows.items()}
    return Placement(executors, replicas), uses


def reuse_placement(state: Snapshot, executors: int) -> tuple[Placement, Uses]:
    """Reuse: every running DAG as one unit; a dataflow uses the running tasks it maps to."""
    return Placement(executors, _whole(state.running, executors)), state.reuse_uses()


def ksafe_placement(state: Snapshot, executors: int, k: int, min_users: int,
                    ) -> tuple[Placement, Uses]:
    """Reuse's placement, with ``K`` more replicas of every task used by ``>= U`` dataflows.

    Each replica goes to the least loaded executor that holds no replica of the task yet
    (ties: lowest index), counting the replicas placed before it.
    """
    check_parameters(executors, k, min_users)
    base, uses = reuse_placement(state, executors)
    replicas = dict(base.replicas)
    load = base.loads()
    chosen = replicated({t: len(u) for t, u in state.users.items()}, min_users)
    for tasks in state.running.values():
        for task in sorted(tasks):
            if task not in chosen:
                continue
            held = list(replicas[task])
            for _ in range(k):
                e = min((i for i in range(executors) if i not in held),
                        key=lambda i: (load[i], i))
                held.append(e)
                load[e] += 1
            replicas[task] = tuple(held)
    return Placement(executors, replicas), uses


def apps_placement(state: Snapshot, executors: int, k: int, min_users: int,
                   ) -> tuple[Placement, Uses]:
    """k-safety across applications: ``K + 1`` instances on disjoint executors, the home with
    every running DAG, the others with the replicated part of each (see the module docstring).

    >>> st = Snapshot({"A": ("s", "a"), "B": ("s", "b")}, {"r": ("s", "a", "b")},
    ...               {"s": frozenset("AB"), "a": frozenset("A"), "b": frozenset("B")})
    >>> p, uses = apps_placement(st, 4, 1, 2)
    >>> dict(p.replicas), sorted(lost(p, uses, 0)), sorted(lost(p, uses, 1))
    ({'s': (0, 1), 'a': (0,), 'b': (0,)}, ['A', 'B'], [])
    """
    check_parameters(executors, k, min_users)
    chosen = replicated({t: len(u) for t, u in state.users.items()}, min_users)
    replicas: dict[str, list[int]] = {}
    for j in range(k + 1):
        own = [e for e in range(executors) if e % (k + 1) == j]
        units = {rd: tuple(t for t in ts if j == 0 or t in chosen)
                 for rd, ts in state.running.items()}
        for task, (e,) in _whole({u: ts for u, ts in units.items() if ts}, len(own)).items():
            replicas.setdefault(task, []).append(own[e])
    return (Placement(executors, {t: tuple(h) for t, h in replicas.items()}),
            state.reuse_uses())


def lost(placement: Placement, uses: Uses, executor: int) -> frozenset[str]:
    """The dataflows that lose output when ``executor`` fails: those using a task every
    replica of which was there.

    Examples
    --------
    >>> p = Placement(2, {"s": (0, 1), "a": (0,), "b": (1,)})
    >>> sorted(lost(p, {"A": frozenset("sa"), "B": frozenset("sb"), "S": frozenset("s")}, 0))
    ['A']
    """
    gone = {t for t, held in placement.replicas.items() if set(held) == {executor}}
    return frozenset(d for d, ts in uses.items() if not ts.isdisjoint(gone))


def blast_radius(placement: Placement, uses: Uses) -> tuple[int, float]:
    """``(worst, mean)`` of ``|lost(e)|`` over the executors ``e``."""
    sizes = [len(lost(placement, uses, e)) for e in range(placement.executors)]
    return max(sizes), sum(sizes) / len(sizes)


BLAST_COLUMNS = ["step", "op", "dag", "submitted", "default_worst", "default_mean",
                 "reuse_worst", "reuse_mean", "ksafe_worst", "ksafe_mean", "replicas_extra"]


@dataclass(frozen=True)
class BlastStep:
    """The blast radius of each mode after one step, and what k-safety's replicas cost."""

    step: int
    op: str
    dag: str
    submitted: int
    default_worst: int
    default_mean: float
    reuse_worst: int
    reuse_mean: float
    ksafe_worst: int
    ksafe_mean: float
    replicas_extra: int

    def worst(self, mode: str) -> int:
        """The worst case of ``mode`` (one of :data:`MODES`)."""
        return int(getattr(self, f"{mode}_worst"))

    def row(self) -> dict[str, Any]:
        return {c: round(v, 4) if isinstance(v, float) else v
                for c, v in ((c, getattr(self, c)) for c in BLAST_COLUMNS)}


#: where k-safety's copies run: placement per ``replicas`` choice (``reuse run --replicas``)
KSAFE_PLACEMENTS = {"shards": ksafe_placement, "apps": apps_placement}


def blast_step(state: Snapshot, executors: int, k: int = 1, min_users: int = 2, *,
               step: int = 0, op: str = "", dag: str = "",
               replicas: str = "shards") -> BlastStep:
    """Place ``state`` in the three modes and measure each one's blast radius (``replicas``:
    k-safety's copies in other shards of one query, or in other applications)."""
    ksafe, ksafe_uses = KSAFE_PLACEMENTS[replicas](state, executors, k, min_users)
    return BlastStep(step, op, dag, len(state.dataflows),
                     *blast_radius(*default_placement(state, executors)),
                     *blast_radius(*reuse_placement(state, executors)),
                     *blast_radius(ksafe, ksafe_uses), ksafe.extra)


def blast_trace(flows: Mapping[str, Dataflow], ops: Sequence[Op], executors: int, k: int = 1,
                min_users: int = 2, *, check: bool = False,
                replicas: str = "shards") -> list[BlastStep]:
    """Replay ``ops`` (:func:`reuse.core.planner.replay`) and measure every step's blast radius.

    The parameters are checked before the first operation.
    """
    check_parameters(executors, k, min_users)
    if replicas not in KSAFE_PLACEMENTS:
        raise ReuseError(f"replicas must be one of {', '.join(KSAFE_PLACEMENTS)}, got "
                         f"{replicas!r}")
    manager = Manager()
    out: list[BlastStep] = []

    def measure(rec: StepRecord, _delta: PlanDelta) -> None:
        out.append(blast_step(snapshot(manager), executors, k, min_users, step=rec.step,
                              op=rec.op, dag=rec.dag, replicas=replicas))

    replay(flows, ops, check=check, manager=manager, on_step=measure)
    return out


def write_blast(steps: Iterable[BlastStep], path: str | Path) -> None:
    """Write one CSV row per step (:data:`BLAST_COLUMNS`), atomically."""
    write_table(path, BLAST_COLUMNS, (s.row() for s in steps))


def peaks(steps: Sequence[BlastStep]) -> dict[str, Any]:
    """The trace at a glance: per mode the largest worst case and its mean over steps, and the
    replicas' cost (largest and mean).

    Examples
    --------
    >>> s = [BlastStep(1, "submit", "A", 1, 1, 0.5, 1, 0.5, 0, 0.0, 2),
    ...      BlastStep(2, "submit", "B", 2, 1, 1.0, 2, 1.0, 1, 0.5, 2)]
    >>> peaks(s)["reuse_peak"], peaks(s)["ksafe_mean_worst"], peaks(s)["replicas_extra_peak"]
    (2, 0.5, 2)
    """
    n = len(steps)
    out: dict[str, Any] = {"steps": n, "peak_submitted": max((s.submitted for s in steps),
                                                             default=0)}
    for mode in MODES:
        worst = [s.worst(mode) for s in steps]
        out[f"{mode}_peak"] = max(worst, default=0)
        out[f"{mode}_mean_worst"] = sum(worst) / n if n else 0.0
    extra = [s.replicas_extra for s in steps]
    out["replicas_extra_peak"] = max(extra, default=0)
    out["replicas_extra_mean"] = sum(extra) / n if n else 0.0
    return out
