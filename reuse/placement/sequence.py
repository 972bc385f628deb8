"""Deployment sequence (Algorithm 1): upstream operators always precede downstream ones."""

from __future__ import annotations

from collections import deque

from reuse.placement.model import Application

__all__ = ["deployment_sequence"]


def deployment_sequence(app: Application) -> list[int]:
    """Algorithm 1, as printed: sources first, then a queue that re-appends not-ready operators.

    The queue holds each operator at most once (lines 5 and 11), and an operator is appended to
    the sequence only when all its upstream operators are in it (line 9), so the result is a
    topological order built breadth-first from the sources. O(|O| + |E|) amortised on DAGs.

    Examples
    --------
    >>> from reuse.placement.model import Operator, Stream, Application
    >>> ops = (Operator("a", "source", rate=1, size=1), Operator("b", "source", rate=1, size=1),
    ...        Operator("m"), Operator("k", "sink"))
    >>> app = Application(ops, (Stream(0, 2), Stream(1, 2), Stream(2, 3)))
    >>> deployment_sequence(app)
    [0, 1, 2, 3]
    """
    ds: list[int] = []
    in_ds: set[int] = set()
    queue: deque[int] = deque()
    queued: set[int] = set()

    def push(i: int) -> None:
        if i not in queued:
            queue.append(i)
            queued.add(i)

    for src in app.sources:
        ds.append(src)
        in_ds.add(src)
        for e in app.downstream[src]:
            push(app.streams[e].dst)
    guard = 0
    while queue:
        ope = queue.popleft()
        queued.discard(ope)
        if all(app.streams[e].src in in_ds for e in app.upstream[ope]):
            for e in app.downstream[ope]:
                push(app.streams[e].dst)
            ds.append(ope)
            in_ds.add(ope)
            guard = 0
        else:
            push(ope)
            guard += 1
            if guard > len(queue) + 1:  # no progress over a full pass: unreachable operator
                break
    return ds
