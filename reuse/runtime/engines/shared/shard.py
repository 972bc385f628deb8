"""One shard's work in one batch: generate its source events, run its tasks, record its sinks.

Pure apart from the clock that stamps sink records (and the CPU clock that times each task),
so it is tested without Spark against the reference execution. The inplace engine calls it in
Spark's Python workers, one call per shard per batch (:mod:`reuse.runtime.engines.shared.engine`).

Event order is the reference execution's: a task receives its parents' outputs concatenated in
parent order and stably sorted by source ``seq``, which is the order of processing one ``seq``
at a time, whatever the batch boundaries. Sources are generated in the shard from the
deterministic replay (:func:`reuse.runtime.common.execution.source_event`), so no source event passes
through the driver or the bus.
"""

from __future__ import annotations

import copy
import gc
import json
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from reuse.runtime.common.execution import cached_task, record, record_line, source_event
from reuse.runtime.common.planners import stream_events_name
from reuse.runtime.engines.shared.predicates import (
    PredicateGroup,
    compiled,
    predicate_groups,
    run_group,
    split_cpu,
)

if TYPE_CHECKING:
    from reuse.runtime.engines.shared.deploy import Epoch

__all__ = ["run_shard", "seed_replicas", "seed_handovers", "absorber", "handover_cuts"]


def run_shard(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
              states: Mapping[str, Any], opts: Mapping[str, Any], *, t0: int, rate: float,
              now_ms: Callable[[], float] | None = None,
              feed: Callable[[str, int, int], list[dict[str, Any]]] | None = None,
              ) -> dict[str, Any]:
    """Run ``tasks`` (parents first, as :meth:`Deployment.snapshot` lists them) over ``[lo, hi)``.

    Each task takes the events with ``max(lo, start) <= seq < min(hi, end)``. A source task's
    events are generated from the replay, or, with ``feed``, are ``feed(stream, a, b)``: the
    events of the stream with ``a <= seq < b`` that a broker delivered
    (:func:`reuse.runtime.dataplane.broker_feed.read_events`).

    Returns
    -------
    dict
        ``sinks``: task -> sink records as JSON lines (sink tasks, and recorded leaf tasks);
        ``states``: the
        new state of every stateful task that is still deployed; ``cpu``: task -> CPU seconds
        spent in it; ``events``: source events generated; ``counts``: task -> events it took
        (a source: emitted); ``groups``: the predicate groups run in one pass, as lists of
        their members' ids (empty when ``opts["fuse_predicates"]`` is false).

    Notes
    -----
    Filter tasks of one fusable type that read the same parents run as one predicate group
    (:mod:`reuse.runtime.engines.shared.predicates`, issue 25, item 4) unless
    ``opts["fuse_predicates"]`` is false: the same outputs, sinks and counts, each member billed
    a share of the group's CPU. The flag is not passed on to the tasks, so both settings build
    and cache the same task objects.

    The cyclic garbage collector is paused for the call (:func:`_no_gc`): a batch holds every
    event it makes until it returns, and those many live dicts made the collector's passes
    cost about a tenth of the shard's CPU at the RIoT SEQ peak (``benchmarks/shard_cost.py``).
    Events are freed by reference counting as before; the collector resumes after the batch.
    """
    with _no_gc():
        cuts = handover_cuts(tasks, lo, hi)
        if not cuts:
            return _run_shard(tasks, lo, hi, seed_handovers(tasks, dict(states), lo,
                                                            absorber(opts)),
                              opts, t0=t0, rate=rate, now_ms=now_ms, feed=feed)
        # a re-plan's cut inside the batch (issue 36): run the batch as pieces split at the
        # cuts, seeding each started task from the states at its cut. The outputs are the
        # same whatever the batch boundaries, so the pieces give what one run would.
        pieces: list[dict[str, Any]] = []
        now = dict(states)
        for a, b in zip([lo, *cuts], [*cuts, hi], strict=True):
            now = seed_handovers(tasks, now, a, absorber(opts))
            pieces.append(_run_shard(tasks, a, b, now, opts, t0=t0, rate=rate, now_ms=now_ms,
                                     feed=feed))
            now = dict(pieces[-1]["states"])
        return _joined(pieces)


def handover_cuts(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int) -> list[int]:
    """The starts strictly inside ``(lo, hi)`` of tasks that take over another's state."""
    return sorted({int(t["start"]) for t in tasks
                   if t.get("takes_over") and lo < int(t["start"]) < hi})


def _joined(pieces: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One batch's result from its pieces' (in ``seq`` order)."""
    sinks: dict[str, list[str]] = {}
    cpu: dict[str, float] = {}
    counts: dict[str, int] = {}
    groups: list[list[str]] = []
    for res in pieces:
        for k, lines in res["sinks"].items():
            sinks.setdefault(k, []).extend(lines)
        for k, c in res["cpu"].items():
            cpu[k] = cpu.get(k, 0.0) + c
        for k, n in res["counts"].items():
            counts[k] = counts.get(k, 0) + n
        groups += [g for g in res["groups"] if g not in groups]
    return {"sinks": sinks, "states": pieces[-1]["states"], "cpu": cpu,
            "events": sum(int(r["events"]) for r in pieces), "counts": counts,
            "groups": groups}


@contextmanager
def _no_gc(*, to_oldest: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector (if it runs) for the block; resume it after.

    ``to_oldest`` (the staged executor's): first move what is tracked to the oldest generation
    without a pass (``gc.freeze`` then ``gc.unfreeze``: two list splices). A stage keeps what
    it makes (its outbox; a decoded row is all kept), so the young generation's pass that
    resuming the collector starts at once would walk every event kept, only to find them all
    alive: about 0.1 ms per ``seq`` on 2 partitions at the RIoT peak
    (``benchmarks/stage_cost.py``). Moved to the oldest generation, they are looked at by the
    next full collection only, which also frees any cycle among them (events are trees: a
    cycle is rare). If the process froze objects itself, ``unfreeze`` would thaw them too: then
    the young pass runs as usual.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if to_oldest and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _run_shard(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
               states: Mapping[str, Any], opts: Mapping[str, Any], *, t0: int, rate: float,
               now_ms: Callable[[], float] | None,
               feed: Callable[[str, int, int], list[dict[str, Any]]] | None,
               ) -> dict[str, Any]:
    clock = now_ms or (lambda: time.time() * 1000)
    fuse = bool(opts.get("fuse_predicates", True))
    if "fuse_predicates" in opts:
        opts = {k: v for k, v in opts.items() if k != "fuse_predicates"}
    groups = predicate_groups(tasks) if fuse else []
    first = {g.members[0]: g for g in groups}
    grouped = {m for g in groups for m in g.members}
    by_id = {t["id"]: t for t in tasks} if groups else {}
    data_dir = str(opts.get("data_dir") or "")
    outputs: dict[str, list[dict[str, Any]]] = {}
    sinks: dict[str, list[str]] = {}
    new_states: dict[str, Any] = {}
    cpu: dict[str, float] = {}
    counts: dict[str, int] = {}  # task -> events it took in this batch
    generated = 0
    line = _full_line if opts.get("record") == "full" else record_line
    for t in tasks:
        tid = t["id"]
        a = max(lo, int(t["start"]))
        b = hi if t["end"] is None else min(hi, int(t["end"]))
        c0 = time.process_time()
        if t["kind"] == "source":
            if a >= b:  # outside its window in this batch: no events, no CPU to bill
                outputs[tid] = []
                continue
            if feed is not None:
                outputs[tid] = feed(stream_events_name(t["stream"]), a, b)
            else:
                outputs[tid] = [source_event(t["stream"], t["type"], seq, t0, rate, data_dir)
                                for seq in range(a, b)]
            generated += len(outputs[tid])
            counts[tid] = len(outputs[tid])
            cpu[tid] = time.process_time() - c0
            continue
        if tid in grouped:
            if tid in first:
                _run_group(first[tid], by_id, lo, hi, states, opts, outputs, sinks, cpu, counts,
                           line, clock)
            continue
        task = cached_task(t, opts, states.get(tid))
        if a >= b:
            outputs[tid] = []
            if task.stateful and tid in states:
                new_states[tid] = states[tid]
            continue
        merged: list[dict[str, Any]] = []
        for p in t["parents"]:
            merged.extend(outputs.get(p, ()))
        merged.sort(key=_SEQ)
        window = _window(merged, a, b)
        process = task.process
        recs: list[str] = []
        if t["kind"] == "sink":
            for ev in window:
                process(ev)
                recs.append(line(ev, clock()))
            out: list[dict[str, Any]] = []
        elif t["record"]:
            out = []
            for ev in window:
                res = process(ev)
                out.extend(res)
                if res:
                    now = clock()
                    recs.extend(line(r, now) for r in res)
        else:
            out = [r for ev in window for r in process(ev)]
        taken = len(window)
        outputs[tid] = out
        if recs:
            sinks[tid] = recs
        if task.stateful:
            new_states[tid] = task.get_state()
        counts[tid] = taken
        cpu[tid] = time.process_time() - c0
    return {"sinks": sinks, "states": new_states, "cpu": cpu, "events": generated,
            "counts": counts, "groups": [list(g.members) for g in groups]}


def _run_group(g: PredicateGroup, by_id: Mapping[str, Mapping[str, Any]], lo: int, hi: int,
               states: Mapping[str, Any], opts: Mapping[str, Any],
               outputs: dict[str, list[dict[str, Any]]], sinks: dict[str, list[str]],
               cpu: dict[str, float], counts: dict[str, int],
               line: Callable[[Any, float], str], clock: Callable[[], float]) -> None:
    """Run a predicate group where its first member stands in the task order (every member
    reads the same parents, all run by then): a member outside its window this batch takes
    nothing and is not billed, as alone; the others share one merge, sort and pass."""
    c0 = time.process_time()
    live: list[tuple[str, Any, tuple[int, int], bool]] = []
    for tid in g.members:
        t = by_id[tid]
        task = cached_task(t, opts, states.get(tid))
        a = max(lo, int(t["start"]))
        b = hi if t["end"] is None else min(hi, int(t["end"]))
        outputs[tid] = []
        if a < b:
            live.append((tid, task, (a, b), bool(t["record"])))
    if not live:
        return
    merged: list[dict[str, Any]] = []
    for p in g.parents:
        merged.extend(outputs.get(p, ()))
    merged.sort(key=_SEQ)
    tasks = [task for _, task, _, _ in live]
    res = run_group(tasks, [w for _, _, w, _ in live], [r for _, _, _, r in live], merged,
                    compiled(g.type, tasks), line, clock)
    for (tid, _, _, _), (out, recs, taken) in zip(live, res, strict=True):
        outputs[tid] = out
        if recs:
            sinks[tid] = recs
        counts[tid] = taken
    shares = split_cpu(time.process_time() - c0, [taken for _, _, taken in res])
    for (tid, _, _, _), share in zip(live, shares, strict=True):
        cpu[tid] = share


_SEQ = itemgetter("seq")


def _window(events: list[dict[str, Any]], a: int, b: int) -> list[dict[str, Any]]:
    """The events with ``a <= seq < b`` of a list sorted by ``seq``: a contiguous slice."""
    if not events:
        return events
    i = bisect_left(events, a, key=_SEQ) if events[0]["seq"] < a else 0
    j = bisect_left(events, b, key=_SEQ) if events[-1]["seq"] >= b else len(events)
    return events if i == 0 and j == len(events) else events[i:j]


def _full_line(ev: Mapping[str, Any], now: float) -> str:
    return json.dumps(record(ev, now, True), separators=(",", ":"))


def encode_rows(shard: int, res: Mapping[str, Any], lo: int, hi: int,
                ) -> list[tuple[int, str, str, str]]:
    """The rows a shard returns to the driver: ``(shard, kind, name, text)``."""
    rows = [(shard, "sink", k, "\n".join(v) + "\n") for k, v in res["sinks"].items()]
    rows.append((shard, "state", "", json.dumps(res["states"], separators=(",", ":"))))
    rows.append((shard, "stats", "", json.dumps(
        {"cpu": res["cpu"], "events": res["events"], "lo": lo, "hi": hi,
         "counts": res.get("counts", {}), "groups": res.get("groups", [])},
        separators=(",", ":"))))
    return rows


#: ``(started task's spec, its predecessor's state or None, the wide tasks' states) -> state``
Absorb = Callable[[Mapping[str, Any], Any, list[Any]], Any]


def absorber(opts: Mapping[str, Any]) -> Absorb:
    """The task layer's combine (:meth:`reuse.tasks.base.Task.absorb`) for
    :func:`seed_handovers`: the predecessor's state (a fresh task's when it had none) with
    each wide task's added in turn."""
    from reuse.runtime.common.execution import build_task

    def absorb(t: Mapping[str, Any], own: Any, wides: list[Any]) -> Any:
        task = build_task(t["type"], t["config"], opts)
        state = own if own is not None else task.get_state()
        for w in wides:
            state = type(task).absorb(state, w)
        return state

    return absorb


def seed_handovers(tasks: Iterable[Mapping[str, Any]], states: dict[str, Any], lo: int,
                   absorb: Absorb) -> dict[str, Any]:
    """A task a re-plan started (issue 36) whose first ``seq`` is ``lo`` takes the state its
    predecessor (``takes_over``) has at ``seq == lo``: a copy, or, when it ``absorbs`` wide
    tasks (a window residual now reading its inputs), ``absorb`` of that state and theirs at
    ``lo``. ``states`` holds the states at ``lo`` (saved after the batch before, or after the
    batch's piece before the cut): a re-run batch seeds the same way, from the same states. A
    predecessor with no state (it took no event, or keeps none) leaves the task fresh, unless
    wide tasks' states are to be absorbed; a predecessor started at ``lo`` too is seeded
    first."""
    todo = {t["id"]: t for t in tasks if t.get("takes_over") and int(t["start"]) == lo}

    def seed(tid: str) -> None:
        t = todo.pop(tid)
        if tid in states:  # seeded already (by the driver, or a piece before)
            return
        if t["takes_over"] in todo:
            seed(t["takes_over"])
        own = states.get(t["takes_over"])
        wides = [states[w] for w in t.get("absorbs") or () if w in states]
        if wides:
            states[tid] = absorb(t, copy.deepcopy(own), wides)
        elif own is not None:
            states[tid] = copy.deepcopy(own)  # two tasks, two states

    while todo:
        seed(next(iter(todo)))
    return states


def seed_replicas(epoch: Epoch, states: dict[str, Any], lo: int) -> dict[str, Any]:
    """A replica whose first batch this is (its window starts at ``lo``) takes its primary's
    state saved after the batch before: the state at ``seq == lo``, so it joins warm and
    exactly (k-safety's "a replacement stateful replica joins at a cut, with state from a live
    replica"). A re-run batch seeds the same way, from the same saved state."""
    for tasks in epoch.shards:
        for t in tasks:
            of = t.get("replica_of")
            if of and int(t["start"]) == lo and t["id"] not in states and of in states:
                states[t["id"]] = copy.deepcopy(states[of])  # two tasks, two states
    return states
