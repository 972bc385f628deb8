"""Measured CPU per source ``seq``: what the shared query's rebalance weighs shards by.

An EWMA over batches of each task's CPU seconds per ``seq`` (and of a split run's key ranges
and groups), so one slow batch moves the estimate without deciding it. Pure: the handler
measures, the engine folds, :class:`~reuse.runtime.engines.shared.deploy.Deployment` weighs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reuse.runtime.engines.shared.deploy import DeployedTask

__all__ = ["TaskCosts", "fold_per_seq"]


def fold_per_seq(store: dict[Any, float], cpu: Mapping[Any, float], seqs: int) -> None:
    """Fold one batch's CPU seconds per key into ``store``'s CPU per ``seq`` (an EWMA, 0.3 to
    the new batch): the tasks' costs and the split's range and group loads alike.

    >>> s: dict[str, float] = {}
    >>> fold_per_seq(s, {"a": 2.0}, 10); fold_per_seq(s, {"a": 1.0}, 10); round(s["a"], 3)
    0.17
    """
    for k, c in cpu.items():
        per = c / seqs
        store[k] = per if k not in store else 0.7 * store[k] + 0.3 * per


class TaskCosts:
    """Each task's measured CPU per ``seq``, and the latest measured one per task type (a
    task not measured yet weighs as others of its type)."""

    def __init__(self) -> None:
        self.per_task: dict[str, float] = {}
        self.per_type: dict[str, float] = {}

    def weight(self, t: DeployedTask) -> float:
        """A task's load: its measured CPU per seq, else its type's, else one unit's worth
        (the mean measured cost, or 1 before anything is measured); a source none (it is
        generated or read, not run)."""
        if t.kind == "source":
            return 0.0
        if t.id in self.per_task:
            return self.per_task[t.id]
        if t.type in self.per_type:
            return self.per_type[t.type]
        return (sum(self.per_task.values()) / len(self.per_task)) if self.per_task else 1.0

    def observe(self, task_cpu: Mapping[str, float], seqs: int,
                types: Mapping[str, str]) -> None:
        """Fold one batch's per-task CPU (``types``: runtime id -> task type)."""
        if seqs <= 0:
            return
        fold_per_seq(self.per_task, task_cpu, seqs)
        for tid in task_cpu:
            if tid in types:
                self.per_type[types[tid]] = self.per_task[tid]
