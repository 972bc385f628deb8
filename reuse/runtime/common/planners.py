"""Planners: what a submit or remove means in runtime tasks, for Reuse and for Default alike.

A live engine does not care whether tasks are shared; it starts tasks, ends tasks and keeps the
tasks that must stay together (a running DAG) together. The planner is where the two modes
differ:

- :class:`ReusePlanner` merges through :class:`~reuse.core.manager.Manager` (Section 4 of the paper):
  a submit starts only the tasks ``T_x`` with no running equivalent and reuses the rest; a remove
  stops the tasks ``T_t`` nobody else needs; a running DAG is a group.
- :class:`DefaultPlanner` runs every submitted dataflow on its own, sources included (the
  paper's baseline): every task is started, every task of the dataflow is stopped, and each
  dataflow is its own group.

Runtime task ids are never used twice in a run. The manager may give a new task the id of one
that has gone, and a random walk may submit a dataflow again after removing it; the runtime
keeps ended tasks (their outputs are accounted after the run), so a clash gets ``~2``, ``~3``...
Each submission is an *incarnation*: ``dag`` for the first, ``dag~2`` for the next, and so on.

Nothing here imports Spark; planners are tested on their own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from reuse.core.dataflow import Dataflow, fresh_id
from reuse.core.manager import Manager
from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import task_kind

__all__ = ["NewTask", "Placement", "Removal", "Planner", "ReusePlanner", "DefaultPlanner",
           "make_planner", "unused", "source_stream", "private_stream", "stream_events_name"]


@dataclass(frozen=True)
class NewTask:
    """A task a submit starts, in runtime ids (``kind``: source, sink or task)."""

    id: str
    type: str
    config: Any = field(compare=False)
    parents: tuple[str, ...] = ()
    kind: str = "task"

    @property
    def stream(self) -> str:
        """A source's stream name: its type, or type plus config when the config is not the
        plain ``"source"`` (two differently configured sources are different streams)."""
        return source_stream(self.type, self.config)


@dataclass(frozen=True)
class Placement:
    """What a submit asks of the engine."""

    dag: str
    instance: str
    start: tuple[NewTask, ...]
    reused: tuple[str, ...]
    sinks: Mapping[str, str]


@dataclass(frozen=True)
class Removal:
    """What a remove asks of the engine: end ``stop`` (runtime ids) at the cut ``R``.

    Under containment a remove may re-plan other dataflows (:mod:`reuse.core.replan`): then it
    also starts ``start`` at the same cut (from ``R`` on), each started task continuing the
    stream and state of the task ``handover`` names (started -> the task it continues), and
    ``sinks`` gives each re-planned incarnation's sinks from ``R`` on (incarnation -> sink ->
    runtime id; before ``R`` its submit's sinks hold). A started window task that was a
    stateful residual also adds the state at ``R`` of the wide tasks ``absorbs`` names
    (started -> wide tasks, :attr:`reuse.core.plan.PlanDelta.absorbs`). All empty: the
    paper's unmerge. Only the shared engine enacts them; :func:`make_planner` turns re-plans
    on for it alone.
    """

    dag: str
    instance: str
    stop: tuple[str, ...]
    start: tuple[NewTask, ...] = ()
    handover: Mapping[str, str] = field(default_factory=dict)
    sinks: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    absorbs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def source_stream(type_name: str, config: Any) -> str:
    """Stream name of a source task.

    Examples
    --------
    >>> source_stream("SYS", "source"), source_stream("S", {"n": 1})
    ('SYS', 'S~{"n": 1}')
    """
    import json

    if config == "source":
        return type_name
    return f"{type_name}~{json.dumps(config, sort_keys=True)}"


#: separates a source stream's name from the owner of a private replay of it
PRIVATE_MARK = "@own:"


def private_stream(stream: str, owner: str) -> str:
    """The name of ``owner``'s own replay of ``stream`` (Default's private sources): a topic of
    its own, carrying the same events as the shared stream.

    >>> private_stream("SYS", "etl-sys.src"), stream_events_name("SYS@own:etl-sys.src")
    ('SYS@own:etl-sys.src', 'SYS')
    """
    return f"{stream}{PRIVATE_MARK}{owner}"


def stream_events_name(name: str) -> str:
    """The source stream whose events a (possibly private) stream name carries: a private
    replay emits exactly the shared stream's events, so outputs do not depend on whose replay
    a task reads."""
    return name.split(PRIVATE_MARK, 1)[0]


def unused(wanted: str, taken: Container[str]) -> str:
    """``wanted``, or ``wanted~2``, ``~3``... whichever is first not ``taken``.

    >>> unused("a", {"a", "a~2"})
    'a~3'
    """
    return fresh_id(wanted, taken, sep="~")


class Planner(ABC):
    """Decides what a submit or remove means in runtime tasks; one subclass per mode."""

    #: whether equivalent tasks of different dataflows run once
    shares: bool = False

    def __init__(self) -> None:
        self.instances: dict[str, str] = {}  # present dag id -> its incarnation
        self.seen_instances: set[str] = set()
        self.taken: set[str] = set()  # every runtime task id ever started

    def present(self) -> list[str]:
        return list(self.instances)

    def _incarnation(self, dag_id: str) -> str:
        if dag_id in self.instances:
            raise SparkRuntimeError("is already submitted", dag=dag_id)
        return unused(dag_id, self.seen_instances)

    def _claim(self, dag_id: str, inst: str, start: list[NewTask]) -> None:
        self.instances[dag_id] = inst
        self.seen_instances.add(inst)
        self.taken.update(t.id for t in start)

    def _instance_of(self, dag_id: str) -> str:
        if dag_id not in self.instances:
            raise SparkRuntimeError("is not submitted", dag=dag_id)
        return self.instances[dag_id]

    @abstractmethod
    def submit(self, flow: Dataflow) -> Placement:
        """Plan a submit; raises (changing nothing) on a DAG that is already present."""

    @abstractmethod
    def remove(self, dag_id: str) -> Removal:
        """Plan a remove; raises (changing nothing) on a DAG that is not present."""

    @abstractmethod
    def groups(self) -> list[tuple[str, ...]]:
        """The live runtime tasks that must run together (one running DAG each)."""

    @abstractmethod
    def users(self) -> dict[str, int]:
        """Live runtime task -> how many submitted dataflows use it (its reuse count), which
        decides what k-safety replicates."""


class ReusePlanner(Planner):
    """Reuse: merge and unmerge through the manager (the paper's Sections 4.1-4.2)."""

    shares = True

    def __init__(self, manager: Manager | None = None) -> None:
        super().__init__()
        self.manager = manager or Manager()
        self._rid: dict[str, str] = {}  # manager task id -> runtime task id

    def rid(self, manager_id: str) -> str:
        """The runtime id of a running task of the manager."""
        return self._rid.get(manager_id, manager_id)

    def submit(self, flow: Dataflow) -> Placement:
        inst = self._incarnation(flow.id)
        delta = self.manager.submit(flow)
        taken = set(self.taken)
        for t in delta.start:
            self._rid[t.id] = unused(t.id, taken)
            taken.add(self._rid[t.id])
        start = [NewTask(self._rid[t.id], t.type, t.config, tuple(self.rid(p) for p in t.parents),
                         task_kind(t.type, t.config)) for t in delta.start]
        self._claim(flow.id, inst, start)
        return Placement(flow.id, inst, tuple(start), tuple(self.rid(r) for r in delta.reused),
                         {s: self.rid(r) for s, r in delta.sinks.items()})

    def remove(self, dag_id: str) -> Removal:
        inst = self._instance_of(dag_id)
        delta = self.manager.remove(dag_id)
        del self.instances[dag_id]
        stop = tuple(self.rid(t) for t in delta.stop)
        handover = {t: self.rid(old) for t, old in delta.handover.items()}
        absorbs = {t: tuple(self.rid(w) for w in ws) for t, ws in delta.absorbs.items()}
        taken = set(self.taken)
        for t in delta.start:  # a re-plan's tasks (issue 36): new runtime ids, as on submit
            self._rid[t.id] = unused(t.id, taken)
            taken.add(self._rid[t.id])
        start = tuple(NewTask(self._rid[t.id], t.type, t.config,
                              tuple(self.rid(p) for p in t.parents), task_kind(t.type, t.config))
                      for t in delta.start)
        self.taken.update(t.id for t in start)
        sinks = {self.instances[d]: {s: self.rid(r) for s, r in m.items()}
                 for d, m in delta.replanned.items()}
        return Removal(dag_id, inst, stop, start,
                       {self._rid[t]: old for t, old in handover.items()}, sinks,
                       {self._rid[t]: ws for t, ws in absorbs.items()})

    def groups(self) -> list[tuple[str, ...]]:
        return [tuple(self.rid(t) for t in rd.tasks) for rd in self.manager.running_dags()]

    def users(self) -> dict[str, int]:
        return {self.rid(t): n for t, n in self.manager.reuse_counts().items()}


class DefaultPlanner(Planner):
    """Default: every submitted dataflow runs alone, its own sources included.

    Task ids are ``<incarnation>.<task>``, so a DAG submitted again gets fresh ones.
    """

    shares = False

    def __init__(self) -> None:
        super().__init__()
        self._tasks: dict[str, tuple[str, ...]] = {}  # incarnation -> its runtime tasks

    def submit(self, flow: Dataflow) -> Placement:
        inst = self._incarnation(flow.id)
        start = []
        for t in flow.order:
            task = flow.task(t)
            start.append(NewTask(f"{inst}.{t}", task.type, task.config,
                                 tuple(f"{inst}.{p}" for p in flow.parents[t]),
                                 task_kind(task.type, task.config)))
        self._claim(flow.id, inst, start)
        self._tasks[inst] = tuple(t.id for t in start)
        return Placement(flow.id, inst, tuple(start), (),
                         {s: f"{inst}.{s}" for s in flow.sinks})

    def remove(self, dag_id: str) -> Removal:
        inst = self._instance_of(dag_id)
        del self.instances[dag_id]
        return Removal(dag_id, inst, self._tasks.pop(inst))

    def groups(self) -> list[tuple[str, ...]]:
        return [self._tasks[inst] for inst in self.instances.values()]

    def users(self) -> dict[str, int]:
        return {t: 1 for inst in self.instances.values() for t in self._tasks[inst]}


def make_planner(shares: bool, match: str = "exact", *, replan: bool = False) -> Planner:
    """The planner of a mode: :class:`ReusePlanner` when tasks are shared, else Default's.

    ``replan``: whether a remove may re-plan the dataflows left holding an unowned wide task
    (issue 36, :mod:`reuse.core.replan`). Off unless the engine enacts a re-plan's hand-over
    (:class:`Removal`'s ``start``, ``handover``, ``absorbs`` and ``sinks``): only the shared
    engine, unsplit, does. An engine that ignored them would lose the re-planned dataflows'
    outputs from the cut on, so off is the safe default; the price is that containment may
    then run more tasks than exact after a wide dataflow leaves.

    ``match`` names the match policy Reuse merges by (:data:`reuse.tasks.matching.MATCH_POLICIES`:
    ``exact``, the paper's, or ``semantic``, issue 25). Default shares nothing, so any policy but
    ``exact`` is refused there rather than silently meaning nothing: a one-line error before a
    session starts.

    >>> make_planner(True, "semantic").manager.match.name
    'semantic'
    >>> make_planner(False, "semantic")
    Traceback (most recent call last):
    ...
    reuse.runtime.SparkRuntimeError: --match semantic needs --mode reuse: Default shares no task
    """
    from reuse.tasks.matching import match_policy

    if not shares:
        if match != "exact":
            raise SparkRuntimeError(f"--match {match} needs --mode reuse: Default shares no task")
        return DefaultPlanner()
    return ReusePlanner(Manager(match=match_policy(match), replan=replan))
