"""One batch of the shared query with its running DAGs split over the shards (issue 22).

``InplaceRuntime(split=True)`` (``reuse run --split``) runs every batch as
:mod:`~reuse.runtime.engines.shared.stages` plans it, on Spark: stage 0 in the tick source's
``N`` partitions, then for each later stage Spark's own shuffle, ``repartition(N, route)``,
and the next stage's ``mapInPandas``; one ``collect`` at the end. One Spark job per batch,
``S - 1`` shuffles (``S = stage_count``). Nothing goes through the driver between stages.

Addressing. ``repartition(N, col)`` puts a row in partition ``pmod(murmur3(col), N)``, not in
partition ``col``; so a row bound for partition ``p`` carries ``route = routes[p]``, an integer
whose hash lands in ``p`` (:func:`routes`, found once by asking Spark itself). Each stage checks
that the rows it got are its own (``TaskContext.partitionId``), so a change in Spark's hashing
fails loudly instead of running a partition's parcels in the wrong place. Every stage sends a
``run`` row to its own partition, so each partition runs every stage, parcels or not; the rows
a stage does not consume (states, statistics) are passed on to its own partition the same way,
and reach the driver with the last stage's.

State. The driver keeps each task's whole state, as the unsplit engine does (``tstate/``): a
batch cuts it per partition (:func:`~reuse.runtime.engines.shared.split.split_states`) and
merges what the partitions return (:func:`~reuse.runtime.engines.shared.split.merge_states`).
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
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.files import read_json, write_json
from reuse.runtime.engines.shared.split import (
    KeyRanges,
    SplitPlan,
    merge_states,
    plan_split,
    rebalance,
    split_states,
)

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SplitLayout", "SplitResult", "routes", "run_split_batch", "range_loads"]

SCHEMA = "route int, dest int, kind string, name string, body binary"


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
    """The layout after :func:`~reuse.runtime.engines.shared.split.rebalance` by measured
    CPU, or ``None`` if no move lowers the largest partition's load enough."""
    plan = layout.plan(tasks)
    new, moves = rebalance(plan, range_cpu, group_cpu=group_cpu)
    return SplitLayout.of(new) if moves else None


# --- addressing ---------------------------------------------------------------------------------

_ROUTES: dict[int, list[int]] = {}


def routes(spark: SparkSession, partitions: int) -> list[int]:
    """``routes[p]``: an int that ``repartition(partitions, col)`` sends to partition ``p``,
    found by Spark's own hash (the same expression its hash partitioning uses)."""
    if partitions in _ROUTES:
        return _ROUTES[partitions]
    found: dict[int, int] = {}
    n = 16 * partitions + 64
    rows = spark.range(n).selectExpr(
        "cast(id as int) as r", f"pmod(hash(cast(id as int)), {partitions}) as p").collect()
    for r, p in rows:
        found.setdefault(int(p), int(r))
    if len(found) != partitions:
        raise SparkRuntimeError(f"no route found to every one of {partitions} partitions")
    _ROUTES[partitions] = [found[p] for p in range(partitions)]
    return _ROUTES[partitions]


# --- one batch on Spark ---------------------------------------------------------------------------

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
    ranges: Counter[int] = field(default_factory=Counter)
    stats: list[dict[str, Any]] = field(default_factory=list)
    exchanged: int = 0
    stages: int = 1
    #: ``(task, partition)`` -> record lines, when the executors share no disk with the driver
    sinks: dict[tuple[str, int], str] = field(default_factory=dict)


def _stage_fn(stage: int, tasks: list[dict[str, Any]], plan: SplitPlan,
              parts: list[dict[str, Any]], opts: dict[str, Any], t0: int, rate: float,
              lo: int, hi: int, route: list[int], sinks_dir: str | None, key: str,
              ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The ``mapInPandas`` function of one stage (runs in Spark's Python workers)."""

    def fn(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        import pandas as pd
        from pyspark import TaskContext

        from reuse.runtime.common.files import write_records
        from reuse.runtime.engines.shared.engine import executor_id, worker_opts
        from reuse.runtime.engines.shared.stages import decode_parcels, encode_outbox, run_stage

        c0 = time.process_time()
        wopts = worker_opts(opts)
        mine: dict[int, list[bytes]] = {}
        passed: list[tuple[int, int, str, str, bytes]] = []
        for f in frames:
            if stage == 0:
                for p in f["shard"]:
                    mine.setdefault(int(p), [])
                continue
            for dest, kind, name, body in zip(f["dest"], f["kind"], f["name"], f["body"],
                                              strict=True):
                p = int(dest)
                rows = mine.setdefault(p, [])
                if kind == "parcel":
                    rows.append(bytes(body))
                elif kind != "run":
                    passed.append((route[p], p, kind, name, bytes(body)))
        read_s = time.process_time() - c0  # counted to the first partition run here
        ctx = TaskContext.get()
        here = ctx.partitionId() if ctx is not None else None
        out: list[tuple[int, int, str, str, bytes]] = list(passed)
        for p, raw in sorted(mine.items()):
            if stage > 0 and here is not None and here != p:  # stage 0: any will do
                raise SparkRuntimeError(f"stage {stage}: rows for partition {p} arrived in "
                                        f"Spark partition {here} (routing by hash changed?)")
            c1 = time.process_time()
            inbox = [pc for r in raw for pc in decode_parcels(r)]
            res = run_stage(tasks, plan, stage, p, parts[p], inbox, wopts, t0=t0, rate=rate,
                            lo=lo, hi=hi)
            sent = 0
            for dest, body in encode_outbox(res.outbox):
                out.append((route[dest], dest, "parcel", "", body))
                sent += len(body)
            for task, lines in res.sinks.items():
                text = "\n".join(lines) + "\n"
                if sinks_dir is None:  # no shared disk: to the driver, through the stages
                    out.append((route[p], p, "sink", task, text.encode()))
                else:
                    write_records(sinks_dir, task, f"{key}-p{p}", text)
            if res.states:
                out.append((route[p], p, "state", "",
                            json.dumps(res.states, separators=(",", ":")).encode()))
            spent = time.process_time() - c1 + read_s
            read_s = 0.0
            out.append((route[p], p, "stat", str(stage), json.dumps(
                {"cpu": res.cpu, "counts": res.counts, "events": res.events,
                 "ranges": dict(res.ranges), "spent": spent, "exec": executor_id(),
                 "sent": sent},
                separators=(",", ":")).encode()))
            out.append((route[p], p, "run", "", b""))
        yield pd.DataFrame(out, columns=["route", "dest", "kind", "name", "body"])

    return fn


def run_split_batch(df: DataFrame, tasks: list[dict[str, Any]], plan: SplitPlan,
                    states: Mapping[str, Any], opts: dict[str, Any], *, t0: int, rate: float,
                    lo: int, hi: int, sinks_dir: str | None, key: str, route: list[int],
                    ) -> SplitResult:
    """Run batch ``[lo, hi)`` of ``tasks`` split as ``plan`` says; ``df`` is the tick source's
    batch (one row per partition). Returns the merged states and the statistics."""
    from reuse.runtime.engines.shared.stages import stage_count

    n = plan.partitions
    parts = split_states(plan, {t: s for t, s in states.items() if t in plan})
    count = stage_count(plan)
    cur = df.mapInPandas(_stage_fn(0, tasks, plan, parts, opts, t0, rate, lo, hi, route,
                                   sinks_dir, key), SCHEMA)
    for stage in range(1, count):
        cur = cur.repartition(n, "route").mapInPandas(
            _stage_fn(stage, tasks, plan, parts, opts, t0, rate, lo, hi, route, sinks_dir,
                      key), SCHEMA)
    rows = cur.collect()
    new: list[dict[str, Any]] = [{} for _ in range(n)]
    res = SplitResult({}, stages=count)
    per_stage: dict[int, dict[int, float]] = {}
    for _, dest, kind, name, body in rows:
        p = int(dest)
        if kind == "state":
            new[p].update(json.loads(bytes(body)))
        elif kind == "sink":
            res.sinks[(name, p)] = bytes(body).decode()
        elif kind == "stat":
            st = json.loads(bytes(body))
            st["partition"], st["stage"] = p, int(name)
            res.stats.append(st)
            for tid, c in st["cpu"].items():
                res.cpu[tid] = res.cpu.get(tid, 0.0) + c
            for tid, k in st["counts"].items():
                res.counts[tid] = res.counts.get(tid, 0) + int(k)
            res.events += int(st["events"])
            res.ranges.update({int(r): int(k) for r, k in st["ranges"].items()})
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
