"""Where an event goes over an exchange of a split plan: one key hash per distinct key.

Split out of :mod:`~reuse.runtime.engines.shared.stages`, whose stages route every output a
later stage reads through it. A k-safe replica's edges shift the owner by the replica's level
(:class:`~reuse.runtime.engines.shared.split.KeySpec`), so the memo holds the owner, not the
destination: one hash per key serves the primary's edges and its replicas'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.engines.shared.split import Exchange, SplitPlan

__all__ = ["Router"]


class Router:
    """Partitions of events over exchanges, one key hash per distinct key in a call."""

    def __init__(self, plan: SplitPlan) -> None:
        self.plan = plan
        self.memo: dict[str, int] = {}

    def partition(self, ex: Exchange, event: Mapping[str, Any]) -> int:
        if self.plan.partitions == 1:
            return 0
        if ex.kind == "gather" and ex.group is not None:
            return self.plan.group_at(ex.group)
        if ex.key is None:
            raise SparkRuntimeError(f"edge from {ex.parent} is {ex.kind} without a key")
        key = ex.key.key(event)
        p = self.memo.get(key)
        if p is None:
            p = self.memo[key] = self.plan.ranges.partition_of(key)
        return (p + ex.key.shift) % self.plan.partitions if ex.key.shift else p

    def to(self, ex: Exchange) -> Callable[[Mapping[str, Any]], int]:
        """:meth:`partition` over one exchange, as a function of the event (the checks and
        the branches done once, not per event)."""
        if self.plan.partitions == 1 or ex.kind != "shuffle":
            p = self.partition(ex, {})
            return lambda _: p
        if ex.key is None:
            raise SparkRuntimeError(f"edge from {ex.parent} is {ex.kind} without a key")
        key, memo, of = ex.key.key, self.memo, self.plan.ranges.partition_of
        shift, n = ex.key.shift, self.plan.partitions

        def at(event: Mapping[str, Any]) -> int:
            k = key(event)
            p = memo.get(k)
            if p is None:
                p = memo[k] = of(k)  # the owner; a replica's edge shifts it
            return (p + shift) % n if shift else p
        return at
