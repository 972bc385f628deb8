"""The staged batch executor of a split running DAG: one stage on one partition (issue 22).

:mod:`reuse.runtime.engines.shared.split` decides how a running DAG runs over ``N``
partitions (key ranges, gathered groups, exchanges, stages). This module executes such a plan
the way the engine will on Spark: a batch ``[lo, hi)`` runs stage by stage, each *stage* of
each partition in a task of its own, and events cross stages only as bytes. It is pure (no
Spark import), so it is tested without Spark against the unsplit shard worker
(:func:`reuse.runtime.engines.shared.shard.run_shard`) and the reference execution
(``tests/runtime/engines/shared/test_stages.py``).

How the engine will run it
--------------------------
For a batch, with ``S = stage_count(plan)``::

    stage 0:   a DataFrame of N rows (one per partition)
               -> mapInPandas: run_stage(tasks, plan, 0, p, states[p], [], opts)
               -> rows (dest, bytes) = encode_outbox(outbox), plus sink and state rows
    stage s:   filter the outbox rows -> repartition(N, dest) (Spark's shuffle; ``dest`` is the
               partition id, so partition ``p`` of the result holds every parcel for ``p``)
               -> mapInPandas: run_stage(..., s, p, states[p], decode(rows), opts) -> rows
    after S-1: no outbox row is left (every parcel is addressed to a stage that reads it)

A task runs in the stage ``plan.step(t).stage`` says, in every partition (source, stateless,
keyed) or in its group's partition only (gathered). Within a stage, a task reads its parents'
outputs of the same stage in memory (such edges are forward). An output a later stage reads
leaves in a :class:`Parcel` (the outputs of one task made in one partition, bound for one
partition, with their order tags if a receiver needs them), addressed by the consumer's
exchange: a forward edge to the same partition, a shuffle to the partition owning the
consumer's key, a gather to the group's partition; an event bound for one partition by several
edges goes once. A parcel a stage past the next one reads is carried: the stage in between puts
it back in its outbox, addressed to its own partition. The receiving task takes, per input, the
parcels of that parent that are its own (forward: made in this partition; shuffle: whose key it
owns; gather: all) and takes them in the unsplit order (the proof is in
:mod:`~reuse.runtime.engines.shared.split`'s doc): its parents' events in parent order, stably
sorted by ``seq``, as :func:`run_shard` does, each parent's merged by tag first where its
events of one ``seq`` come from several partitions (:func:`_tags` says where: only there, and
above a task tagged in full, are tags made). Source events are generated in the partition that
owns their message key (or filtered from ``feed``, the broker's events).

What state lives where
----------------------
A keyed task's state in partition ``p`` holds the keys of ``p``'s ranges; a gathered task's
state lives in its group's partition only; stateless tasks and sources have none. A stage
reads and returns the states of the stateful tasks it runs in its partition, so the engine
stores them per ``(task, partition)`` beside the run (under the store, issue 22 item 2) and a
stage task loads only its own. Nothing else outlives a batch: parcels live from one stage to
the next, within the batch.

Why a re-split at a batch boundary is exact
-------------------------------------------
Between batches no event is in flight: every parcel of a batch has been read by its last
stage. So the whole state of the running DAG is the per-partition task states, and
:func:`~reuse.runtime.engines.shared.split.move_states` turns those under the old plan into
those under the new one (a keyed task's map entries go to the partition owning their key's
range; a gathered task's state to its group's partition). The next batch routes every event
by the new table, so each key's events meet that key's state, in order; what a task computes
depends on its events and its key's state only, so the outputs are those of the unsplit
engine, whatever ``N`` or table each batch used. A restart from the merged states
(:func:`~reuse.runtime.engines.shared.split.merge_states`, the checkpoint) is the same move.

What is reused from the shard worker
------------------------------------
:func:`~reuse.runtime.common.execution.cached_task` (stateless tasks built once per process),
``record_line`` (or the full line with ``record == "full"``), windows by ``seq`` (on the
order keys of a tagged task, whose first element is ``seq``), and the predicate groups
(:mod:`reuse.runtime.engines.shared.predicates`: the decision, the compiled predicates, the
CPU split, and ``run_group`` for an untagged group). A tagged group's pass is run here with
order tags beside the events: ``run_group`` returns outputs without saying which input made
each, and the tags need it. The collector is paused as in the shard worker, but what a stage
keeps is then moved to the oldest generation unexamined (:func:`_no_gc`).

Encoding: orjson, as the engine's records. It writes NaN and infinities as ``null`` (as
:func:`~reuse.runtime.common.execution.digest` does); ``check=True`` verifies every parcel
round-trips equal, which the tests turn on.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any

import orjson

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import cached_task, record_line, source_event
from reuse.runtime.common.planners import stream_events_name
from reuse.runtime.engines.shared.predicates import (
    PredicateGroup,
    compiled,
    predicate_groups,
    run_group,
    split_cpu,
)
from reuse.runtime.engines.shared.shard import _full_line, _no_gc
from reuse.runtime.engines.shared.split import Exchange, SplitPlan, Step

__all__ = ["Parcel", "StageOut", "SplitBatch", "stage_count", "run_stage", "encode_outbox",
           "decode_parcels", "same_parcels", "run_split"]

Event = dict[str, Any]
#: an event with its order tag (``(seq, parent, tag, j)``, nested, or an ``int`` index: see
#: :func:`_tags`): a pair, or a ``[tag, event]`` list as decoded
Tagged = Sequence[Any]
Feed = Callable[[str, int, int], list[Event]]
_KEY = itemgetter(0)
_SEQ = itemgetter("seq")


@dataclass(frozen=True)
class Parcel:
    """The outputs of task ``task`` made in partition ``origin`` bound for one partition, in
    the order they were made: ``(tag, event)`` pairs, or the events alone if ``tagged`` is
    false (no consumer needs them: :func:`_tags`)."""

    origin: int
    task: str
    items: list[Any]
    tagged: bool = True


@dataclass
class StageOut:
    """What one stage of one partition returns (see :func:`run_stage`)."""

    #: destination partition -> parcels for later stages
    outbox: dict[int, list[Parcel]]
    #: task -> record lines, as :func:`run_shard` writes them
    sinks: dict[str, list[str]]
    #: task -> new state, for the stateful tasks run here
    states: dict[str, Any]
    cpu: dict[str, float]
    #: task -> events it took (a source: generated)
    counts: dict[str, int]
    #: key range -> events keyed tasks took (times a task's CPU per event: :func:`rebalance`'s
    #: input; not counted on one partition, where there is nothing to balance)
    ranges: Counter[int] = field(default_factory=Counter)
    #: source events generated
    events: int = 0
    #: predicate groups run in one pass, as lists of their members' ids
    groups: list[list[str]] = field(default_factory=list)


def stage_count(plan: SplitPlan) -> int:
    """How many stages a batch of ``plan`` runs (exchanges on the longest path, plus one).

    Examples
    --------
    >>> from reuse.runtime.engines.shared.split import plan_split
    >>> stage_count(plan_split([], 2)), stage_count(plan_split(
    ...     [{"id": "s", "type": "S", "config": "source", "parents": [], "kind": "source"}], 2))
    (1, 1)
    """
    return max((s.stage for s in plan.steps), default=0) + 1


def _runs_in(plan: SplitPlan, step: Step, partition: int) -> bool:
    return step.group is None or plan.group_at(step.group) == partition


def _later_edges(plan: SplitPlan, stage: int) -> dict[str, list[Exchange]]:
    """Producer -> the input edges of consumers in stages after ``stage``."""
    out: dict[str, list[Exchange]] = {}
    for s in plan.steps:
        if s.stage > stage:
            for ex in s.inputs:
                out.setdefault(ex.parent, []).append(ex)
    return out


def _only_shuffle(plan: SplitPlan) -> dict[str, Any]:
    """Producer -> the key of its edges into later stages, when they are all shuffles by that
    one key: then every event of it that reaches a partition is that partition's (no filter)."""
    kinds: dict[str, set[tuple[str, Any, Any]]] = {}
    for s in plan.steps:
        for ex in s.inputs:
            if s.stage > plan.step(ex.parent).stage:
                kinds.setdefault(ex.parent, set()).add((ex.kind, ex.key, ex.group))
    return {t: next(iter(k))[1] for t, k in kinds.items()
            if len(k) == 1 and next(iter(k))[0] == "shuffle"}


class _Router:
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
        return p

    def to(self, ex: Exchange) -> Callable[[Mapping[str, Any]], int]:
        """:meth:`partition` over one exchange, as a function of the event (the checks and
        the branches done once, not per event)."""
        if self.plan.partitions == 1 or ex.kind != "shuffle":
            p = self.partition(ex, {})
            return lambda _: p
        if ex.key is None:
            raise SparkRuntimeError(f"edge from {ex.parent} is {ex.kind} without a key")
        key, memo, of = ex.key.key, self.memo, self.plan.ranges.partition_of

        def at(event: Mapping[str, Any]) -> int:
            k = key(event)
            p = memo.get(k)
            if p is None:
                p = memo[k] = of(k)
            return p
        return at


def run_stage(tasks: Sequence[Mapping[str, Any]], plan: SplitPlan, stage: int, partition: int,
              states: Mapping[str, Any], inbox: Iterable[Parcel], opts: Mapping[str, Any], *,
              t0: int, rate: float, lo: int, hi: int,
              now_ms: Callable[[], float] | None = None, feed: Feed | None = None,
              check: bool = False) -> StageOut:
    """Run stage ``stage`` of batch ``[lo, hi)`` in partition ``partition``.

    Parameters
    ----------
    tasks
        The running DAG's tasks, parents first, as :func:`run_shard` gets them (``id``,
        ``type``, ``config``, ``parents``, ``kind``, ``start``, ``end``, ``record``,
        ``stream``); ``plan`` is their split plan.
    states
        This partition's states (of any stage: a stage reads its own tasks').
    inbox
        The parcels delivered to this partition after the previous stage (none at stage 0).
    opts, t0, rate, now_ms, feed
        As :func:`run_shard`'s (``feed``: broker-fed sources, filtered to the ``seq`` this
        partition owns).
    check
        Verify that each keyed task's events are its partition's keys (always) and that every
        parcel this stage sends survives the byte encoding unchanged (costly: for tests).

    Returns
    -------
    StageOut
        Each task's window is ``max(lo, start) <= seq < min(hi, end)``, as in the shard worker.
    """
    if not 0 <= stage < stage_count(plan) or not 0 <= partition < plan.partitions:
        raise SparkRuntimeError(f"no stage {stage} of partition {partition} in a plan of "
                                f"{stage_count(plan)} stages over {plan.partitions} partitions")
    with _no_gc(to_oldest=True):
        out = _run_stage(tasks, plan, stage, partition, states, inbox, opts, t0=t0, rate=rate,
                         lo=lo, hi=hi, now_ms=now_ms, feed=feed)
    if check:
        for dest, parcels in out.outbox.items():
            raw = encode_outbox({dest: parcels})
            if not same_parcels([pc for _, r in raw for pc in decode_parcels(r)], parcels):
                raise SparkRuntimeError(f"a parcel for partition {dest} changes through orjson "
                                        f"(a NaN, an infinity or a tuple in an event?)")
    return out


def _seq_local(plan: SplitPlan) -> frozenset[str]:
    """The tasks that make all their outputs of one ``seq`` in one partition: sources (a
    ``seq`` of a stream is one event, made where its message key is), gathered tasks (one
    partition) and stateless tasks with one such parent (they run where their input is, and
    keep its ``seq``, as :func:`reuse.tasks.base.derive` does). A keyed task is not: one
    ``seq``'s observations are split by key. On one partition, every task is."""
    local: set[str] = set()
    for s in plan.steps:
        if (plan.partitions == 1 or s.role in ("source", "gathered")
                or (s.role == "stateless" and len(s.inputs) == 1
                    and s.inputs[0].parent in local)):
            local.add(s.task)
    return frozenset(local)


def _tags(plan: SplitPlan) -> tuple[frozenset[str], frozenset[str]]:
    """Which tasks' outputs carry order tags: ``full`` (``(seq, parent, tag, j)``) and
    ``index`` (the output's place in the task's outputs of its partition).

    A consumer takes its inputs in parent order, stably sorted by ``seq``, so a parent's
    events need no tag where those of one ``seq`` were made in one partition (all of
    :func:`_seq_local`'s, and those not exchanged). A task whose outputs of one ``seq`` meet
    another partition's (read over a shuffle or a gather) is tagged in full, to be merged by
    tag; so is a task a fully tagged task reads, since its tags extend its inputs' (the
    recursion stops at a seq-local task, whose place in its partition's outputs orders its
    outputs of one ``seq``: an ``index``). On one partition no task is tagged.
    """
    local = _seq_local(plan)
    need: set[str] = set()
    for s in reversed(plan.steps):  # consumers before their parents
        full = s.task in need and s.task not in local
        for ex in s.inputs:
            if full or (ex.kind != "forward" and ex.parent not in local):
                need.add(ex.parent)
    return frozenset(need - local), frozenset(need & local)


def _run_stage(tasks: Sequence[Mapping[str, Any]], plan: SplitPlan, stage: int, p: int,
               states: Mapping[str, Any], inbox: Iterable[Parcel], opts: Mapping[str, Any], *,
               t0: int, rate: float, lo: int, hi: int, now_ms: Callable[[], float] | None,
               feed: Feed | None) -> StageOut:
    clock = now_ms or (lambda: time.time() * 1000)
    fuse = bool(opts.get("fuse_predicates", True))
    if "fuse_predicates" in opts:
        opts = {k: v for k, v in opts.items() if k != "fuse_predicates"}
    line = _full_line if opts.get("record") == "full" else record_line
    data_dir = str(opts.get("data_dir") or "")
    mine = [t for t in tasks if (s := plan.step(t["id"])).stage == stage and _runs_in(plan, s, p)]
    groups = predicate_groups(mine) if fuse else []
    first = {g.members[0]: g for g in groups}
    grouped = {m for g in groups for m in g.members}
    by_id = {t["id"]: t for t in mine}
    received: dict[str, list[Parcel]] = {}
    for pc in inbox:
        received.setdefault(pc.task, []).append(pc)
    later = _later_edges(plan, stage)
    only = _only_shuffle(plan)
    full, index = _tags(plan)
    local = _seq_local(plan)
    if any(m in full for g in groups for m in g.members):  # a group's outputs: one form
        full |= {m for g in groups if set(g.members) & full for m in g.members}
    route = _Router(plan)
    res = StageOut({}, {}, {}, {}, {}, groups=[list(g.members) for g in groups])
    #: task -> its outputs in the order made: ``(tag, event)`` pairs if tagged in full, else
    #: events (an index tag is the event's place in the list)
    outputs: dict[str, list[Any]] = {}

    def pool(ex: Exchange) -> tuple[list[Any], bool]:
        """One input's events in their parent's order (restricted to what this partition
        takes), and whether they are ``(tag, event)`` pairs."""
        if plan.step(ex.parent).stage == stage:  # made here, in this stage: forward
            return outputs.get(ex.parent, []), ex.parent in full
        parcels = received.get(ex.parent, [])
        if ex.kind == "forward":
            parcels = [pc for pc in parcels if pc.origin == p]
        pairs = bool(parcels) and all(pc.tagged for pc in parcels)
        merge = len(parcels) > 1 and ex.parent not in local
        if merge and not pairs:
            raise SparkRuntimeError(f"reads untagged events of {ex.parent} from "
                                    f"{len(parcels)} partitions", task=ex.parent)
        if ex.kind != "shuffle" or only.get(ex.parent) == ex.key or plan.partitions == 1:
            got = [x for pc in parcels for x in pc.items]
        else:
            at = route.to(ex)
            got = ([x for pc in parcels for x in pc.items if at(x[1]) == p] if pairs else
                   [x for pc in parcels for x in pc.items if at(x) == p])
        if merge:  # one seq's events from several partitions: merged into the unsplit order
            got.sort(key=_KEY)
        return got, pairs

    def inputs(step: Step) -> list[Any]:
        """The task's inputs in the unsplit order: its parents' events in parent order, stably
        sorted by ``seq``; if it is tagged in full, as ``(seq, parent, tag, event)`` (its
        order key and the event), else as events."""
        if step.task in full:
            keyed: list[tuple[int, int, Any, Event]] = []
            for i, ex in enumerate(step.inputs):
                got, pairs = pool(ex)
                if not pairs and got:
                    if ex.parent not in index or plan.step(ex.parent).stage != stage:
                        raise SparkRuntimeError(f"reads {ex.parent} untagged", task=step.task)
                    got = list(enumerate(got))
                keyed += [(ev["seq"], i, tag, ev) for tag, ev in got]
            keyed.sort(key=_KEY)
            return keyed
        merged: list[Event] = []
        for ex in step.inputs:
            got, pairs = pool(ex)
            merged += [x[1] for x in got] if pairs else got
        merged.sort(key=_SEQ)
        return merged

    for t in mine:
        tid = t["id"]
        step = plan.step(tid)
        a = max(lo, int(t["start"]))
        b = hi if t["end"] is None else min(hi, int(t["end"]))
        c0 = time.process_time()
        if step.role == "source":
            outputs[tid] = []
            if a < b:
                evs = _source(plan, t, a, b, p, t0, rate, data_dir, feed)
                outputs[tid] = evs
                res.events += len(evs)
                res.counts[tid] = len(evs)
                res.cpu[tid] = time.process_time() - c0
        elif tid in grouped:
            if tid in first:
                _run_group(first[tid], by_id, plan, lo, hi, inputs, opts, outputs, res, line,
                           clock, full)
        else:
            task = cached_task(t, opts, states.get(tid))
            outputs[tid] = []
            if a >= b:
                if task.stateful and tid in states:
                    res.states[tid] = states[tid]
                continue
            if tid in full:
                window = _window(inputs(step), a, b, _KEY)
                events: list[Event] = [x[3] for x in window]
                outputs[tid], recs = _process_tagged(task.process, window, bool(t["record"]),
                                                     line, clock)
            else:
                window = events = _window(inputs(step), a, b, _SEQ)
                outputs[tid], recs = _process(task.process, events, t["kind"] == "sink",
                                              bool(t["record"]), line, clock)
            if step.key is not None and plan.partitions > 1:
                _count_keys(plan, step, events, p, res.ranges)
            if recs:
                res.sinks[tid] = recs
            if task.stateful:
                res.states[tid] = task.get_state()
            res.counts[tid] = len(window)
            res.cpu[tid] = time.process_time() - c0
        if tid in later and outputs.get(tid):
            c1 = time.process_time()
            out = outputs[tid]
            form = "full" if tid in full else "index" if tid in index else ""
            _address(list(enumerate(out)) if form == "index" else out, bool(form), later[tid],
                     p, tid, route, res.outbox)
            res.cpu[tid] = res.cpu.get(tid, 0.0) + time.process_time() - c1
    for producer, parcels in received.items():  # what a stage past this one reads: carried
        edges = later.get(producer)
        if edges:
            for pc in parcels:
                keep = _carried(pc, edges, p, route)
                if keep:
                    res.outbox.setdefault(p, []).append(
                        pc if len(keep) == len(pc.items) else replace(pc, items=keep))
    return res


def _source(plan: SplitPlan, t: Mapping[str, Any], a: int, b: int, p: int, t0: int, rate: float,
            data_dir: str, feed: Feed | None) -> list[Event]:
    """The source events of ``[a, b)`` whose message key partition ``p`` owns."""
    stream = t["stream"]
    whole = plan.partitions == 1
    if feed is not None:
        return [ev for ev in feed(stream_events_name(stream), a, b)
                if whole or plan.source_partition(stream, ev["seq"]) == p]
    return [source_event(stream, t["type"], seq, t0, rate, data_dir)
            for seq in range(a, b) if whole or plan.source_partition(stream, seq) == p]


def _window(items: list[Any], a: int, b: int, seq: Callable[[Any], int]) -> list[Any]:
    """The items with ``a <= seq < b`` of a list sorted by ``seq`` (read by ``seq``)."""
    if not items:
        return items
    i = bisect_left(items, a, key=seq) if seq(items[0]) < a else 0
    j = bisect_left(items, b, key=seq) if seq(items[-1]) >= b else len(items)
    return items if i == 0 and j == len(items) else items[i:j]


def _process(process: Callable[[Event], list[Event]], window: list[Event], sink: bool,
             recorded: bool, line: Callable[[Any, float], str],
             clock: Callable[[], float]) -> tuple[list[Event], list[str]]:
    """An untagged task's outputs and record lines over its window, as :func:`run_shard`
    records them (a sink: one line per input; a recorded task: one per output, one clock per
    input)."""
    recs: list[str] = []
    if sink:
        for ev in window:
            process(ev)
            recs.append(line(ev, clock()))
        return [], recs
    if not recorded:
        return [o for ev in window for o in process(ev)], recs
    out: list[Event] = []
    for ev in window:
        got = process(ev)
        if got:
            out += got
            now = clock()
            recs.extend(line(o, now) for o in got)
    return out, recs


def _process_tagged(process: Callable[[Event], list[Event]],
                    window: list[tuple[int, int, Any, Event]], recorded: bool,
                    line: Callable[[Any, float], str], clock: Callable[[], float],
                    ) -> tuple[list[Tagged], list[str]]:
    """A tagged task's outputs over its window: the ``j``-th output of the input with order
    key ``(seq, parent, tag)`` is tagged ``(seq, parent, tag, j)`` (see :func:`_tags`)."""
    out: list[Tagged] = []
    recs: list[str] = []
    for s, i, tag, ev in window:
        got = process(ev)
        if got:
            for j, o in enumerate(got):
                out.append(((s, i, tag, j), o))
            if recorded:
                now = clock()
                recs.extend(line(o, now) for o in got)
    return out, recs


def _count_keys(plan: SplitPlan, step: Step, events: list[Event], p: int,
                ranges: Counter[int]) -> None:
    """Count a keyed task's events per key range, and check each key is this partition's."""
    assert step.key is not None
    per_key = Counter(map(step.key.key, events))
    for key, n in per_key.items():
        r = plan.ranges.range_of(key)
        if plan.ranges.owner[r] != p:
            raise SparkRuntimeError(f"takes key {key!r} in partition {p}, which does not own it",
                                    task=step.task)
        ranges[r] += n


def _address(out: list[Any], tagged: bool, edges: list[Exchange], p: int, tid: str,
             route: _Router, outbox: dict[int, list[Parcel]]) -> None:
    """Put a task's outputs in the parcels of the partitions later consumers read them in
    (each event once per partition, whatever the number of edges that send it there)."""
    const = {p if ex.kind == "forward" else route.partition(ex, {}) for ex in edges
             if ex.kind != "shuffle"}
    shuffles = [route.to(ex)
                for ex in {ex.key: ex for ex in edges if ex.kind == "shuffle"}.values()]
    per: dict[int, list[Any]] = {d: out for d in const}
    if len(shuffles) == 1:  # the usual case: one destination per event
        at = shuffles[0]
        lists: dict[int, list[Any]] = {d: [] for d in range(route.plan.partitions)
                                       if d not in const}
        for x in out:
            d = at(x[1] if tagged else x)
            if d in lists:
                lists[d].append(x)
        per.update((d, v) for d, v in lists.items() if v)
    elif shuffles:
        for x in out:
            ev = x[1] if tagged else x
            for d in {at(ev) for at in shuffles}:
                if d not in const:
                    per.setdefault(d, []).append(x)
    for d, items in sorted(per.items()):
        outbox.setdefault(d, []).append(Parcel(p, tid, items, tagged))


def _carried(pc: Parcel, edges: list[Exchange], p: int, route: _Router) -> list[Any]:
    """The items of a received parcel that a later stage of this partition reads."""
    for ex in edges:
        if ex.kind == "forward" and pc.origin == p:
            return pc.items
        if ex.kind == "gather" and route.partition(ex, {}) == p:
            return pc.items
    shuffles = [route.to(ex) for ex in edges if ex.kind == "shuffle"]
    return [x for x in pc.items if any(at(x[1] if pc.tagged else x) == p for at in shuffles)]


def _run_group(g: PredicateGroup, by_id: Mapping[str, Mapping[str, Any]], plan: SplitPlan,
               lo: int, hi: int, inputs: Callable[[Step], list[Any]],
               opts: Mapping[str, Any], outputs: dict[str, list[Any]], res: StageOut,
               line: Callable[[Any, float], str], clock: Callable[[], float],
               full: frozenset[str]) -> None:
    """A predicate group where its first member stands, as the shard worker runs it (one
    merge and sort, one evaluation of every member's predicate). Untagged, it is the shard's
    :func:`~reuse.runtime.engines.shared.predicates.run_group`; tagged (some member's outputs
    cross partitions), an event a member passes is its output ``0``, and for the others, a
    member that does not drop gets what its ``process`` gives."""
    c0 = time.process_time()
    live: list[tuple[str, Any, int, int, bool]] = []
    for tid in g.members:
        t = by_id[tid]
        task = cached_task(t, opts, None)
        a = max(lo, int(t["start"]))
        b = hi if t["end"] is None else min(hi, int(t["end"]))
        outputs[tid] = []
        if a < b:
            live.append((tid, task, a, b, bool(t["record"])))
    if not live:
        return
    step = plan.step(g.members[0])
    tasks = [x[1] for x in live]
    predicates = compiled(g.type, tasks)
    taken: list[int] = []
    if not any(m in full for m in g.members):
        got = run_group(tasks, [(x[2], x[3]) for x in live], [x[4] for x in live], inputs(step),
                        predicates, line, clock)
        for (tid, *_), (out, recs, n) in zip(live, got, strict=True):
            outputs[tid] = out
            if recs:
                res.sinks[tid] = recs
            res.counts[tid] = n
            taken.append(n)
    else:
        union = _window(inputs(step), min(x[2] for x in live), max(x[3] for x in live), _KEY)
        selectors = predicates.select([x[3] for x in union])
        for (tid, task, a, b, rec), sel, drops in zip(live, selectors, predicates.drops,
                                                      strict=True):
            i = bisect_left(union, a, key=_KEY)
            j = bisect_left(union, b, key=_KEY)
            tout: list[Tagged] = []
            for (s, k, tag, ev), ok in zip(union[i:j], sel[i:j], strict=True):
                if ok:
                    tout.append(((s, k, tag, 0), ev))
                elif not drops:
                    tout.extend(((s, k, tag, n), o) for n, o in enumerate(task.process(ev)))
            outputs[tid] = tout
            if rec and tout:
                res.sinks[tid] = [line(o, clock()) for _, o in tout]
            res.counts[tid] = j - i
            taken.append(j - i)
    for (tid, *_), share in zip(live, split_cpu(time.process_time() - c0, taken), strict=True):
        res.cpu[tid] = share


# --- the exchange's bytes ------------------------------------------------------------------------

#: the mark of a row ``json`` wrote (orjson's rows start with ``[``)
_JSON = b"J"


def encode_outbox(outbox: Mapping[int, Sequence[Parcel]]) -> list[tuple[int, bytes]]:
    """One ``(destination, bytes)`` row per partition with parcels, for ``repartition(N, dest)``.

    A row is a list of parcels, each ``[origin, task, items]``, with a fourth element ``0``
    if it is untagged (its items are events, not ``[tag, event]`` pairs).

    Examples
    --------
    >>> rows = encode_outbox({1: [Parcel(0, "k", [((3, 0, 3, 0), {"seq": 3, "v": 1.5})]),
    ...                           Parcel(0, "m", [{"seq": 3}], tagged=False)]})
    >>> rows[0][0], decode_parcels(rows[0][1])[0]
    (1, Parcel(origin=0, task='k', items=[[[3, 0, 3, 0], {'seq': 3, 'v': 1.5}]], tagged=True))
    >>> decode_parcels(rows[0][1])[1].items
    [{'seq': 3}]
    """
    rows = []
    for dest, parcels in sorted(outbox.items()):
        if not parcels:
            continue
        body = [[pc.origin, pc.task, pc.items] if pc.tagged else [pc.origin, pc.task, pc.items, 0]
                for pc in parcels]
        try:
            raw = orjson.dumps(body)
        except TypeError:  # e.g. an int beyond 64 bits: json writes it (marked: orjson would
            raw = _JSON + json.dumps(body, separators=(",", ":")).encode()  # read a float)
        rows.append((dest, raw))
    return rows


def decode_parcels(raw: bytes) -> list[Parcel]:
    """The parcels of one row of :func:`encode_outbox`.

    Each tagged item comes back as a ``[tag, event]`` list, its tag as nested lists: they
    order as the tuples did, and turning them back into tuples cost about 0.4 ms per ``seq``
    at the RIoT peak (cProfile of ``benchmarks/stage_cost.py``'s run). :func:`same_parcels`
    compares.
    """
    with _no_gc(to_oldest=True):  # a row is many small dicts made at once
        body = json.loads(raw[1:]) if raw[:1] == _JSON else orjson.loads(raw)
    return [Parcel(pc[0], pc[1], pc[2], len(pc) == 3) for pc in body]


def _tuples(tag: Any) -> Any:
    return tuple(map(_tuples, tag)) if isinstance(tag, list | tuple) else tag


def same_parcels(a: Sequence[Parcel], b: Sequence[Parcel]) -> bool:
    """Whether two lists of parcels are equal, a tag (or a part of one) as a list or a tuple
    alike."""
    def norm(ps: Sequence[Parcel]) -> list[Any]:
        return [(p.origin, p.task, p.tagged,
                 [(_tuples(t), e) for t, e in p.items] if p.tagged else p.items) for p in ps]
    return norm(a) == norm(b)


# --- the model executor: every stage of every partition, in one process ----------------------------

@dataclass
class SplitBatch:
    """One batch of a split running DAG, every partition's stages run (see :func:`run_split`)."""

    sinks: dict[str, list[str]]
    states: list[dict[str, Any]]
    cpu: dict[str, float]
    counts: dict[str, int]
    ranges: Counter[int]
    events: int
    #: bytes through the exchanges; of those, bytes bound for another partition; the rows
    exchanged: int
    crossed: int
    rows: int
    #: CPU seconds of each partition's stages (decoding its inbox, running, encoding its
    #: outbox), summed over stages
    partition_cpu: list[float]
    #: the sum over stages of the largest partition's CPU: a batch's CPU time on ``N`` cores,
    #: since a stage starts when the previous one's exchange is complete
    critical: float


def run_split(plan: SplitPlan, tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
              states: Sequence[Mapping[str, Any]], opts: Mapping[str, Any], *, t0: int = 0,
              rate: float = 10.0, now_ms: Callable[[], float] | None = None,
              feed: Feed | None = None, check: bool = False) -> SplitBatch:
    """Batch ``[lo, hi)`` of ``tasks`` run as ``plan`` says, in one process: each stage of each
    partition by :func:`run_stage`, the outboxes passed through :func:`encode_outbox` to the
    next stage, as the engine's exchange will (``states``: per partition, as
    :func:`~reuse.runtime.engines.shared.split.split_states` cuts them)."""
    n = plan.partitions
    if len(states) != n:
        raise SparkRuntimeError(f"states for {len(states)} partitions, the plan has {n}")
    new: list[dict[str, Any]] = [{} for _ in range(n)]
    out = SplitBatch({}, new, {}, {}, Counter(), 0, 0, 0, 0, [0.0] * n, 0.0)
    rows: list[list[bytes]] = [[] for _ in range(n)]  # the rows each partition receives
    inbox: list[list[Parcel]] = [[] for _ in range(n)]
    for stage in range(stage_count(plan)):
        sent: list[list[bytes]] = [[] for _ in range(n)]
        spent = [0.0] * n
        for p in range(n):
            c0 = time.process_time()
            inbox[p] = [pc for raw in rows[p] for pc in decode_parcels(raw)]
            res = run_stage(tasks, plan, stage, p, states[p], inbox[p], opts, t0=t0, rate=rate,
                            lo=lo, hi=hi, now_ms=now_ms, feed=feed, check=check)
            for dest, raw in encode_outbox(res.outbox):
                sent[dest].append(raw)
                out.exchanged += len(raw)
                out.crossed += len(raw) if dest != p else 0
                out.rows += 1
            spent[p] = time.process_time() - c0
            for tid, recs in res.sinks.items():
                out.sinks.setdefault(tid, []).extend(recs)
            new[p].update(res.states)
            for tid, c in res.cpu.items():
                out.cpu[tid] = out.cpu.get(tid, 0.0) + c
            for tid, k in res.counts.items():
                out.counts[tid] = out.counts.get(tid, 0) + k
            out.ranges += res.ranges
            out.events += res.events
        rows = sent
        out.partition_cpu = [a + b for a, b in zip(out.partition_cpu, spent, strict=True)]
        out.critical += max(spent)
    if any(rows):
        raise SparkRuntimeError("parcels addressed past the last stage")
    return out
