"""AELS (section 4.3.1) and the greedy driver every strategy in this package uses."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reuse.placement.engine import Engine, TimeLimit
from reuse.placement.model import Application, Infrastructure
from reuse.placement.result import Outcome

__all__ = ["greedy", "place_aels", "Choice"]

#: a strategy's per-operator choice: a resource index, or ``(constraint, detail)`` on failure
Choice = int | tuple[str, str]


def greedy(app: Application, infra: Infrastructure, strategy: str,
           choose: Callable[[Engine, int], Choice], *, time_limit: float | None = None,
           order: Callable[[Engine], list[int]] | None = None,
           setup: Callable[[Engine], None] | None = None) -> Outcome:
    """Place pinned operators, then each unplaced operator in deployment order via ``choose``.

    ``order`` overrides the deployment sequence (TCEP iterates its own sorted vector); ``setup``
    builds per-placement indexes and counts toward the resolution time.
    """
    eng = Engine(app, infra, strategy, time_limit)
    failed = eng.place_pinned()
    if failed is not None:
        return failed
    op = -1
    try:
        if setup is not None:
            setup(eng)
        ops = eng.unplaced() if order is None else order(eng)
        for op in ops:
            eng.check_time()
            got = choose(eng, op)
            if isinstance(got, tuple):
                return eng.failure(op, got[0], got[1])
            eng.commit(op, got)
        eng.check_time()
    except TimeLimit:
        return eng.failure(max(op, 0), "time_limit", f"over {time_limit:g} s")
    return eng.finish()


def all_resources(eng: Engine) -> np.ndarray:
    """``arange(|R|)``, built once per placement."""
    ids = getattr(eng, "_all_ids", None)
    if ids is None:
        ids = np.arange(eng.infra.n)
        eng._all_ids = ids  # type: ignore[attr-defined]
    return ids


def best_of(eng: Engine, op: int, candidates: np.ndarray) -> Choice:
    """Algorithm 2 over ``candidates``: the feasible one with the smallest AL increment."""
    ev = eng.evaluate(op, candidates)
    best = ev.best()
    if best is None:
        return (ev.failed or "eq14", ev.detail or "no feasible resource")
    return best


def place_aels(app: Application, infra: Infrastructure, *,
               time_limit: float | None = None) -> Outcome:
    """AELS: every operator evaluated on every resource (O(|O| x |R|) evaluations)."""
    return greedy(app, infra, "aels", lambda eng, op: best_of(eng, op, all_resources(eng)),
                  time_limit=time_limit)
