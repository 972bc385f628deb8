"""What moves when a split layout changes (issue 22): key ranges and groups between partitions
by measured CPU (:func:`rebalance`) or to a new partition count (:func:`resplit`), and the
task states a batch cuts by the layout and joins again after it (:func:`split_states`,
:func:`merge_states`, :func:`move_states`). The layout itself, and how a plan is made:
:mod:`reuse.runtime.engines.shared.split`. Pure: nothing here imports Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.engines.shared.deploy import replica_level
from reuse.runtime.engines.shared.split import (
    GroupMove,
    RangeMove,
    SplitAction,
    SplitPlan,
    emptiest,
    replicas_apart,
)

__all__ = ["rebalance", "resplit", "split_states", "merge_states", "move_states"]


# --- rebalancing and re-splitting ---------------------------------------------------------------

def rebalance(plan: SplitPlan, cpu: Mapping[int, float], *,
              group_cpu: Mapping[str, float] | None = None,
              fixed: Sequence[float] | None = None, margin: float = 0.05,
              max_moves: int | None = None) -> tuple[SplitPlan, list[SplitAction]]:
    """Move whole key ranges and gathered groups from the most to the least loaded partition.

    Each move takes the range (or group) from the most loaded partition to the least loaded
    whose weight brings the two closest, while one brings them closer; the moves are kept
    only if together they lower the largest load by more than ``margin``.

    Parameters
    ----------
    plan
        The current plan.
    cpu, group_cpu
        Measured CPU per key range and per gathered group (missing: 0).
    fixed
        Load per partition that does not move (other running DAGs' work in the shard).
    margin
        The moves must lower the largest load by more than this fraction, so measurements
        that wobble do not send ranges back and forth (as :meth:`Deployment.rebalance`).
    max_moves
        Keep only the first moves (the largest gains come first; ``None``: all of them), to
        bound the state moved at one batch boundary.

    Returns
    -------
    SplitPlan, list
        The plan with the new table and group partitions, and the moves, in order.

    Examples
    --------
    >>> from reuse.runtime.engines.shared.split import KeyRanges, plan_split
    >>> plan = plan_split([{"id": "s", "type": "S", "config": "source", "parents": [],
    ...                     "kind": "source"}], KeyRanges.even(2, 4))
    >>> new, moves = rebalance(plan, {0: 5.0, 1: 1.0, 2: 1.0, 3: 1.0})
    >>> moves, new.ranges.owner
    ([RangeMove(range=1, src=0, dst=1)], (0, 1, 1, 1))
    """
    n = plan.partitions
    owner = list(plan.ranges.owner)
    gat = dict(plan.groups)
    gcpu = group_cpu or {}
    load = list(fixed) if fixed is not None else [0.0] * n
    if len(load) != n:
        raise SparkRuntimeError(f"fixed loads for {len(load)} partitions, the plan has {n}")
    for r, p in enumerate(owner):
        load[p] += cpu.get(r, 0.0)
    for g, p in gat.items():
        load[p] += gcpu.get(g, 0.0)
    start = max(load)
    moves = _greedy_moves(owner, gat, cpu, gcpu, load)
    if not moves or max(load) >= (1 - margin) * start:
        return plan, []
    moves = moves[:max_moves]
    gat = dict(plan.groups)
    gat.update((m.group, m.dst) for m in moves if isinstance(m, GroupMove))
    return replace(plan, ranges=plan.ranges.moved(m for m in moves if isinstance(m, RangeMove)),
                   groups=_apart(plan, gat, n)), moves


def _apart(plan: SplitPlan, groups: dict[str, int], n: int) -> tuple[tuple[str, int], ...]:
    """A replica's group follows its primary's (:func:`replicas_apart`), over ``n``."""
    by_id = {s.task: s for s in plan.steps}
    return tuple(sorted(replicas_apart(groups, by_id, n).items()))


def _greedy_moves(owner: list[int], gat: dict[str, int], cpu: Mapping[int, float],
                  gcpu: Mapping[str, float], load: list[float]) -> list[SplitAction]:
    """:func:`rebalance`'s moves, one at a time while one brings the most and the least
    loaded partitions closer (``owner``, ``gat`` and ``load`` are updated as they go)."""
    n = len(load)
    moves: list[SplitAction] = []
    while n > 1:
        hi = max(range(n), key=lambda p: (load[p], -p))
        lo = min(range(n), key=lambda p: (load[p], p))
        items: list[tuple[float, int | str]] = [
            (cpu.get(r, 0.0), r) for r, p in enumerate(owner) if p == hi]
        items += [(gcpu.get(g, 0.0), g) for g, p in sorted(gat.items())
                  if p == hi and not replica_level(g)]  # a replica's group follows its primary's
        best: tuple[float, float, int | str] | None = None
        for w, item in items:
            # the two loads end closer (so the sum of squared loads falls and this ends);
            # the move that leaves them closest, ranges first
            gap = abs(load[hi] - load[lo] - 2 * w)
            if w > 0 and load[lo] + w < load[hi] and (best is None or gap < best[0]):
                best = (gap, w, item)
        if best is None:
            break
        _, w, item = best
        if isinstance(item, int):
            owner[item] = lo
            moves.append(RangeMove(item, hi, lo))
        else:
            gat[item] = lo
            moves.append(GroupMove(item, hi, lo))
        load[hi] -= w
        load[lo] += w
    return moves


def resplit(plan: SplitPlan, partitions: int) -> tuple[SplitPlan, list[SplitAction]]:
    """The plan over ``partitions``: ranges by :meth:`KeyRanges.resplit`, and each group of a
    partition that goes away to the surviving partition with the fewest groups."""
    ranges, moves = plan.ranges.resplit(partitions)
    gat = {g: p for g, p in plan.groups if p < partitions}
    out: list[SplitAction] = list(moves)
    for g, p in plan.groups:
        if p >= partitions:
            gat[g] = emptiest(gat.values(), partitions)
            out.append(GroupMove(g, p, gat[g]))
    return SplitPlan(plan.steps, ranges, _apart(plan, gat, partitions)), out


# --- state ----------------------------------------------------------------------------------------

def split_states(plan: SplitPlan, states: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Whole task states (the unsplit engine's, or :func:`merge_states`'s) cut per partition.

    A keyed task's map is cut by the ranges of its keys (every partition gets its part, maybe
    empty); a gathered task's state goes whole to its group's partition.
    """
    out: list[dict[str, Any]] = [{} for _ in range(plan.partitions)]
    for tid, state in states.items():
        s = plan.step(tid)
        if s.role == "keyed" and s.key is not None:  # a keyed step has its key
            rest = {k: v for k, v in state.items() if k != s.state_map}
            parts: list[dict[str, Any]] = [{} for _ in range(plan.partitions)]
            for key, val in state[s.state_map].items():
                parts[plan.partition_of(key, s.key.shift)][key] = val
            for p in range(plan.partitions):
                out[p][tid] = {**rest, s.state_map: parts[p]}
        elif s.role == "gathered" and s.group is not None:
            out[plan.group_at(s.group)][tid] = state
        else:
            raise SparkRuntimeError(f"has state but is {s.role} in the plan", task=tid)
    return out


def merge_states(plan: SplitPlan, parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The whole state of every task from its per-partition states (inverse of
    :func:`split_states`; a keyed map comes back sorted by key)."""
    out: dict[str, Any] = {}
    for tid in sorted({t for part in parts for t in part}):
        s = plan.step(tid)
        have = [part[tid] for part in parts if tid in part]
        if s.role != "keyed":
            if len(have) != 1:
                raise SparkRuntimeError(f"is {s.role} but has state in {len(have)} partitions",
                                        task=tid)
            out[tid] = have[0]
            continue
        merged: dict[str, Any] = {}
        for st in have:
            rest = {k: v for k, v in st.items() if k != s.state_map}
            if rest != {k: v for k, v in have[0].items() if k != s.state_map}:
                raise SparkRuntimeError("its partitions disagree outside the keyed map", task=tid)
            for key, val in st[s.state_map].items():
                if key in merged:
                    raise SparkRuntimeError(f"key {key!r} has state in two partitions", task=tid)
                merged[key] = val
        out[tid] = {**rest, s.state_map: dict(sorted(merged.items()))}
    return out


def move_states(old: SplitPlan, new: SplitPlan, parts: Sequence[Mapping[str, Any]],
                ) -> list[dict[str, Any]]:
    """Per-partition states under ``old`` made per-partition states under ``new`` (at a batch
    boundary; only the moved ranges' keys and the moved groups' states change partition). A
    task ``new`` no longer holds has been freed: its state is not carried."""
    whole = merge_states(old, parts)
    return split_states(new, {t: s for t, s in whole.items() if t in new})
