"""The one interpreter of a window: tasks run over the source ``seq`` of ``[lo, hi)``.

Every engine-side path that runs tasks runs them here (issue 32, item 3): the shared query's
shard worker (:func:`reuse.runtime.engines.shared.shard.run_shard`), each stage of a split
running DAG (:func:`reuse.runtime.engines.shared.stages.run_stage`) and a query-per-DAG partial
DAG's batch (:func:`reuse.runtime.engines.partial.dag.run_batch`). They differ only in where a
task's inputs come from and where its outputs go, which they pass in:

- ``source(t, a, b)``: a source task's events of ``[a, b)`` (generated from the replay, or what
  a broker delivered; a split stage keeps those of its partition);
- ``gather(t, outputs)``: a task's inputs, sorted by ``seq`` (or by order key, if it is
  ``tagged``): its parents' outputs of this call (the default, :func:`parents_merged`), parcels
  from other partitions, or bus topics;
- ``taken(t, events)`` and ``sent(t, outputs)``: what the caller does with a task's window and
  outputs (a split stage counts keys and addresses parcels; ``sent`` is billed to the task).

The rule of what a task takes is written once, :func:`task_window`: the events with
``max(lo, start) <= seq < min(hi, end)``, in its parents' order stably sorted by ``seq`` (the
order of processing one ``seq`` at a time, whatever the batch boundaries). Tasks run in the
order given (parents first); a stateful one is given its state and returns its new one.

**Columnar** (issue 35), when ``opts["columnar"]`` is true and the call builds every task's
inputs itself (the default ``gather``, nothing ``tagged``, no ``taken`` or ``sent`` hook): the
same rule and the same order over :class:`~reuse.tasks.columnar.Batch` columns
(:func:`run_window` says what differs: one clock reading per task per window). The shard worker
runs so (the live default); a split stage's tagged exchange and a query-per-DAG partial DAG's
bus-fed gather stay per event, since their inputs are lists of tagged or bus-decoded events
that they order themselves.

Not shared with the oracle. The reference execution
(:func:`reuse.runtime.accounting.reference_records`) is a separate, deliberately simple loop,
one ``seq`` at a time: an oracle that ran this code could not catch this code's bugs.
"""

from __future__ import annotations

import gc
import json
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from reuse.runtime.common.batches import EMPTY as _EMPTY
from reuse.runtime.common.batches import batch_merged, batch_slice
from reuse.runtime.common.batches import bounds as _bounds
from reuse.runtime.common.batches import record_lines as _record_lines
from reuse.runtime.common.batches import rows as _rows
from reuse.runtime.common.execution import cached_task, record, record_line, task_key
from reuse.runtime.common.predicates import (
    PredicateGroup,
    compiled,
    compiled_selectors,
    fused_kernel,
    predicate_groups,
    run_group,
)
from reuse.runtime.common.predicates import split_cpu as _split_cpu
from reuse.runtime.common.window_groups import WindowGroup, window_groups
from reuse.tasks.columnar import Batch, Kernel, PerEvent, kernel_for
from reuse.tasks.columnar.gc_hold import held_gc
from reuse.tasks.columnar.slices import run_sliced

__all__ = ["UNBOUNDED", "WindowOut", "task_window", "seq_slice", "record_writer",
           "process_window", "parents_merged", "run_window", "no_gc", "batch_merged",
           "batch_slice", "RUN_FLAGS"]

Event = dict[str, Any]
#: ``(event, clock) -> record line``
Line = Callable[[Any, float], str]
#: ``(task, outputs so far) -> its inputs, sorted``
Gather = Callable[[Mapping[str, Any], Mapping[str, list[Any]]], list[Any]]
#: ``(source task, a, b) -> its events of [a, b)``
Source = Callable[[Mapping[str, Any], int, int], list[Event]]
#: ``(source task, a, b) -> its events of [a, b) as one batch`` (columnar)
BatchSource = Callable[[Mapping[str, Any], int, int], Batch]

#: options of how :func:`run_window` runs, not of how a task is built: never passed on to the
#: tasks, so every setting builds and caches the same task objects
RUN_FLAGS = ("fuse_predicates", "columnar", "fuse_windows")

#: ``hi`` for a window with no upper bound (a partial DAG takes what its bus delivered)
UNBOUNDED = 1 << 62
SEQ = itemgetter("seq")
#: a tagged input's order key ``(seq, parent, tag)`` and event, as ``(seq, parent, tag, event)``
KEY = itemgetter(0)


@dataclass
class WindowOut:
    """What a window's run gives back."""

    #: task -> its outputs (``(tag, event)`` pairs if it is tagged); empty when columnar
    outputs: dict[str, list[Any]] = field(default_factory=dict)
    #: columnar: task -> its outputs as one batch (a sink: empty)
    batches: dict[str, Batch] = field(default_factory=dict)
    #: task -> record lines (sink tasks: one per input; recorded tasks: one per output)
    sinks: dict[str, list[str]] = field(default_factory=dict)
    #: task -> new state, for the stateful tasks run (or carried, outside their window)
    states: dict[str, Any] = field(default_factory=dict)
    #: task -> CPU seconds spent in it (a group's members: their shares)
    cpu: dict[str, float] = field(default_factory=dict)
    #: task -> events it took (a source: emitted)
    counts: dict[str, int] = field(default_factory=dict)
    #: source events made
    events: int = 0
    #: the predicate groups run in one pass, as lists of their members' ids
    groups: list[list[str]] = field(default_factory=list)
    #: columnar: the window groups run in one pass (block sums through shared slices)
    window_groups: list[list[str]] = field(default_factory=list)


def task_window(t: Mapping[str, Any], lo: int, hi: int) -> tuple[int, int]:
    """The ``seq`` a task takes in a window ``[lo, hi)``: ``[max(lo, start), min(hi, end))``
    (``end`` ``None``: not ended). Empty when ``a >= b``.

    >>> task_window({"start": 5, "end": None}, 0, 10), task_window({"start": 0, "end": 3}, 2, 9)
    ((5, 10), (2, 3))
    """
    a = max(lo, int(t["start"]))
    end = t["end"]
    return a, (hi if end is None else min(hi, int(end)))


def seq_slice(items: list[Any], a: int, b: int, key: Callable[[Any], int] = SEQ) -> list[Any]:
    """The items with ``a <= key(item) < b`` of a list sorted by ``key``: a contiguous slice
    (the list itself when all are in).

    >>> seq_slice([{"seq": s} for s in range(5)], 1, 3)
    [{'seq': 1}, {'seq': 2}]
    """
    if not items:
        return items
    i = bisect_left(items, a, key=key) if key(items[0]) < a else 0
    j = bisect_left(items, b, key=key) if key(items[-1]) >= b else len(items)
    return items if i == 0 and j == len(items) else items[i:j]


def _full_line(ev: Mapping[str, Any], now: float) -> str:
    """:func:`record_line` with the event (``"e"``), its keys sorted (nested ones too): an
    event's key order is how its task happened to build it, which the columnar path does not
    keep (a batch's columns are in first-seen order), and the lines must be the same bytes on
    both paths. An event whose keys cannot be sorted (mixed types) is written as it is."""
    body = record(ev, now, False)
    try:
        e = json.dumps(ev, separators=(",", ":"), sort_keys=True)
    except TypeError:
        return json.dumps(record(ev, now, True), separators=(",", ":"))
    return f'{json.dumps(body, separators=(",", ":"))[:-1]},"e":{e}}}'


def record_writer(opts: Mapping[str, Any]) -> Line:
    """How records are written: a line per output, with the event too if ``record == "full"``
    (:func:`_full_line`)."""
    return _full_line if opts.get("record") == "full" else record_line


def parents_merged(t: Mapping[str, Any], outputs: Mapping[str, list[Any]]) -> list[Any]:
    """A task's inputs made in the same call: its parents' outputs in parent order, stably
    sorted by ``seq``."""
    merged: list[Any] = []
    for p in t["parents"]:
        merged.extend(outputs.get(p, ()))
    merged.sort(key=SEQ)
    return merged


def process_window(process: Callable[[Event], list[Event]], window: list[Event], sink: bool,
                   recorded: bool, line: Line, clock: Callable[[], float],
                   ) -> tuple[list[Event], list[str]]:
    """A task's outputs and record lines over its window: a sink records each input (and
    outputs nothing), a recorded task each output (one clock reading per input)."""
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
                    window: list[tuple[int, int, Any, Event]], recorded: bool, line: Line,
                    clock: Callable[[], float]) -> tuple[list[Any], list[str]]:
    """A tagged task's outputs over its window: the ``j``-th output of the input with order
    key ``(seq, parent, tag)`` is tagged ``(seq, parent, tag, j)``."""
    out: list[Any] = []
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


@contextmanager
def no_gc(*, to_oldest: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector (if it runs) for the block; resume it after.

    A batch holds every event it makes until it returns, and those many live dicts made the
    collector's passes cost about a tenth of the shard's CPU at the RIoT SEQ peak
    (``benchmarks/shard_cost.py``); events are still freed by reference counting.
    ``to_oldest`` (a split stage's): first move what is tracked to the oldest generation without
    a pass (``gc.freeze`` then ``gc.unfreeze``). A stage keeps what it makes (its outbox), so
    the young generation's pass that resuming the collector starts at once would walk every
    event kept, only to find them all alive (about 0.1 ms per ``seq`` on 2 partitions at the
    RIoT peak, ``benchmarks/stage_cost.py``). If the process froze objects itself,
    ``unfreeze`` would thaw them too: then the young pass runs as usual.
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


def run_window(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
               states: Mapping[str, Any], opts: Mapping[str, Any], *, source: Source,
               gather: Gather = parents_merged, tagged: frozenset[str] = frozenset(),
               taken: Callable[[Mapping[str, Any], list[Event]], None] | None = None,
               sent: Callable[[Mapping[str, Any], list[Any]], None] | None = None,
               now_ms: Callable[[], float] | None = None, skip_idle: bool = False,
               source_batch: BatchSource | None = None) -> WindowOut:
    """Run ``tasks`` (parents first; each ``id``, ``type``, ``config``, ``parents``, ``kind``,
    ``start``, ``end``, ``record``) over ``[lo, hi)`` from ``states``.

    A task in ``tagged`` takes its inputs as ``(seq, parent, tag, event)`` (sorted by that key)
    and makes ``(tag, event)`` outputs (a split stage's order tags, where one ``seq``'s events
    come from several partitions). Filter tasks of one fusable type that read the same parents
    run as one predicate group (:mod:`reuse.runtime.common.predicates`) unless
    ``opts["fuse_predicates"]`` is false: the same outputs, sinks and counts, each member billed
    a share of the group's CPU. Columnar, block averages of one stream's series run as one
    window group (:mod:`reuse.runtime.common.window_groups`) unless ``opts["fuse_windows"]``
    is false (absent: as ``fuse_predicates``). Those flags are not passed on to the tasks, so
    every setting builds and caches the same task objects. ``now_ms`` is the clock that stamps
    records.

    ``skip_idle``: a task given no input at all is not built (its state, if any, is carried
    as it is). A partial DAG's batch often brings nothing new to most of its tasks, and
    building a stateful task means rebuilding it from its state; the shard worker builds every
    task in its window (its saved states and records are pinned by its tests).

    **Columnar** (``opts["columnar"]`` true; absent: false): when this call makes every task's
    inputs itself (``gather`` is :func:`parents_merged`, ``tagged`` is empty, no ``taken`` or
    ``sent``), the tasks run a window at a time on :class:`~reuse.tasks.columnar.Batch`
    columns (:func:`_run_columnar` says how, and what differs: one clock reading per task per
    window); otherwise the flag is ignored and they run per event (a split stage's tagged
    parcels and a partial DAG's bus-fed inputs are lists the caller orders; converting them at
    those hooks would cost a pass per task for nothing the stage could vectorize). A source's
    events are then ``source_batch(t, a, b)`` (default: ``Batch.from_events(source(t, a,
    b))``).
    """
    clock = now_ms or (lambda: time.time() * 1000)
    fuse = bool(opts.get("fuse_predicates", True))
    fuse_windows = bool(opts.get("fuse_windows", fuse))
    columnar = bool(opts.get("columnar", False))
    if any(k in opts for k in RUN_FLAGS):
        opts = {k: v for k, v in opts.items() if k not in RUN_FLAGS}
    if columnar and gather is parents_merged and not tagged and taken is None and sent is None:
        with held_gc():  # a batch's containers die by refcount: no cyclic walks meanwhile
            return _run_columnar(tasks, lo, hi, states, opts, source_batch or (
                lambda t, a, b: Batch.from_events(source(t, a, b))), fuse=fuse,
                fuse_windows=fuse_windows, clock=clock, skip_idle=skip_idle)
    return _run_per_event(tasks, lo, hi, states, opts, source=source, gather=gather,
                          tagged=tagged, taken=taken, sent=sent, clock=clock, fuse=fuse,
                          skip_idle=skip_idle)


def _run_per_event(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
                   states: Mapping[str, Any], opts: Mapping[str, Any], *, source: Source,
                   gather: Gather, tagged: frozenset[str],
                   taken: Callable[[Mapping[str, Any], list[Event]], None] | None,
                   sent: Callable[[Mapping[str, Any], list[Any]], None] | None,
                   clock: Callable[[], float], fuse: bool, skip_idle: bool) -> WindowOut:
    """:func:`run_window`'s per-event path: each task's window of events, one ``process``
    call per event, through the caller's hooks."""
    groups = predicate_groups(tasks) if fuse else []
    first = {g.members[0]: g for g in groups}
    grouped = {m for g in groups for m in g.members}
    by_id = {t["id"]: t for t in tasks} if groups else {}
    line = record_writer(opts)
    res = WindowOut(groups=[list(g.members) for g in groups])
    outputs = res.outputs
    for t in tasks:
        tid = t["id"]
        a, b = task_window(t, lo, hi)
        c0 = time.process_time()
        if t["kind"] == "source":
            outputs[tid] = []
            if a < b:  # outside its window: no events, no CPU to bill
                evs = outputs[tid] = source(t, a, b)
                res.events += len(evs)
                res.counts[tid] = len(evs)
                res.cpu[tid] = time.process_time() - c0
        elif tid in grouped:
            if tid in first:
                _run_group(first[tid], by_id, lo, hi, states, opts, gather, tagged, res, line,
                           clock)
        else:
            outputs[tid] = []
            items = gather(t, outputs) if skip_idle else None
            task = _built(t, a, b, items is not None and not items, states, opts, res)
            if task is None:
                continue
            if items is None:
                items = gather(t, outputs)
            if tid in tagged:
                window = seq_slice(items, a, b, KEY)
                events: list[Event] = [x[3] for x in window]
                outputs[tid], recs = _process_tagged(task.process, window, bool(t["record"]),
                                                     line, clock)
            else:
                window = events = seq_slice(items, a, b)
                outputs[tid], recs = process_window(task.process, events, t["kind"] == "sink",
                                                    bool(t["record"]), line, clock)
            if taken is not None:
                taken(t, events)
            if recs:
                res.sinks[tid] = recs
            if task.stateful:
                res.states[tid] = task.get_state()
            res.counts[tid] = len(window)
            res.cpu[tid] = time.process_time() - c0
        if sent is not None and outputs.get(tid):
            c1 = time.process_time()
            sent(t, outputs[tid])
            res.cpu[tid] = res.cpu.get(tid, 0.0) + time.process_time() - c1
    return res


def _run_group(g: PredicateGroup, by_id: Mapping[str, Mapping[str, Any]], lo: int, hi: int,
               states: Mapping[str, Any], opts: Mapping[str, Any], gather: Gather,
               tagged: frozenset[str], res: WindowOut, line: Line,
               clock: Callable[[], float]) -> None:
    """A predicate group, where its first member stands in the task order (every member reads
    the same parents, all run by then): a member outside its window takes nothing and is not
    billed, as alone; the others share one gather and one evaluation of every predicate.
    Untagged, that is :func:`~reuse.runtime.common.predicates.run_group`; tagged (some
    member's outputs cross partitions: then all are), an event a member passes is its output
    ``0``, and for the others a member that does not drop gets what its ``process`` gives."""
    c0 = time.process_time()
    live: list[tuple[str, Any, int, int, bool]] = []
    for tid in g.members:
        t = by_id[tid]
        task = cached_task(t, opts, states.get(tid))
        a, b = task_window(t, lo, hi)
        res.outputs[tid] = []
        if a < b:
            live.append((tid, task, a, b, bool(t["record"])))
    if not live:
        return
    items = gather(by_id[g.members[0]], res.outputs)
    members = [x[1] for x in live]
    predicates = compiled(g.type, members)
    took: list[int] = []
    if not any(m in tagged for m in g.members):
        got = run_group(members, [(x[2], x[3]) for x in live], [x[4] for x in live], items,
                        predicates, line, clock)
        for (tid, *_), (out, recs, n) in zip(live, got, strict=True):
            res.outputs[tid] = out
            if recs:
                res.sinks[tid] = recs
            res.counts[tid] = n
            took.append(n)
    else:
        union = seq_slice(items, min(x[2] for x in live), max(x[3] for x in live), KEY)
        selectors = predicates.select([x[3] for x in union])
        for (tid, task, a, b, rec), sel, drops in zip(live, selectors, predicates.drops,
                                                      strict=True):
            i = bisect_left(union, a, key=KEY)
            j = bisect_left(union, b, key=KEY)
            tout: list[Any] = []
            for (s, k, tag, ev), ok in zip(union[i:j], sel[i:j], strict=True):
                if ok:
                    tout.append(((s, k, tag, 0), ev))
                elif not drops:
                    tout.extend(((s, k, tag, n), o) for n, o in enumerate(task.process(ev)))
            res.outputs[tid] = tout
            if rec and tout:
                res.sinks[tid] = [line(o, clock()) for _, o in tout]
            res.counts[tid] = j - i
            took.append(j - i)
    for (tid, *_), share in zip(live, _split_cpu(time.process_time() - c0, took), strict=True):
        res.cpu[tid] = share


# --- columnar (issue 35) -----------------------------------------------------------------------

#: a stateless task's kernel, under the task's :func:`~reuse.runtime.common.execution.task_key`,
#: kept with the task it was built on
_KERNELS: dict[tuple[str, str, str], tuple[Any, Kernel]] = {}


def _kernel(t: Mapping[str, Any], opts: Mapping[str, Any], task: Any) -> Kernel:
    """The kernel of ``task`` (what :func:`cached_task` gave for ``t``): kept per process for a
    stateless task, so what it computed once (a bloom filter's hashes) survives the batch; a
    stateful task is rebuilt every batch, and so is its kernel."""
    if task.stateful:
        return kernel_for(task)
    key = task_key(t, opts)
    hit = _KERNELS.get(key)
    if hit is None or hit[0] is not task:
        hit = _KERNELS[key] = (task, kernel_for(task))
    return hit[1]


def _built(t: Mapping[str, Any], a: int, b: int, idle: bool, states: Mapping[str, Any],
           opts: Mapping[str, Any], res: WindowOut) -> Any:
    """The task to run over ``[a, b)``, built from its state; ``None`` when it runs nothing:
    ``idle`` (given no input at all: not even built) or outside its window (built, as every
    task in the list is). Either way its state, if it has one, is carried as it is. One rule
    for both loops of :func:`run_window` (per event and columnar)."""
    tid = t["id"]
    if idle:
        if tid in states:
            res.states[tid] = states[tid]
        return None
    task = cached_task(t, opts, states.get(tid))
    if a >= b:
        if task.stateful and tid in states:
            res.states[tid] = states[tid]
        return None
    return task


def _run_columnar(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
                  states: Mapping[str, Any], opts: Mapping[str, Any], source: BatchSource, *,
                  fuse: bool, fuse_windows: bool, clock: Callable[[], float],
                  skip_idle: bool) -> WindowOut:
    """:func:`run_window`'s columnar path: the per-event loop's steps, on batches.

    A task's input is its parents' output batches in parent order, stably sorted by ``seq``
    (:func:`batch_merged`, the order of :func:`parents_merged`); its window, :func:`task_window`'s
    ``[a, b)``, is found by binary search (:func:`batch_slice`); it runs through its kernel
    (:func:`~reuse.tasks.columnar.kernel_for`: its type's vectorized one, else its ``process``
    behind the kernel contract) on the task :func:`cached_task` gives (a stateless task keeps
    its kernel; a stateful one's is built anew on the task rebuilt from its state). Predicate
    groups run fused where their type's kernel fuses, else member by member; window groups
    (``fuse_windows``) through shared slices (:func:`_run_window_group`). Everything in
    :class:`WindowOut` but ``outputs`` is as per event (outputs are in ``batches``), and the
    record lines are the same bytes but for the clock: **one reading per task per window**
    (after its kernel: an output's time is its batch's completion, as in Spark). Only a sink's
    inputs and a recorded task's outputs become events, to be recorded. As per event, every
    task is built, also outside its window (a stateful one carries its state); a kernel does
    not run on an empty window; a sink (no kernel) is called on its materialized events.
    """
    line = record_writer(opts)
    groups = [g for g in predicate_groups(tasks) if fused_kernel(g.type) is not None] \
        if fuse else []
    wgroups = window_groups(tasks) if fuse_windows else []
    first: dict[str, PredicateGroup | WindowGroup] = {g.members[0]: g for g in groups}
    first.update((g.members[0], g) for g in wgroups)
    grouped = {m for g in first.values() for m in g.members}
    by_id = {t["id"]: t for t in tasks} if first else {}
    res = WindowOut(groups=[list(g.members) for g in groups],
                    window_groups=[list(g.members) for g in wgroups])
    batches = res.batches
    for t in tasks:
        tid = t["id"]
        a, b = task_window(t, lo, hi)
        c0 = time.process_time()
        if t["kind"] == "source":
            batches[tid] = _EMPTY
            if a < b:
                made = batches[tid] = source(t, a, b)
                res.events += made.n
                res.counts[tid] = made.n
                res.cpu[tid] = time.process_time() - c0
            continue
        if tid in grouped:
            g = first.get(tid)
            if isinstance(g, WindowGroup):
                _run_window_group(g, by_id, lo, hi, states, opts, res, line, clock, skip_idle)
            elif g is not None:
                _run_group_columnar(g, by_id, lo, hi, states, opts, res, line, clock)
            continue
        batches[tid] = _EMPTY
        items = batch_merged(t, batches) if skip_idle else None
        task = _built(t, a, b, items is not None and not items.n, states, opts, res)
        if task is None:
            continue
        window = batch_slice(items if items is not None else batch_merged(t, batches), a, b)
        kernel = _kernel(t, opts, task)
        recs: list[str] = []
        if t["kind"] == "sink":
            events = window.to_events()
            if type(kernel) is PerEvent:
                process = task.process
                for ev in events:
                    process(ev)
            elif window.n:
                kernel.run(window)
            recs = _record_lines(events, line, clock)
        elif window.n:
            out = batches[tid] = kernel.run(window)
            if t["record"] and out.n:
                recs = _record_lines(out.to_events(), line, clock)
        if recs:
            res.sinks[tid] = recs
        if task.stateful:
            res.states[tid] = task.get_state()
        res.counts[tid] = window.n
        res.cpu[tid] = time.process_time() - c0
    return res


def _run_group_columnar(g: PredicateGroup, by_id: Mapping[str, Mapping[str, Any]], lo: int,
                        hi: int, states: Mapping[str, Any], opts: Mapping[str, Any],
                        res: WindowOut, line: Line, clock: Callable[[], float]) -> None:
    """:func:`_run_group` on batches: the members in their windows share one merged input and
    one evaluation of every predicate over the union of their windows
    (:func:`~reuse.runtime.common.predicates.compiled_selectors`: a bool mask per member);
    each member's kernel turns its mask over its own window into its outputs
    (``outputs(batch, passed)``). Members outside their windows take nothing, unbilled."""
    c0 = time.process_time()
    live: list[tuple[Mapping[str, Any], Any, int, int]] = []
    for tid in g.members:
        t = by_id[tid]
        task = cached_task(t, opts, states.get(tid))
        a, b = task_window(t, lo, hi)
        res.batches[tid] = _EMPTY
        if a < b:
            live.append((t, task, a, b))
    if not live:
        return
    items = batch_merged(by_id[g.members[0]], res.batches)
    union = batch_slice(items, min(x[2] for x in live), max(x[3] for x in live))
    selectors = compiled_selectors(g.type, [x[1] for x in live]).select(union)
    took: list[int] = []
    for (t, task, a, b), sel in zip(live, selectors, strict=True):
        tid = t["id"]
        i, j = _bounds(union, a, b)
        if j > i:
            kernel: Any = _kernel(t, opts, task)
            out = res.batches[tid] = kernel.outputs(_rows(union, i, j), sel[i:j])
            if t["record"] and out.n:
                res.sinks[tid] = _record_lines(out.to_events(), line, clock)
        res.counts[tid] = j - i
        took.append(j - i)
    for (t, *_), share in zip(live, _split_cpu(time.process_time() - c0, took), strict=True):
        res.cpu[t["id"]] = share


def _run_window_group(g: WindowGroup, by_id: Mapping[str, Mapping[str, Any]], lo: int, hi: int,
                      states: Mapping[str, Any], opts: Mapping[str, Any], res: WindowOut,
                      line: Line, clock: Callable[[], float], skip_idle: bool) -> None:
    """A window group where its first member stands (all read the same parents, run by then):
    one merged input; each member built as alone (:func:`_built`: outside its window, or idle,
    it carries its state, unbilled); the others run over the union of their windows, each on
    its own rows (:func:`~reuse.tasks.columnar.slices.run_sliced`), leaving what a task alone
    leaves. The group's CPU is split between them by rows taken, as a predicate group's."""
    c0 = time.process_time()
    items = batch_merged(by_id[g.members[0]], res.batches)
    live: list[tuple[Mapping[str, Any], Any, int, int]] = []
    for tid in g.members:
        t = by_id[tid]
        a, b = task_window(t, lo, hi)
        res.batches[tid] = _EMPTY
        task = _built(t, a, b, skip_idle and not items.n, states, opts, res)
        if task is not None:
            live.append((t, task, a, b))
    if not live:
        return
    union = batch_slice(items, min(x[2] for x in live), max(x[3] for x in live))
    spans = [_bounds(union, a, b) for _, _, a, b in live]
    outs = run_sliced([x[1] for x in live], union, spans)
    took: list[int] = []
    for (t, task, _, _), (i, j), out in zip(live, spans, outs, strict=True):
        tid = t["id"]
        if j > i:
            res.batches[tid] = out
            if t["record"] and out.n:
                res.sinks[tid] = _record_lines(out.to_events(), line, clock)
        res.states[tid] = task.get_state()
        res.counts[tid] = j - i
        took.append(j - i)
    for (t, *_), share in zip(live, _split_cpu(time.process_time() - c0, took), strict=True):
        res.cpu[t["id"]] = share
