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
:func:`~reuse.runtime.engines.shared.split_moves.move_states` turns those under the old plan into
those under the new one (a keyed task's map entries go to the partition owning their key's
range; a gathered task's state to its group's partition). The next batch routes every event
by the new table, so each key's events meet that key's state, in order; what a task computes
depends on its events and its key's state only, so the outputs are those of the unsplit
engine, whatever ``N`` or table each batch used. A restart from the merged states
(:func:`~reuse.runtime.engines.shared.split_moves.merge_states`, the checkpoint) is the same move.

The one interpreter
-------------------
A stage runs its tasks in :func:`~reuse.runtime.common.window.run_window`, as the shard worker
does; what is the stage's own is passed in (:class:`_StageInputs`: inputs from this stage or
from parcels, in the unsplit order; the tagged tasks; key counts; outputs addressed to
parcels). The collector is paused as in the shard worker, and what a stage keeps is then moved
to the oldest generation unexamined (:func:`~reuse.runtime.common.window.no_gc`).

Encoding: orjson, as the engine's records (NaN and infinities as ``null``, as
:func:`~reuse.runtime.common.execution.digest`); ``check=True`` (the tests') verifies every
parcel round-trips equal.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import source_event
from reuse.runtime.common.planners import stream_events_name
from reuse.runtime.common.predicates import predicate_groups
from reuse.runtime.common.window import KEY, SEQ, no_gc, run_window
from reuse.runtime.engines.shared.routing import Router
from reuse.runtime.engines.shared.split import MESSAGE, Exchange, SplitPlan, Step

__all__ = ["Parcel", "StageOut", "SplitBatch", "stage_count", "run_stage", "encode_outbox",
           "decode_parcels", "same_parcels", "run_split"]

Event = dict[str, Any]
#: an event with its order tag (``(seq, parent, tag, j)``, nested, or an ``int`` index: see
#: :func:`_tags`): a pair, or a ``[tag, event]`` list as decoded
Tagged = Sequence[Any]
Feed = Callable[[str, int, int], list[Event]]


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
    with no_gc(to_oldest=True):
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
    """The stage's tasks of partition ``p`` in the one interpreter of a window
    (:func:`~reuse.runtime.common.window.run_window`); what is the stage's own is where inputs
    come from (this stage's outputs, or parcels), their order tags, and where outputs go."""
    data_dir = str(opts.get("data_dir") or "")
    mine = [t for t in tasks if (s := plan.step(t["id"])).stage == stage and _runs_in(plan, s, p)]
    members = ([g.members for g in predicate_groups(mine)]
               if opts.get("fuse_predicates", True) else [])
    received: dict[str, list[Parcel]] = {}
    for pc in inbox:
        received.setdefault(pc.task, []).append(pc)
    later, (full, index), route = _later_edges(plan, stage), _tags(plan), Router(plan)
    full |= {m for g in members if set(g) & full for m in g}  # a group's outputs: one form
    ranges: Counter[int] = Counter()
    outbox: dict[int, list[Parcel]] = {}
    inputs = _StageInputs(plan, stage, p, received, full, index, _seq_local(plan),
                          _only_shuffle(plan), route)

    def taken(t: Mapping[str, Any], events: list[Event]) -> None:
        step = plan.step(t["id"])
        if step.key is not None and plan.partitions > 1:
            _count_keys(plan, step, events, p, ranges)

    def sent(t: Mapping[str, Any], out: list[Any]) -> None:
        tid = t["id"]
        if tid in later:
            form = "full" if tid in full else "index" if tid in index else ""
            _address(list(enumerate(out)) if form == "index" else out, bool(form), later[tid],
                     p, tid, route, outbox)

    run = run_window(mine, lo, hi, states, opts, gather=inputs.gather, tagged=full,
                     source=lambda t, a, b: _source(plan, t, a, b, p, t0, rate, data_dir, feed),
                     taken=taken, sent=sent, now_ms=now_ms)
    for producer, parcels in received.items():  # what a stage past this one reads: carried
        edges = later.get(producer)
        if edges:
            for pc in parcels:
                keep = _carried(pc, edges, p, route)
                if keep:
                    outbox.setdefault(p, []).append(
                        pc if len(keep) == len(pc.items) else replace(pc, items=keep))
    return StageOut(outbox, run.sinks, run.states, run.cpu, run.counts, ranges,
                    events=run.events, groups=run.groups)


@dataclass(frozen=True)
class _StageInputs:
    """Where the tasks of one stage's partition ``p`` take their inputs from: this stage's
    own outputs, or the parcels ``received`` from earlier stages (restricted to what ``p``
    takes), merged into the unsplit order, with order tags where a task is tagged."""

    plan: SplitPlan
    stage: int
    p: int
    received: Mapping[str, list[Parcel]]
    full: frozenset[str]
    index: frozenset[str]
    local: frozenset[str]
    only: Mapping[str, Any]
    route: Router

    def pool(self, ex: Exchange, outputs: Mapping[str, list[Any]]) -> tuple[list[Any], bool]:
        """One input's events in their parent's order (restricted to what this partition
        takes), and whether they are ``(tag, event)`` pairs."""
        if self.plan.step(ex.parent).stage == self.stage:  # made in this stage: forward
            return outputs.get(ex.parent, []), ex.parent in self.full
        parcels = self.received.get(ex.parent, [])
        if ex.kind == "forward":
            parcels = [pc for pc in parcels if pc.origin == self.p]
        pairs = bool(parcels) and all(pc.tagged for pc in parcels)
        merge = len(parcels) > 1 and ex.parent not in self.local
        if merge and not pairs:
            raise SparkRuntimeError(f"reads untagged events of {ex.parent} from "
                                    f"{len(parcels)} partitions", task=ex.parent)
        if (ex.kind != "shuffle" or self.only.get(ex.parent) == ex.key
                or self.plan.partitions == 1):
            got = [x for pc in parcels for x in pc.items]
        else:
            at = self.route.to(ex)
            got = ([x for pc in parcels for x in pc.items if at(x[1]) == self.p] if pairs else
                   [x for pc in parcels for x in pc.items if at(x) == self.p])
        if merge:  # one seq's events from several partitions: merged into the unsplit order
            got.sort(key=KEY)
        return got, pairs

    def gather(self, t: Mapping[str, Any], outputs: Mapping[str, list[Any]]) -> list[Any]:
        """The task's inputs in the unsplit order: its parents' events in parent order, stably
        sorted by ``seq``; if it is tagged in full, as ``(seq, parent, tag, event)`` (its
        order key and the event), else as events."""
        step = self.plan.step(t["id"])
        if step.task in self.full:
            keyed: list[tuple[int, int, Any, Event]] = []
            for i, ex in enumerate(step.inputs):
                got, pairs = self.pool(ex, outputs)
                if not pairs and got:
                    if (ex.parent not in self.index
                            or self.plan.step(ex.parent).stage != self.stage):
                        raise SparkRuntimeError(f"reads {ex.parent} untagged", task=step.task)
                    got = list(enumerate(got))
                keyed += [(ev["seq"], i, tag, ev) for tag, ev in got]
            keyed.sort(key=KEY)
            return keyed
        merged: list[Event] = []
        for ex in step.inputs:
            got, pairs = self.pool(ex, outputs)
            merged += [x[1] for x in got] if pairs else got
        merged.sort(key=SEQ)
        return merged


def _source(plan: SplitPlan, t: Mapping[str, Any], a: int, b: int, p: int, t0: int, rate: float,
            data_dir: str, feed: Feed | None) -> list[Event]:
    """The source events of ``[a, b)`` whose message key partition ``p`` owns."""
    stream = t["stream"]
    whole = plan.partitions == 1
    shift = (plan.step(t["id"]).layout.key or MESSAGE).shift  # a replica source's level
    if feed is not None:
        return [ev for ev in feed(stream_events_name(stream), a, b)
                if whole or plan.source_partition(stream, ev["seq"], shift) == p]
    return [source_event(stream, t["type"], seq, t0, rate, data_dir)
            for seq in range(a, b) if whole or plan.source_partition(stream, seq, shift) == p]


def _count_keys(plan: SplitPlan, step: Step, events: list[Event], p: int,
                ranges: Counter[int]) -> None:
    """Count a keyed task's events per key range, and check each key is this partition's."""
    assert step.key is not None
    per_key = Counter(map(step.key.key, events))
    for key, n in per_key.items():
        if plan.partition_of(key, step.key.shift) != p:
            raise SparkRuntimeError(f"takes key {key!r} in partition {p}, which does not own it",
                                    task=step.task)
        ranges[plan.ranges.range_of(key)] += n


def _address(out: list[Any], tagged: bool, edges: list[Exchange], p: int, tid: str,
             route: Router, outbox: dict[int, list[Parcel]]) -> None:
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


def _carried(pc: Parcel, edges: list[Exchange], p: int, route: Router) -> list[Any]:
    """The items of a received parcel that a later stage of this partition reads."""
    for ex in edges:
        if ex.kind == "forward" and pc.origin == p:
            return pc.items
        if ex.kind == "gather" and route.partition(ex, {}) == p:
            return pc.items
    shuffles = [route.to(ex) for ex in edges if ex.kind == "shuffle"]
    return [x for x in pc.items if any(at(x[1] if pc.tagged else x) == p for at in shuffles)]


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
    with no_gc(to_oldest=True):  # a row is many small dicts made at once
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
    :func:`~reuse.runtime.engines.shared.split_moves.split_states` cuts them)."""
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
