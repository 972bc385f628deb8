"""The floor: the same task code over the same events in one plain Python process, no Spark.

No engine can run these tasks for less CPU than this loop does, so every runtime cost is judged
against it (``benchmarks/limit.py``): a saving the floor does not show is overhead saved, not
work. The loop builds each running task once, generates each source event once per source task
(Default runs every dataflow's own sources, as the paper's baseline did; Reuse shares them) and
runs the tasks parents-first. A timed run records nothing: sink tasks run their own code, but
no digest or record is made, since that is the runtime's accounting, not the dataflows' work.

There are two floors over one plan (the tasks, their order, their parents), each its own short
loop: the per-event loop stays the loop that made the committed figures.

- **per event** (``columnar=False``): one source ``seq`` at a time, each event through the
  task's own ``process``. The floor every figure before issue 35 was judged against, kept as
  it was so those figures still read.
- **columnar** (``columnar=True``, issue 35): ``batch`` source ``seq`` at a time, each task
  running its kernel (``reuse.tasks.columnar.kernel_for``: the vectorized kernel of its type,
  or the task's own ``process`` behind the kernel contract where its type has none yet) on a
  :class:`~reuse.tasks.columnar.Batch`. A task's input batch is its parents' output batches
  in parent order, stably sorted by ``seq`` when it has more than one parent: every task
  copies its input's ``seq``, so at each ``seq`` a task sees parent 0's outputs and then
  parent 1's, the per-event floor's order, and a stateful task's state moves as it does there.
  (A ``Join`` evicting an incomplete message past its ``max_pending`` would emit an older
  ``seq`` and break that tie; the runtime's engines sort by ``seq`` the same way.) A parent's
  batch goes to each of its children as it is, so a kernel must not write into its input's
  columns. The sources come as columns (:func:`~reuse.runtime.common.source_batch.source_batch`).
  Each batch runs with the cyclic collector held back (:mod:`reuse.tasks.columnar.gc_hold`),
  as the engine's columnar interpreter runs one: from 2026-11-29, before which it was not.

From issue 35 on, engine costs are judged against the **columnar** floor: an engine running
the kernels can do no better than they do in one plain process. Both floors run the same tasks
on the same events to the same outputs: ``record=True`` keeps what the workload delivers
(every sink's inputs; the outputs of a task nothing reads, as OPMW's leaves), in order, and
``tests/runtime/test_floor.py`` holds the two floors to identical deliveries, the end-to-end
check of every kernel that lands. Recording wraps the tasks it watches, so the loop is the
same code either way.

CPU is ``time.process_time`` over the loop only (task building and planning excluded).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reuse.core.dataflow import Dataflow
from reuse.core.manager import Manager
from reuse.core.matching import MatchPolicy
from reuse.runtime.common.execution import build_task, parents_first, source_event
from reuse.runtime.common.planners import ReusePlanner, make_planner
from reuse.runtime.common.source_batch import source_batch
from reuse.tasks.base import Event
from reuse.tasks.columnar import Batch, Kernel, kernel_for
from reuse.tasks.columnar.gc_hold import held_gc

__all__ = ["FloorResult", "floor_run"]


@dataclass(frozen=True)
class FloorResult:
    """CPU of the plain loop: ``cpu_s`` over ``seqs`` source ``seq`` (one event per source
    stream each), so ``cores(rate) = cpu_s / seqs * rate``. ``columnar`` says which floor ran
    (``batch`` ``seq`` at a time; 1 for the per-event floor); ``delivered``, when asked for
    (``record``), is what each sink received and each task nothing reads emitted, in order,
    by task id."""

    shares: bool
    tasks: int
    sources: int
    seqs: int
    cpu_s: float
    outputs: int
    columnar: bool = False
    batch: int = 1
    delivered: Mapping[str, list[Event]] | None = field(default=None, repr=False,
                                                        compare=False)

    def cores(self, rate: float) -> float:
        return self.cpu_s / self.seqs * rate

    @property
    def ms_per_seq(self) -> float:
        return 1000 * self.cpu_s / self.seqs


@dataclass(frozen=True)
class _Plan:
    """What both floors run: the source tasks ``(id, stream, type)`` and the other tasks
    ``(id, parents, built task, is a sink)``, parents first; ``unread``: the tasks (not
    sinks) no task reads."""

    sources: list[tuple[str, str, str]]
    work: list[tuple[str, list[str], Any, bool]]
    unread: frozenset[str]


def _plan(flows: Sequence[Dataflow], shares: bool, match: MatchPolicy | None,
          opts: Mapping[str, Any]) -> _Plan:
    planner = (ReusePlanner(Manager(match=match)) if shares and match is not None
               else make_planner(shares))
    tasks: dict[str, Any] = {}
    for f in flows:
        for new in planner.submit(f).start:
            tasks[new.id] = new
    order = parents_first({t: tasks[t].parents for t in tasks})
    sources = [(t, tasks[t].stream, tasks[t].type) for t in order if tasks[t].kind == "source"]
    work = [(t, list(tasks[t].parents), build_task(tasks[t].type, tasks[t].config, opts),
             tasks[t].kind == "sink") for t in order if tasks[t].kind != "source"]
    read = {p for _, parents, _, _ in work for p in parents}
    return _Plan(sources, work, frozenset(t for t, _, _, is_sink in work
                                          if not is_sink and t not in read))


class _RecordedTask:
    """A task that keeps a copy of each input (a sink) or each output (an unread task)."""

    def __init__(self, task: Any, into: list[Event], inputs: bool) -> None:
        self.task, self.into, self.inputs = task, into, inputs

    def process(self, event: Event) -> list[Event]:
        if self.inputs:
            self.into.append(dict(event))
        out = list(self.task.process(event))
        if not self.inputs:
            self.into.extend(dict(o) for o in out)
        return out


class _RecordedKernel(Kernel):
    """A kernel that keeps its input batches' events (a sink) or its outputs' (an unread
    task)."""

    def __init__(self, kernel: Kernel, into: list[Event], inputs: bool) -> None:
        super().__init__(kernel.task)
        self.kernel, self.into, self.inputs = kernel, into, inputs

    def run(self, batch: Batch) -> Batch:
        if self.inputs:
            self.into.extend(batch.to_events())
        out = self.kernel.run(batch)
        if not self.inputs:
            self.into.extend(out.to_events())
        return out


def floor_run(flows: Sequence[Dataflow], *, shares: bool, seqs: int, start: int = 0,
              data_dir: str = "", pi_iterations: int = 1600, rate: float = 10.0,
              match: MatchPolicy | None = None, columnar: bool = False, batch: int = 1000,
              record: bool = False, hold_gc: bool = True) -> FloorResult:
    """Run every dataflow of ``flows`` (all present at once, as at a SEQ peak) over
    ``[start, start + seqs)``; with ``shares``, merged under ``match`` (default: exact), so
    a containment residual reads its wide task's output. ``columnar``: the columnar floor,
    ``batch`` source ``seq`` at a time (``hold_gc=False``: without the collector's hold, for
    ``benchmarks/gc_hold.py``). ``record``: keep what the workload delivers
    (:attr:`FloorResult.delivered`; a run that records is not a measurement: its CPU
    includes the copies).

    Examples
    --------
    >>> from reuse.core.dataflow import parse_dataflow
    >>> f = parse_dataflow({"id": "a", "tasks": [{"id": "s", "type": "S", "config": "source"},
    ...     {"id": "x", "type": "X", "config": {}}, {"id": "o", "type": "Sink",
    ...     "config": "sink"}], "streams": [["s", "x"], ["x", "o"]]})
    >>> r = floor_run([f], shares=True, seqs=5, pi_iterations=10)
    >>> (r.tasks, r.sources, r.outputs)
    (2, 1, 5)
    >>> c = floor_run([f], shares=True, seqs=5, pi_iterations=10, columnar=True, batch=2)
    >>> (c.tasks, c.sources, c.outputs, c.batch)
    (2, 1, 5, 2)
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, not {batch}")
    plan = _plan(flows, shares, match, {"data_dir": data_dir, "pi_iterations": pi_iterations})
    recorded: dict[str, list[Event]] | None = (
        {t: [] for t, _, _, is_sink in plan.work if is_sink or t in plan.unread}
        if record else None)
    if columnar:
        cpu, outputs = _columnar(plan, start, seqs, rate, data_dir, batch, recorded, hold_gc)
    else:
        cpu, outputs = _per_event(plan, start, seqs, rate, data_dir, recorded)
    return FloorResult(shares, len(plan.work), len(plan.sources), seqs, cpu, outputs,
                       columnar, batch if columnar else 1, recorded)


def _per_event(plan: _Plan, start: int, seqs: int, rate: float, data_dir: str,
               recorded: dict[str, list[Event]] | None) -> tuple[float, int]:
    """The per-event floor: one ``seq`` at a time, each event through ``process``; the loop
    is the one every earlier figure was measured with."""
    work = plan.work if recorded is None else [
        (t, parents, _RecordedTask(task, recorded[t], is_sink) if t in recorded else task,
         is_sink) for t, parents, task, is_sink in plan.work]
    sources = plan.sources
    outputs = 0
    c0 = time.process_time()
    for seq in range(start, start + seqs):
        outs: dict[str, list[dict[str, Any]]] = {
            s: [source_event(stream, typ, seq, 0, rate, data_dir)] for s, stream, typ in sources}
        for t, parents, task, is_sink in work:
            res: list[dict[str, Any]] = []
            for p in parents:
                for ev in outs[p]:
                    r = task.process(ev)
                    if is_sink:
                        outputs += 1
                    else:
                        res.extend(r)
            outs[t] = res
    return time.process_time() - c0, outputs


def _merged(batches: list[Batch]) -> Batch:
    """A task's input batch: its parents' output batches in parent order, stably sorted by
    ``seq`` (so at each ``seq``, parent 0's rows and then parent 1's, as per event)."""
    if len(batches) == 1:
        return batches[0]
    parts = [b for b in batches if b.n]
    if len(parts) < 2:
        return parts[0] if parts else Batch.empty()
    both = Batch.concat(parts)
    seq = both.cols["seq"]
    if bool(np.all(seq[1:] >= seq[:-1])):
        return both
    return both.take(np.argsort(seq, kind="stable"))


def _columnar(plan: _Plan, start: int, seqs: int, rate: float, data_dir: str, batch: int,
              recorded: dict[str, list[Event]] | None, hold: bool) -> tuple[float, int]:
    """The columnar floor: ``batch`` ``seq`` at a time, each task's kernel on its parents'
    merged output batch. A task with an empty input does not run (no event, no ``process``
    call: the per-event floor's behaviour too)."""
    steps: list[tuple[str, list[str], Kernel, bool]] = []
    for t, parents, task, is_sink in plan.work:
        kernel = kernel_for(task)
        if recorded is not None and t in recorded:
            kernel = _RecordedKernel(kernel, recorded[t], is_sink)
        steps.append((t, parents, kernel, is_sink))
    sources = plan.sources
    end = start + seqs
    outputs = 0
    c0 = time.process_time()
    for lo in range(start, end, batch):
        n = min(batch, end - lo)
        with held_gc() if hold else nullcontext():  # as the engine's interpreter runs one
            outs: dict[str, Batch] = {
                s: source_batch(stream, typ, lo, n, 0, rate, data_dir)
                for s, stream, typ in sources}
            for t, parents, kernel, is_sink in steps:
                inp = _merged([outs[p] for p in parents])
                if is_sink:
                    outputs += inp.n
                if not inp.n:
                    outs[t] = inp
                    continue
                res = kernel.run(inp)
                if not is_sink:
                    outs[t] = res
    return time.process_time() - c0, outputs
