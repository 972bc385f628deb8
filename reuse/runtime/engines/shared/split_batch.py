"""One batch of the shared query with its running DAGs split over the shards (issue 22).

``InplaceRuntime(split=True)`` (``reuse run --split``) runs every batch as
:mod:`~reuse.runtime.engines.shared.stages` plans it, as one Spark job: stage 0 on ``N``
partitions, then for each later stage Spark's own shuffle (``partitionBy(N)``, each row keyed
by its destination partition) and the next stage; one ``collect`` at the end. Nothing goes
through the driver between stages. The tick source's batch only says the range ``[lo, hi)``.

Every stage sends a ``run`` row to its own partition, so each partition runs every stage,
parcels or not; the rows a stage does not consume (states, statistics, and with no shared disk
the sink records) are passed on to its own partition the same way, and reach the driver with
the last stage's. Each stage checks that the rows it got are its own
(``TaskContext.partitionId``).

State. The driver keeps each task's whole state, as the unsplit engine does (``tstate/``): a
batch cuts it per partition (:func:`~reuse.runtime.engines.shared.split_moves.split_states`) and
merges what the partitions return (:func:`~reuse.runtime.engines.shared.split_moves.merge_states`).
So the checkpoint, ``--resume`` and a restart are the unsplit engine's, and a re-split or a
rebalance is exact at any batch boundary: the next batch cuts the same whole states by the new
table.

The layout (the key-range table and the gathered groups' partitions) a batch ran with is
written before the batch runs (``ckpt/shared/layout/<batch>.json``) and a re-run of the batch
(after a failure, a restart or ``--resume``) reads it back: the same rows reach the same
partitions, so each partition rewrites exactly the sink files it wrote before.

Costs measured without Spark are in BENCHMARKS.md ("The staged executor"); with Spark, in the
scaling table.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.files import read_json, write_json
from reuse.runtime.common.ledger import TaskOptions
from reuse.runtime.engines.shared.costs import fold_per_seq
from reuse.runtime.engines.shared.split import KeyRanges, SplitPlan, plan_split
from reuse.runtime.engines.shared.split_moves import merge_states, rebalance, resplit, split_states

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SplitLayout", "SplitResult", "run_split_batch", "range_loads", "rebalanced",
           "LayoutLog", "SplitBatches"]


# --- the layout: pure data, decided by the driver -------------------------------------------------

@dataclass(frozen=True)
class SplitLayout:
    """Where a split batch runs what: the key-range table and the gathered groups' partitions.

    The plan itself (stages, exchanges) follows from the tasks; the layout is what persists
    between batches and what a rebalance changes.
    """

    ranges: KeyRanges
    groups: tuple[tuple[str, int], ...] = ()

    @classmethod
    def even(cls, partitions: int) -> SplitLayout:
        return cls(KeyRanges.even(partitions))

    @property
    def partitions(self) -> int:
        return self.ranges.partitions

    def plan(self, tasks: Sequence[Mapping[str, Any]]) -> SplitPlan:
        """The split plan of ``tasks`` (parents first) under this layout: a group placed
        before stays in its partition, a new one goes to the emptiest."""
        return plan_split(tasks, self.ranges, groups=dict(self.groups))

    @classmethod
    def of(cls, plan: SplitPlan) -> SplitLayout:
        return cls(plan.ranges, tuple(plan.groups))

    def as_dict(self) -> dict[str, Any]:
        return {"partitions": self.partitions, "owner": list(self.ranges.owner),
                "groups": [list(g) for g in self.groups]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SplitLayout:
        return cls(KeyRanges(tuple(int(x) for x in d["owner"]), int(d["partitions"])),
                   tuple((str(g), int(p)) for g, p in d.get("groups", [])))


def range_loads(plan: SplitPlan, stats: Sequence[Mapping[str, Any]],
                ) -> tuple[dict[int, float], dict[str, float]]:
    """Measured CPU per key range and per gathered group, from one batch's stage statistics.

    A partition's keyed tasks' CPU is spread over its ranges in proportion to the events each
    range brought them (the stage's ``ranges`` count); a group's CPU is its tasks' CPU.
    """
    by_range: dict[int, float] = {}
    by_group: dict[str, float] = {}
    for st in stats:
        keyed = 0.0
        for tid, c in st["cpu"].items():
            if tid not in plan:
                continue
            s = plan.step(tid)
            if s.role == "keyed":
                keyed += c
            elif s.group is not None:
                by_group[s.group] = by_group.get(s.group, 0.0) + c
        counts = {int(r): int(n) for r, n in st.get("ranges", {}).items()}
        total = sum(counts.values())
        for r, n in counts.items():
            by_range[r] = by_range.get(r, 0.0) + (keyed * n / total if total else 0.0)
    return by_range, by_group


def rebalanced(layout: SplitLayout, tasks: Sequence[Mapping[str, Any]],
               range_cpu: Mapping[int, float], group_cpu: Mapping[str, float],
               ) -> SplitLayout | None:
    """The layout after :func:`~reuse.runtime.engines.shared.split_moves.rebalance` by measured
    CPU, or ``None`` if no move lowers the largest partition's load enough."""
    plan = layout.plan(tasks)
    new, moves = rebalance(plan, range_cpu, group_cpu=group_cpu)
    return SplitLayout.of(new) if moves else None


# --- one batch on Spark ---------------------------------------------------------------------------

def to_partition(dest: int) -> int:
    """The partitioner of the exchange: a row's key is its destination partition."""
    return dest


@dataclass
class SplitResult:
    """What the driver keeps of one split batch (the unsplit handler's fields)."""

    states: dict[str, Any]
    cpu: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    events: int = 0
    #: partition -> CPU seconds of its stages (decoding, running, encoding), summed
    partition_cpu: dict[int, float] = field(default_factory=dict)
    #: sum over stages of the largest partition's CPU
    critical: float = 0.0
    #: partition -> the executor of its stages (the last one seen)
    executors: dict[int, str] = field(default_factory=dict)
    stats: list[dict[str, Any]] = field(default_factory=list)
    exchanged: int = 0
    stages: int = 1
    #: ``(task, partition)`` -> record lines, when the executors share no disk with the driver
    sinks: dict[tuple[str, int], str] = field(default_factory=dict)
    #: wall seconds of the Spark job, and of each stage's Python work (first start to last end)
    job_s: float = 0.0
    stage_s: list[float] = field(default_factory=list)
    #: a broker-fed batch: source -> the bus cursor after it (the same in every partition)
    cursors: dict[str, str] = field(default_factory=dict)


Row = tuple[int, tuple[str, str, bytes]]  # (destination partition, (kind, name, body))


def _stage_fn(stage: int, tasks: list[dict[str, Any]], plan: SplitPlan,
              parts: list[dict[str, Any]], opts: TaskOptions, t0: int, rate: float,
              lo: int, hi: int, sinks_dir: str | None, key: str,
              feed: dict[str, str] | None = None, cursors: dict[str, str] | None = None,
              ) -> Callable[[Iterable[Any]], Iterable[Row]]:
    """The ``mapPartitions`` function of one stage (runs in Spark's Python workers): stage 0
    gets its partition's number, a later stage the rows the exchange sent to it.

    ``feed`` (a broker-fed run): the bus the source events are read from, each source from its
    cursor before the batch (``cursors``: one per source, not per partition). Every partition
    reads the batch's range and keeps the ``seq`` whose message key it owns, so every one
    finds the same new cursor; it is returned as a ``cursor`` row."""

    def fn(rows: Iterable[Any]) -> Iterable[Row]:
        from pyspark import TaskContext

        from reuse.runtime.common.files import write_records
        from reuse.runtime.engines.shared.stages import decode_parcels, encode_outbox, run_stage
        from reuse.runtime.engines.shared.workers import bus_reader, executor_id, worker_opts

        c0, w0 = time.process_time(), time.time()
        wopts = worker_opts(opts)
        mine: dict[int, list[bytes]] = {}
        out: list[Row] = []
        for row in rows:
            if stage == 0:
                mine.setdefault(int(row), [])
                continue
            p, (kind, name, body) = row
            got = mine.setdefault(p, [])
            if kind == "parcel":
                got.append(body)
            elif kind != "run":  # states, statistics and records of earlier stages: on
                out.append(row)
        read_s = time.process_time() - c0  # counted to the first partition run here
        ctx = TaskContext.get()
        here = ctx.partitionId() if ctx is not None else None
        for p, raw in sorted(mine.items()):
            if here is not None and here != p:
                raise SparkRuntimeError(f"stage {stage}: rows for partition {p} arrived in "
                                        f"Spark partition {here}")
            c1 = time.process_time()
            inbox = [pc for r in raw for pc in decode_parcels(r)]
            read = bus_reader(feed, cursors or {}, lo, hi) if feed else None
            res = run_stage(tasks, plan, stage, p, parts[p], inbox, wopts, t0=t0, rate=rate,
                            lo=lo, hi=hi, feed=read)
            if read is not None:
                out += [(p, ("cursor", src, cur.encode())) for src, cur in read.cursors().items()]
            sent = 0
            for dest, body in encode_outbox(res.outbox):
                out.append((dest, ("parcel", "", body)))
                sent += len(body)
            for task, lines in res.sinks.items():
                text = "\n".join(lines) + "\n"
                if sinks_dir is None:  # no shared disk: to the driver, through the stages
                    out.append((p, ("sink", task, text.encode())))
                else:
                    write_records(sinks_dir, task, f"{key}-p{p}", text)
            if res.states:
                out.append((p, ("state", "",
                                json.dumps(res.states, separators=(",", ":")).encode())))
            spent = time.process_time() - c1 + read_s
            read_s = 0.0
            out.append((p, ("stat", str(stage), json.dumps(
                {"cpu": res.cpu, "counts": res.counts, "events": res.events,
                 "ranges": dict(res.ranges), "spent": spent, "exec": executor_id(),
                 "sent": sent, "began": w0, "ended": time.time()},
                separators=(",", ":")).encode())))
            out.append((p, ("run", "", b"")))  # so partition p runs the next stage
        return out

    return fn


def run_split_batch(spark: SparkSession, tasks: list[dict[str, Any]], plan: SplitPlan,
                    states: Mapping[str, Any], opts: TaskOptions, *, t0: int, rate: float,
                    lo: int, hi: int, sinks_dir: str | None, key: str,
                    feed: dict[str, str] | None = None,
                    cursors: dict[str, str] | None = None) -> SplitResult:
    """Run batch ``[lo, hi)`` of ``tasks`` split as ``plan`` says, as one Spark job: stage 0
    on ``N`` partitions, then per exchange ``partitionBy(N)`` (Spark's shuffle, the row's
    destination as its partition) and the next stage. Returns the merged states and the
    statistics.

    On RDDs rather than DataFrames: the exchange carries opaque bytes, and moving 50 MB
    between two stages took 0.26 s [0.22, 0.28] as pickled RDD rows against 0.66 s [0.56,
    0.76] through ``repartition`` and ``mapInPandas`` (Arrow and Spark's row format copy every
    byte): ``benchmarks/exchange_path.py``, 4 interleaved runs.

    Broker-fed (``feed``, ``cursors``: see :func:`_stage_fn`), the batch's sink records come
    back to the driver whatever the disk (``sinks_dir`` ``None``): the driver appends each
    sink's records of the batch to its bus topic once, for the egress to publish."""
    from reuse.runtime.engines.shared.stages import stage_count

    n = plan.partitions
    parts = split_states(plan, {t: s for t, s in states.items() if t in plan})
    count = stage_count(plan)
    rdd = spark.sparkContext.parallelize(range(n), n).mapPartitions(
        _stage_fn(0, tasks, plan, parts, opts, t0, rate, lo, hi, sinks_dir, key, feed,
                  cursors))
    for stage in range(1, count):
        rdd = rdd.partitionBy(n, to_partition).mapPartitions(
            _stage_fn(stage, tasks, plan, parts, opts, t0, rate, lo, hi, sinks_dir, key, feed,
                      cursors))
    w0 = time.time()
    rows = rdd.collect()
    w1 = time.time()
    new: list[dict[str, Any]] = [{} for _ in range(n)]
    res = SplitResult({}, stages=count)
    per_stage: dict[int, dict[int, float]] = {}
    for p, (kind, name, body) in rows:
        if kind == "state":
            new[p].update(json.loads(body))
        elif kind == "sink":
            res.sinks[(name, p)] = body.decode()
        elif kind == "cursor":
            res.cursors[name] = body.decode()
        elif kind == "stat":
            st = json.loads(body)
            st["partition"], st["stage"] = p, int(name)
            res.stats.append(st)
            for tid, c in st["cpu"].items():
                res.cpu[tid] = res.cpu.get(tid, 0.0) + c
            for tid, k in st["counts"].items():
                res.counts[tid] = res.counts.get(tid, 0) + int(k)
            res.events += int(st["events"])
            res.partition_cpu[p] = res.partition_cpu.get(p, 0.0) + float(st["spent"])
            per_stage.setdefault(int(name), {})[p] = float(st["spent"])
            res.executors[p] = st["exec"]
            res.exchanged += int(st["sent"])
        elif kind == "parcel":
            raise SparkRuntimeError("parcels addressed past the last stage")
    if len(per_stage) != count or any(len(v) != n for v in per_stage.values()):
        raise SparkRuntimeError(f"a split batch [{lo}, {hi}) did not run every stage of every "
                                f"partition ({ {s: sorted(v) for s, v in per_stage.items()} })")
    res.critical = sum(max(v.values()) for v in per_stage.values())
    # wall seconds: the job, and per stage from its first partition's start to its last's end
    # (what the stages do not cover is Spark's scheduling, shuffle and serialization)
    res.job_s = w1 - w0
    spans: dict[int, list[float]] = {}
    for st in res.stats:
        sp = spans.setdefault(st["stage"], [st["began"], st["ended"]])
        sp[0], sp[1] = min(sp[0], st["began"]), max(sp[1], st["ended"])
    res.stage_s = [round(spans[k][1] - spans[k][0], 4) for k in sorted(spans)]
    # a task with state in the checkpoint but not run (window closed) keeps it
    res.states = merge_states(plan, new)
    return res


# --- the pinned layout of each batch ---------------------------------------------------------------

class LayoutLog:
    """The layout each batch ran with, written before it runs (``<dir>/<batch>.json``), so a
    re-run batch routes every row as the first run did."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)

    def pinned(self, batch_id: int, current: SplitLayout) -> SplitLayout:
        path = self.dir / f"{batch_id:09d}.json"
        got = read_json(path)
        if got is not None:
            return SplitLayout.from_dict(got)
        write_json(path, current.as_dict())
        return current

    def latest(self) -> SplitLayout | None:
        """The layout of the newest batch on record (a resumed run starts from it)."""
        if not self.dir.is_dir():
            return None
        names = sorted(n for n in self.dir.iterdir() if n.suffix == ".json"
                       and not n.name.startswith("."))
        return SplitLayout.from_dict(read_json(names[-1])) if names else None


# --- a split engine's layout over the run ------------------------------------------------------

class SplitBatches:
    """What a split engine keeps between batches (issue 22): the current layout, each batch's
    pinned one (:class:`LayoutLog`), the plan of the last deployment version, and the measured
    load per key range and per group that the rebalance reads. The engine calls these under
    its lock, except :meth:`plan` (the handler's thread only). ``copies``: K+1 under
    ``--k-safe K``, the fewest partitions that keep a key's copies apart."""

    def __init__(self, directory: str | Path, partitions: int, copies: int = 1) -> None:
        self.copies = copies
        self.layouts = LayoutLog(directory)
        self.layout = SplitLayout.even(partitions)
        self._plans: dict[tuple[int, SplitLayout, tuple[str, ...]], SplitPlan] = {}
        self.tasks: list[dict[str, Any]] = []
        self.range_cpu: dict[int, float] = {}
        self.group_cpu: dict[str, float] = {}

    def plan(self, batch_id: int, version: int, tasks: list[dict[str, Any]],
             current: SplitLayout) -> tuple[SplitLayout, SplitPlan]:
        """The batch's layout, pinned (a re-run routes as the first run did), and its plan,
        made once per deployment version, layout and task set (an instance across
        applications runs a part of the epoch, which its role may change at a cut)."""
        layout = self.layouts.pinned(batch_id, current)
        which = (version, layout, tuple(t["id"] for t in tasks))
        plan = self._plans.get(which)
        if plan is None:
            plan = layout.plan(tasks)
            self._plans = {which: plan}
        return layout, plan

    def measured(self, layout: SplitLayout, current: SplitLayout, plan: SplitPlan,
                 tasks: list[dict[str, Any]], stats: Sequence[Mapping[str, Any]],
                 seqs: int) -> None:
        """After a batch: new groups keep their place, and its loads fold into the measure."""
        by_range, by_group = range_loads(plan, stats)
        if layout == current and self.layout == current:
            self.layout = SplitLayout.of(plan)
        self.tasks = tasks
        fold_per_seq(self.range_cpu, by_range, max(1, seqs))
        fold_per_seq(self.group_cpu, by_group, max(1, seqs))

    def resplit(self, partitions: int) -> int:
        """Over ``partitions`` shards from the next batch
        (:func:`~reuse.runtime.engines.shared.split_moves.resplit`): the moves made."""
        if partitions < self.copies:
            raise SparkRuntimeError(f"--k-safe {self.copies - 1} needs at least {self.copies} "
                                    f"partitions (a key's copies sit apart), not {partitions}")
        new, moves = resplit(self.layout.plan(self.tasks), partitions)
        self.layout = SplitLayout.of(new)
        self.range_cpu, self.group_cpu = {}, {}
        return len(moves)

    def rebalance(self) -> list[dict[str, Any]]:
        """One rebalance of key ranges and groups by measured CPU, as an action (or none)."""
        if not self.tasks:
            return []
        new = rebalanced(self.layout, self.tasks, self.range_cpu, self.group_cpu)
        if new is None:
            return []
        moved = [r for r, (a, b) in enumerate(zip(self.layout.ranges.owner, new.ranges.owner,
                                                  strict=True)) if a != b]
        self.layout = new
        return [{"action": "ranges", "moved": moved, "groups": [list(g) for g in new.groups]}]

    def resume(self) -> int:
        """A resumed run starts from the layout of its last batch on record: its partitions."""
        self.layout = self.layouts.latest() or self.layout
        return self.layout.partitions
