"""Shared predicate evaluation in the shard worker (issue 25, item 4): many filters, one pass.

Many tenants put their own filter on one stream: one ``RangeFilter`` each, with their own
thresholds, reading the same parser. Run as separate tasks, each merges and sorts its parents'
events, then calls its ``process`` once per event, and the engine's per-task cost is paid once
per tenant. AStream's answer is one pass that tags each event with the set of queries it
passes. Here a *predicate group* is the stateless filter tasks of one fusable type (the type
declares :meth:`reuse.tasks.base.Task.fuse`, next to its code) that read exactly the same
parents, in the same order, in one shard's task list. :func:`predicate_groups` decides the
groups from that list alone (plain data, no task built); :func:`run_group` runs one: the
parents merged and sorted once, every member's predicate evaluated over the events of the
union of the members' windows in one pass (:class:`reuse.tasks.base.Predicates`: a bitmap per
member), then each member takes the events of its own window that it passes. Outputs are the
very event objects, in the same order, that the members' own ``process`` calls give (a member
that rewrites a rejected event, a ``null``-mode ``RangeFilter``, still calls its ``process``
for those), so sinks, counts and every downstream task see exactly what they see unfused.

Why at execution and not in the planner: the group is how a shard runs tasks in one batch, not
what runs. The logical tasks (their ids, users, windows, the merge and unmerge of dataflows,
the containment rewrites) are the planner's and do not change, so a tenant's bill, the running
task counts of Figures 2-4 and the reference execution stay those of the logical tasks; a
member submitted or removed changes the next batch's groups and nothing else. The executed
groups are reported beside the logical tasks (``run_shard``'s ``groups``), not instead of them.
Each member is billed a share of the group's CPU in proportion to the events it took (evenly
when none took any), so the shares sum to the group's work.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar, cast

from reuse.core.errors import ReuseError
from reuse.tasks.base import Event, Predicates, Task

if TYPE_CHECKING:
    from reuse.tasks.columnar.filters import Selectors

__all__ = ["PredicateGroup", "TaskGroup", "fusable_type", "predicate_groups", "compiled", "run_group",
           "split_cpu", "fused_kernel", "compiled_selectors"]

_SEQ = itemgetter("seq")


@dataclass(frozen=True)
class TaskGroup:
    """Tasks of one type reading the same parents, run in one pass: the members, in the
    shard's task order, two or more and distinct (a group of one runs as the task itself).
    What a group runs is its subclass's: :class:`PredicateGroup` here, and
    :class:`~reuse.runtime.common.window_groups.WindowGroup`."""

    type: str
    parents: tuple[str, ...]
    members: tuple[str, ...]

    #: what the group is called in its error
    kind: ClassVar[str] = "task group"

    def __post_init__(self) -> None:
        if len(self.members) < 2 or len(set(self.members)) != len(self.members):
            raise ReuseError(f"{self.kind} of {self.type} over {list(self.parents)} needs "
                             f"two or more distinct members, got {list(self.members)}")


@dataclass(frozen=True)
class PredicateGroup(TaskGroup):
    """Filter tasks of one type reading the same parents, run in one pass."""

    kind: ClassVar[str] = "predicate group"


def fusable_type(type_name: str) -> type[Task] | None:
    """The class of a task type whose tasks may join a group: stateless and ``fusable``.

    >>> fusable_type("RangeFilter").__name__, fusable_type("KalmanFilter"), fusable_type("X")
    ('RangeFilter', None, None)
    """
    from reuse.tasks import TASK_TYPES

    cls = TASK_TYPES.get(type_name)
    if cls is None or cls.stateful or not cls.fusable:
        return None
    return cls


def predicate_groups(tasks: Sequence[Mapping[str, Any]]) -> list[PredicateGroup]:
    """The predicate groups of one shard's task list (the dicts ``run_shard`` gets), in the
    order of their first member: tasks of kind ``task`` of a :func:`fusable_type`, grouped by
    type and exact parent list. Windows and record flags do not matter: each member keeps its
    own. A task alone in its group runs as itself.

    >>> t = lambda i, p, ty="RangeFilter": {"id": i, "type": ty, "kind": "task", "parents": p}
    >>> [g.members for g in predicate_groups([t("a", ["p"]), t("b", ["q"]), t("c", ["p"]),
    ...     t("d", ["p"], "KalmanFilter"), t("e", ["q", "p"])])]
    [('a', 'c')]
    """
    by: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for t in tasks:
        if t["kind"] == "task" and fusable_type(t["type"]) is not None:
            by.setdefault((t["type"], tuple(t["parents"])), []).append(t["id"])
    return [PredicateGroup(ty, parents, tuple(ids)) for (ty, parents), ids in by.items()
            if len(ids) >= 2]


_COMPILED: dict[tuple[int, ...], tuple[tuple[Task, ...], Predicates]] = {}
_MAX_COMPILED = 256


def compiled(type_name: str, members: Sequence[Task]) -> Predicates:
    """``fuse`` of built member tasks, compiled once per worker process for the same task
    objects (stateless tasks are cached per process, so a group's members are the same objects
    batch after batch). The cache holds the tasks, so their ids are not reused while cached."""
    return cast(Predicates, _cached_fuse(
        _COMPILED, members, lambda: fusable_type(type_name),
        f"task type {type_name} declares no fusable predicate"))


def _cached_fuse(cache: dict[tuple[int, ...], tuple[tuple[Task, ...], Any]],
                 members: Sequence[Task], cls: Callable[[], Any], missing: str) -> Any:
    """``cls().fuse(members)``, kept in ``cache`` by the members' ids (with the members, so
    their ids are not reused while cached), a bounded cache cleared when full; ``missing``
    is the error when ``cls()`` is ``None``."""
    key = tuple(id(t) for t in members)
    hit = cache.get(key)
    if hit is None:
        c = cls()
        if c is None:
            raise ReuseError(missing)
        if len(cache) >= _MAX_COMPILED:
            cache.clear()
        hit = cache[key] = (tuple(members), c.fuse(members))
    return hit[1]


def fused_kernel(type_name: str) -> type[Any] | None:
    """The kernel class of a :func:`fusable_type` that also fuses a batch at a time (a
    ``fuse(members)`` classmethod giving :class:`~reuse.tasks.columnar.filters.Selectors`, and
    ``outputs(batch, passed)`` turning a member's selector into its outputs), or ``None``:
    then, columnar, the members run one by one through their own kernels.

    >>> fused_kernel("RangeFilter").__name__, fused_kernel("KalmanFilter")
    ('RangeFilterKernel', None)
    """
    from reuse.tasks.columnar import KERNELS

    cls = KERNELS.get(type_name)
    if fusable_type(type_name) is None or cls is None:
        return None
    return cls if callable(getattr(cls, "fuse", None)) and hasattr(cls, "outputs") else None


_SELECTORS: dict[tuple[int, ...], tuple[tuple[Task, ...], Selectors]] = {}


def compiled_selectors(type_name: str, members: Sequence[Task]) -> Selectors:
    """The columnar :func:`compiled`: the :func:`fused_kernel`'s ``fuse`` of built member
    tasks, once per worker process for the same task objects (held, so their ids are not
    reused while cached)."""
    return cast("Selectors", _cached_fuse(_SELECTORS, members, lambda: fused_kernel(type_name),
                                        f"task type {type_name} has no fused kernel"))


def run_group(tasks: Sequence[Task], windows: Sequence[tuple[int, int]], records: Sequence[bool],
              merged: list[Event], predicates: Predicates,
              line: Callable[[Event, float], str], clock: Callable[[], float],
              ) -> list[tuple[list[Event], list[str], int]]:
    """Each member's outputs, record lines and events taken, from its parents' merged events
    sorted by ``seq`` (``merged``).

    Member ``i`` (``tasks[i]``) takes the events with ``windows[i][0] <= seq <
    windows[i][1]`` (a non-empty window), as it would alone; ``predicates`` says per event
    whether it passes, so it gets those events themselves, in order, and for the others nothing
    (``drops[i]``) or what its ``process`` gives. With ``records[i]``, each output is recorded
    with the clock read when it was made, as ``run_shard`` records a task's outputs.
    """
    lo = min(a for a, _ in windows)
    hi = max(b for _, b in windows)
    i0 = bisect_left(merged, lo, key=_SEQ)
    union = merged[i0:bisect_left(merged, hi, key=_SEQ)]
    selectors = predicates.select(union)
    res: list[tuple[list[Event], list[str], int]] = []
    for task, (a, b), rec, sel, drops in zip(tasks, windows, records, selectors,
                                             predicates.drops, strict=True):
        i = bisect_left(union, a, key=_SEQ)
        j = bisect_left(union, b, key=_SEQ)
        window, s = union[i:j], sel[i:j]
        if drops:
            out = list(compress(window, s))
        else:  # the passed runs copied whole, ``process`` called on the others only
            process = task.process
            out = []
            at, k = 0, s.find(0)
            while k != -1:
                out += window[at:k]
                out += process(window[k])
                at, k = k + 1, s.find(0, k + 1)
            out += window[at:]
        recs = [line(r, clock()) for r in out] if rec else []
        res.append((out, recs, len(window)))
    return res


def split_cpu(total: float, taken: Sequence[int]) -> list[float]:
    """A group's CPU split between its members in proportion to the events each took (evenly
    when none took any), so the shares sum to ``total``.

    >>> split_cpu(1.0, [1, 3]), split_cpu(1.0, [0, 0])
    ([0.25, 0.75], [0.5, 0.5])
    """
    n = sum(taken)
    if n == 0:
        return [total / len(taken)] * len(taken)
    return [total * k / n for k in taken]
