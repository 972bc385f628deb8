"""Window groups in the shard worker (issue 35, item 3): windows of one stream, one pass.

Many tenants average one stream over windows of their own (AStream's shared queries; Scotty's
stream slicing): ``BlockWindowAverage`` tasks reading the same parents with the same
``fields`` and ``group_by`` and any ``window``. Run apart, each merges its parents' batches,
explodes them into observations, lays them out by series and sums its blocks. A *window group*
is those tasks in one shard's task list; :func:`window_groups` decides the groups from that
list alone (plain data, no task built), and the columnar path of
:func:`~reuse.runtime.common.window.run_window` runs each group where its first member stands:
the parents merged once, each member taking the rows of its own window ``[a, b)``
(:func:`~reuse.runtime.common.window.task_window`), and
:func:`~reuse.tasks.columnar.slices.run_sliced` exploding and laying out the rows once and
summing the values once per *slice* (the union of every member's block bounds cuts each
series), each member's block sum the exact combination of its slices and its carried floats.

Why the outputs do not change: a block's mean and pane are functions of its exact sum, and the
combination is proven exact (or the member runs alone through its own kernel):
:mod:`reuse.tasks.columnar.slices` says how. Each member keeps its own state (its open blocks
per series), written back by the kernel's own code, so states, outputs, record lines and
counts are the members' own; the group is how a shard runs tasks in one batch, not what runs,
so the logical tasks, their bills and the running task counts of Figures 2-4 do not change
(as for :mod:`reuse.runtime.common.predicates`). Each member is billed a share of the group's
CPU in proportion to the rows it took. A task alone in its group runs as itself; the per-event
path has no window groups (a per-event task sums its own values, one ``process`` call each).

``opts["fuse_windows"]`` turns the groups off (absent: the value of
``opts["fuse_predicates"]``, so turning fusion off turns off both kinds, and each can be
compared on its own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from reuse.runtime.common.predicates import TaskGroup
from reuse.tasks.stats import BlockWindowAverage

__all__ = ["SLICED", "WindowGroup", "series_of", "window_groups"]

#: task types whose blocks are summed through shared slices, and their classes
SLICED = {"BlockWindowAverage": BlockWindowAverage}


@dataclass(frozen=True)
class WindowGroup(TaskGroup):
    """Block average tasks reading the same parents and series, run in one pass (windows may
    differ)."""

    kind: ClassVar[str] = "window group"


def series_of(t: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The series a block average task reads, ``(fields, group_by)`` in its type's canonical
    form (fields sorted, ``group_by`` written out), or ``None`` for a task of another type or a
    config that form cannot read (it runs alone, and reports its config when built).

    >>> series_of({"type": "BlockWindowAverage", "config": {"window": 5, "fields": ["t", "h"]}})
    (('h', 't'), ('sensor', 'obs'))
    >>> series_of({"type": "BlockWindowAverage", "config": {"window": 5, "fields": "t"}})
    """
    cls = SLICED.get(t["type"])
    if cls is None:
        return None
    c = cls.canonical(t["config"])
    fields, group_by = (c.get("fields"), c.get("group_by")) if isinstance(c, dict) else (0, 0)
    if not (isinstance(fields, list) and isinstance(group_by, list)
            and all(isinstance(x, str) for x in (*fields, *group_by))
            and fields == sorted(set(fields))):
        return None
    return tuple(fields), tuple(group_by)


def window_groups(tasks: Sequence[Mapping[str, Any]]) -> list[WindowGroup]:
    """The window groups of one shard's task list (the dicts ``run_shard`` gets), in the order
    of their first member: tasks of kind ``task`` of a :data:`SLICED` type, grouped by type,
    exact parent list and :func:`series_of`. Windows, ``[start, end)`` and record flags do not
    matter: each member keeps its own. A task alone in its group runs as itself.

    >>> def t(i, w, parents=("p",), fields=("t",)):
    ...     return {"id": i, "type": "BlockWindowAverage", "kind": "task", "parents": parents,
    ...             "config": {"window": w, "fields": list(fields), "group_by": ["obs"]}}
    >>> [g.members for g in window_groups([t("a", 5), t("b", 10), t("c", 3, fields=("h",)),
    ...     t("d", 20), t("e", 5, parents=("q",)), t("f", 3, fields=("h",))])]
    [('a', 'b', 'd'), ('c', 'f')]
    """
    by: dict[tuple[str, tuple[str, ...], Any], list[str]] = {}
    for t in tasks:
        if t["kind"] == "task" and (series := series_of(t)) is not None:
            by.setdefault((t["type"], tuple(t["parents"]), series), []).append(t["id"])
    return [WindowGroup(ty, parents, tuple(ids)) for (ty, parents, _), ids in by.items()
            if len(ids) >= 2]
