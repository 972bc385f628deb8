"""What each instance of a run replicated across applications runs, and when it may claim.

Plain decisions, no Spark and no Redis, so they are tested on their own
(``tests/runtime/apps/test_roles.py``) and :mod:`~reuse.runtime.apps.instance` only enacts them.

**Roles.** Instance ``i0`` is the *home*: it runs every task, so every dataflow's outputs are
computed at least once. The others are *replicas*: they run the tasks used by at least ``U``
submitted dataflows (issue 13's rule, :func:`reuse.analysis.blast.replicated`), closed under
parents, which makes ``K + 1`` copies of exactly the shared work. With ``U = 1`` every instance
runs everything. A replica's set changes only at the journal's cuts, so it is looked up per
batch by the batch's first ``seq`` (:class:`RoleLog`).

**Ready mark.** An instance's tick source claims up to the mark its follower writes:
``min(clock, H, the first journal cut above the frontier)``. ``H`` is the journal's horizon
(:mod:`reuse.runtime.control.oplog`); stopping at each cut puts a batch boundary on every cut in
every instance, so each instance saves its task states exactly at every cut: where a replica
that starts running a shared task, and a replacement that joins, take their states from.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from reuse.analysis.blast import replicated
from reuse.core.errors import ReuseError

__all__ = ["RoleLog", "check_apps", "instance_tasks", "ready_mark"]

def check_apps(k: object, min_users: object, *, workers: int | None = None) -> None:
    """Reject ``--k-safe K --replicas apps`` parameters that cannot run, with one line (before
    any JVM starts).

    ``workers``: the standalone cluster's workers, when one is given; each instance needs an
    executor of its own (anti-affinity).

    >>> check_apps(1, 2)
    >>> check_apps(0, 2)
    Traceback (most recent call last):
    ...
    reuse.core.errors.ReuseError: --replicas apps needs --k-safe K >= 1 (K+1 instances), got 0
    >>> check_apps(2, 1, workers=2)
    Traceback (most recent call last):
    ...
    reuse.core.errors.ReuseError: --k-safe 2 --replicas apps needs K+1=3 workers (one executor per instance), but the cluster has 2
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ReuseError(f"--replicas apps needs --k-safe K >= 1 (K+1 instances), got {k!r}")
    if isinstance(min_users, bool) or not isinstance(min_users, int) or min_users < 1:
        raise ReuseError(f"--replicate-min-users U must be an integer >= 1, got {min_users!r}")
    if workers is not None and workers < k + 1:
        raise ReuseError(f"--k-safe {k} --replicas apps needs K+1={k + 1} workers (one "
                         f"executor per instance), but the cluster has {workers}")


def instance_tasks(home: bool, users: Mapping[str, int], parents: Mapping[str, Sequence[str]],
                   min_users: int) -> frozenset[str] | None:
    """The live tasks an instance runs (``None``: all of them).

    ``parents``: every live task's parents; ``users``: each live task's users.

    >>> parents = {"src": [], "parse": ["src"], "a": ["parse"], "b": ["parse"]}
    >>> users = {"src": 2, "parse": 2, "a": 1, "b": 1}
    >>> sorted(instance_tasks(False, users, parents, 2))
    ['parse', 'src']
    >>> instance_tasks(True, users, parents, 2) is None, instance_tasks(False, users, parents, 1)
    (True, None)
    """
    if home or min_users <= 1:
        return None
    keep = replicated(users, min_users) & set(parents)
    todo = list(keep)
    while todo:  # a dataflow that uses a task uses its parents: close it anyway
        for p in parents.get(todo.pop(), ()):
            if p not in keep:
                keep.add(p)
                todo.append(p)
    return frozenset(keep)


@dataclass
class RoleLog:
    """An instance's task sets over ``seq``: the set from each journal cut on (``None``: every
    task). Batches never straddle a cut, so a batch's set is the one at its first ``seq``.

    >>> log = RoleLog()
    >>> log.set(10, frozenset({"a"})); log.set(20, None)
    >>> log.at(5), log.at(10), log.at(19), log.at(25)
    (frozenset(), frozenset({'a'}), frozenset({'a'}), None)
    """

    cuts: list[int] = field(default_factory=list)
    sets: list[frozenset[str] | None] = field(default_factory=list)

    def set(self, cut: int, tasks: frozenset[str] | None) -> None:
        """From ``cut`` on, run ``tasks`` (cuts arrive in journal order: never decreasing)."""
        if self.cuts and cut < self.cuts[-1]:
            raise ValueError(f"cut {cut} is below the last one, {self.cuts[-1]}")
        if self.cuts and cut == self.cuts[-1]:
            self.sets[-1] = tasks
        else:
            self.cuts.append(cut)
            self.sets.append(tasks)

    def at(self, seq: int) -> frozenset[str] | None:
        i = bisect.bisect_right(self.cuts, seq) - 1
        return frozenset() if i < 0 else self.sets[i]


def ready_mark(clock: int, horizon: int, cuts: Iterable[int], frontier: int) -> int:
    """The end of the ranges an instance may claim: what its clock has emitted, no further
    than the journal's horizon, and no further than the first cut above its frontier (so
    every cut is a batch boundary); never below the frontier.

    >>> ready_mark(100, 90, [], 50), ready_mark(100, 120, [70, 95], 50)
    (90, 70)
    >>> ready_mark(100, 120, [70, 95], 70), ready_mark(40, 120, [], 50)
    (95, 50)
    """
    mark = min(clock, horizon)
    for c in sorted(cuts):
        if c > frontier:
            mark = min(mark, c)
            break
    return max(mark, frontier)
