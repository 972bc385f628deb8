"""One shard's work in one batch: generate its source events, run its tasks, record its sinks.

Pure apart from the clock that stamps sink records (and the CPU clock that times each task),
so it is tested without Spark against the reference execution. The inplace engine calls it in
Spark's Python workers, one call per shard per batch (:mod:`reuse.runtime.engines.shared.engine`).

The tasks run in the one interpreter of a window (:func:`reuse.runtime.common.window.run_window`,
which says what a task takes and in what order). Sources are generated in the shard from the
deterministic replay (:func:`reuse.runtime.common.execution.source_event`), so no source event
passes through the driver or the bus. What is the shard's own: seeding tasks a re-plan started
(or replicas) with their predecessor's state, and running a batch as pieces at a re-plan's cuts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reuse.runtime.common.execution import source_event
from reuse.runtime.common.planners import stream_events_name
from reuse.runtime.common.source_batch import source_batch
from reuse.runtime.common.window import no_gc, run_window
from reuse.tasks.columnar import Batch

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
    Predicate groups, and ``opts["fuse_predicates"]``: see
    :func:`~reuse.runtime.common.window.run_window`. So is ``opts["columnar"]`` (absent:
    false): the tasks run a batch at a time on columns, with the same records (one clock
    reading per task per batch) and states; the shared engine sets it from its
    :class:`~reuse.runtime.spec.RunSpec` (``columnar``, true unless ``reuse run
    --per-event``). The cyclic garbage collector is paused for
    the call (:func:`~reuse.runtime.common.window.no_gc`).
    """
    with no_gc():
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


def _run_shard(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
               states: Mapping[str, Any], opts: Mapping[str, Any], *, t0: int, rate: float,
               now_ms: Callable[[], float] | None,
               feed: Callable[[str, int, int], list[dict[str, Any]]] | None,
               ) -> dict[str, Any]:
    """One piece of a batch, by the one interpreter of a window: a source's events are
    generated in the shard from the replay, or read from the broker's (``feed``); columnar,
    the replay's as columns (:func:`~reuse.runtime.common.source_batch.source_batch`), the
    broker's made into a batch."""
    data_dir = str(opts.get("data_dir") or "")

    def source(t: Mapping[str, Any], a: int, b: int) -> list[dict[str, Any]]:
        if feed is not None:
            return feed(stream_events_name(t["stream"]), a, b)
        return [source_event(t["stream"], t["type"], seq, t0, rate, data_dir)
                for seq in range(a, b)]

    def columns(t: Mapping[str, Any], a: int, b: int) -> Batch:
        if feed is not None:
            return Batch.from_events(feed(stream_events_name(t["stream"]), a, b))
        return source_batch(t["stream"], t["type"], a, b - a, t0, rate, data_dir)

    res = run_window(tasks, lo, hi, states, opts, source=source, source_batch=columns,
                     now_ms=now_ms)
    return {"sinks": res.sinks, "states": res.states, "cpu": res.cpu, "events": res.events,
            "counts": res.counts, "groups": res.groups}


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
