"""The visualizer's model: a trace replayed once into per-step snapshots (plain data, no drawing).

The widget, the SVG and the static PNG all draw from what this module returns, so everything a
user sees can be checked by unit tests without a kernel or a browser. :class:`Timeline` replays a
trace through a :class:`~reuse.core.manager.Manager` and keeps, for every step, a :class:`Snapshot`:
the running DAGs, every running task with its type, config, users (the submitted DAGs it serves,
whose number is its reuse count), the step's :class:`~reuse.core.plan.PlanDelta`, and the tasks that
step stopped. Stopped tasks are kept in the snapshot of the step that stopped them (with their
last users and running DAG) so the picture can show what went away; a runtime that pauses
instead of stopping (the paper's Storm binding) says so with ``paused``.

Under a policy with containment (``Timeline(..., match=SEMANTIC)``, issue 25) a narrow task may
run as a *residual* behind a running wider one (:meth:`Manager.rewrites`). Its view says which
wide task it reads and by which rule (``residual_of``), and the wide task's view names the
dataflows that read it through a residual (``residual_users``): they are among its users, which
is why it outlives its owner. The pictures draw a residual with a dashed outline.

The layout (:func:`reuse.viz.layout.render_data`) turns a snapshot into a
:class:`~reuse.viz.layout.SceneData`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reuse.core.dataflow import Dataflow
from reuse.core.manager import Manager, RunningDag
from reuse.core.matching import EXACT, MatchPolicy
from reuse.core.plan import PlanDelta
from reuse.core.planner import StepRecord, replay
from reuse.core.traces import Op

__all__ = ["TaskView", "Snapshot", "Timeline", "TASK_STATES"]

#: Task states, in legend order. ``new``: started at this step; ``reused``: serves two or more
#: submitted DAGs; ``running``: serves one; ``stopped``/``paused``: taken down at this step.
TASK_STATES = ("new", "running", "reused", "stopped", "paused")


@dataclass(frozen=True)
class TaskView:
    """One task as the visualizer shows it (running, or taken down at this step).

    ``reused_now`` marks tasks that this step's submission reused (``PlanDelta.reused``), which
    the pictures outline, so the reuse decision of a step is visible even for a task that already
    served several DAGs. ``residual_of`` is ``(wide task, rule)`` for a residual task (empty
    otherwise); ``residual_users`` are the dataflows that read this task through a residual.
    """

    id: str
    type: str
    config: Any
    parents: tuple[str, ...]
    users: tuple[str, ...]
    running_dag: str
    state: str
    reused_now: bool = False
    residual_of: tuple[str, str] | tuple[()] = ()
    residual_users: tuple[str, ...] = ()

    @property
    def residual(self) -> bool:
        """Whether the task is a residual: a narrow task reading a running wider one."""
        return bool(self.residual_of)

    @property
    def reuse_count(self) -> int:
        """How many submitted DAGs the task serves (for a stopped task: served before the step)."""
        return len(self.users)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, for the details panel and for tests."""
        return {"id": self.id, "type": self.type, "config": self.config,
                "parents": list(self.parents), "users": list(self.users),
                "reuse_count": self.reuse_count, "running_dag": self.running_dag,
                "state": self.state, "reused_now": self.reused_now,
                "residual_of": list(self.residual_of),
                "residual_users": list(self.residual_users)}


@dataclass(frozen=True)
class Snapshot:
    """The system right after one step (step 0: before the first operation, nothing runs).

    ``tasks`` holds the running tasks and, after a removal, the tasks it stopped (state
    ``stopped`` or ``paused``); ``running_dags`` are the manager's running DAGs after the step.
    ``submitted`` maps each submitted DAG to its running DAG (``Phi``), in submission order, and
    ``mapping`` each submitted DAG's task to the running task computing it.
    """

    step: int
    op: Op | None
    delta: PlanDelta | None
    tasks: Mapping[str, TaskView]
    running_dags: tuple[RunningDag, ...]
    submitted: Mapping[str, str]
    record: StepRecord | None = None
    stopped: tuple[str, ...] = field(default=())
    mapping: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """``step k/n``-free headline: the operation, or ``start`` for step 0."""
        return "start (nothing submitted)" if self.op is None else f"{self.op.op} {self.op.dag}"

    @property
    def summary(self) -> str:
        """The delta's one-line summary (empty at step 0)."""
        return self.delta.summary() if self.delta is not None else ""

    def task(self, task_id: str) -> TaskView:
        return self.tasks[task_id]

    def details(self, task_id: str) -> dict[str, Any]:
        """What the details panel shows for a task: type, config, users, reuse count, DAG."""
        return self.tasks[task_id].to_dict()


class Timeline(Sequence[Snapshot]):
    """A trace replayed once; ``timeline[k]`` is the snapshot after step ``k`` (0 = empty).

    Replaying once up front (rather than on every slider move) keeps the widget responsive and
    makes stepping backwards free; the cost is one snapshot per step, which is small next to the
    workloads here (a few hundred tasks at most).

    Parameters
    ----------
    flows
        The dataflows the trace refers to, by id.
    ops
        The trace (checked before anything runs, see :func:`reuse.core.traces.check_trace`).
    paused
        Optional ``step -> task ids`` a runtime paused rather than stopped at that step; those
        tasks are shown as ``paused``. Running tasks listed there are shown paused as well.
    check
        Check the manager's invariants after each step (slower; the planner tests do that).
    match
        The manager's match policy (the flows must be de-dup under it); with containment,
        residual tasks are marked (see the module docstring).

    Examples
    --------
    >>> from reuse.core.dataflow import parse_dataflow
    >>> from reuse.core.traces import Op
    >>> def chain(name, *types):
    ...     ids = [f"t{i}" for i in range(len(types))]
    ...     return parse_dataflow({"id": name,
    ...         "tasks": [{"id": i, "type": t, "config": {}} for i, t in zip(ids, types)],
    ...         "streams": [[a, b] for a, b in zip(ids, ids[1:])]})
    >>> flows = {"A": chain("A", "S", "P", "X"), "B": chain("B", "S", "P", "Y")}
    >>> tl = Timeline(flows, [Op("submit", "A"), Op("submit", "B"), Op("remove", "A")])
    >>> len(tl), tl[2].tasks["A.t1"].reuse_count, tl[2].tasks["A.t1"].state
    (4, 2, 'reused')
    >>> tl[3].tasks["A.t2"].state
    'stopped'
    """

    def __init__(self, flows: Mapping[str, Dataflow], ops: Sequence[Op], *,
                 paused: Mapping[int, Iterable[str]] | None = None, check: bool = False,
                 match: MatchPolicy = EXACT) -> None:
        self.flows = dict(flows)
        self.ops = list(ops)
        paused_sets = {int(k): frozenset(v) for k, v in (paused or {}).items()}
        manager = Manager(match=match)
        self._snaps: list[Snapshot] = [Snapshot(0, None, None, {}, (), {})]

        def on_step(rec: StepRecord, delta: PlanDelta) -> None:
            prev = self._snaps[-1]
            snap = _snapshot(manager, rec, delta, self.ops[rec.step - 1], prev,
                             paused_sets.get(rec.step, frozenset()))
            self._snaps.append(snap)

        replay(self.flows, self.ops, check=check, manager=manager, on_step=on_step)

    def __len__(self) -> int:
        return len(self._snaps)

    def __getitem__(self, step: Any) -> Any:
        return self._snaps[step]

    @property
    def steps(self) -> int:
        """Number of operations (the last valid index)."""
        return len(self._snaps) - 1


def _snapshot(m: Manager, rec: StepRecord, delta: PlanDelta, op: Op, prev: Snapshot,
              paused: frozenset[str]) -> Snapshot:
    """Read the manager right after one step into a :class:`Snapshot`."""
    dags = tuple(m.running_dags())
    group = {t: d.id for d in dags for t in d.tasks}
    started = {t.id for t in delta.start}
    reused_now = set(delta.reused)
    residual_of, readers = _residuals(m)
    tasks: dict[str, TaskView] = {}
    for t in sorted(m.running_tasks(), key=lambda t: t.id):
        users = tuple(sorted(m.users(t.id)))
        if t.id in paused:
            state = "paused"
        elif t.id in started:
            state = "new"
        else:
            state = "reused" if len(users) > 1 else "running"
        tasks[t.id] = TaskView(t.id, t.type, t.config, t.parents, users, group[t.id], state,
                               t.id in reused_now, residual_of.get(t.id, ()),
                               tuple(sorted(readers.get(t.id, ()))))
    for tid in reversed(delta.stop):  # delta.stop is children first; parents first here
        old = prev.tasks[tid]
        tasks[tid] = TaskView(tid, old.type, old.config, old.parents, old.users,
                              _stopped_home(old, tasks, delta),
                              "paused" if tid in paused else "stopped",
                              residual_of=old.residual_of, residual_users=old.residual_users)
    submitted = {d: m.phi(d) for d in m.submitted}
    mapping = {d: {t: m.running_id(d, t) for t in flow.order} for d, flow in m.submitted.items()}
    return Snapshot(rec.step, op, delta, tasks, dags, submitted, rec, tuple(delta.stop), mapping)


def _residuals(m: Manager) -> tuple[dict[str, tuple[str, str]], dict[str, set[str]]]:
    """Residual task -> (wide task, rule), and wide task -> the dataflows reading it through a
    residual, from every submitted dataflow's containment steps (running ids)."""
    residual_of: dict[str, tuple[str, str]] = {}
    readers: dict[str, set[str]] = {}
    for dag in m.submitted:
        for r in m.rewrites(dag):
            wide = m.running_id(dag, r.via)
            residual_of[m.running_id(dag, r.task)] = (wide, r.rule)
            readers.setdefault(wide, set()).add(dag)
    return residual_of, readers


def _stopped_home(task: TaskView, placed: Mapping[str, TaskView], delta: PlanDelta) -> str:
    """The running DAG a stopped task is drawn in: its first parent's, else the removed DAG's.

    Following a parent keeps a stopped branch next to the task it hung from even when the
    removal split the running DAG; a whole stopped DAG keeps its old id.
    """
    for p in task.parents:
        if p in placed:
            return placed[p].running_dag
    return delta.running_dag or "removed"
