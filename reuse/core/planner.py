"""Replaying a trace through the manager, without a runtime: the planner-level figures.

Each step records what Figure 2 plots (running tasks, Default vs Reuse) and what Figure 4 needs
(how many running tasks serve 1, 2, 3, ... submitted DAGs at that step). Steps have equal length
(the paper's 1-minute step), so time-weighting a histogram is summing it over steps.
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reuse.core.dataflow import Dataflow
from reuse.core.invariants import assert_invariants
from reuse.core.manager import Manager
from reuse.core.plan import PlanDelta
from reuse.core.traces import Op, check_trace

__all__ = ["StepRecord", "replay", "write_csv", "write_table", "reuse_histogram", "CSV_COLUMNS"]

CSV_COLUMNS = ["step", "op", "dag", "default_tasks", "reuse_tasks", "running_dags",
               "submitted_dags", "started", "stopped", "reused", "reuse_counts"]


@dataclass(frozen=True)
class StepRecord:
    """The system after one operation of a trace."""

    step: int
    op: str
    dag: str
    default_tasks: int
    reuse_tasks: int
    running_dags: int
    submitted_dags: int
    started: int
    stopped: int
    reused: int
    reuse_counts: Mapping[int, int] = field(default_factory=dict)  # users -> running tasks

    def row(self) -> dict[str, Any]:
        d = {c: getattr(self, c) for c in CSV_COLUMNS if c != "reuse_counts"}
        d["reuse_counts"] = json.dumps({str(k): v for k, v in sorted(self.reuse_counts.items())})
        return d


def replay(flows: Mapping[str, Dataflow], ops: Sequence[Op], *, check: bool = True,
           manager: Manager | None = None,
           on_step: Callable[[StepRecord, PlanDelta], None] | None = None) -> list[StepRecord]:
    """Run ``ops`` through a manager, checking the invariants after every step if ``check``.

    The trace is checked first (unknown ids, double submits, removing absent DAGs), so a bad
    trace fails before the first operation.
    """
    check_trace(ops, flows)
    m = manager if manager is not None else Manager()
    out = []
    for step, op in enumerate(ops, start=1):
        delta = m.submit(flows[op.dag]) if op.op == "submit" else m.remove(op.dag)
        if check:
            assert_invariants(m)
        rec = StepRecord(step, op.op, op.dag, m.default_task_count, m.task_count,
                         m.running_dag_count, len(m.submitted), len(delta.start),
                         len(delta.stop), len(delta.reused),
                         dict(Counter(m.reuse_counts().values())))
        out.append(rec)
        if on_step is not None:
            on_step(rec, delta)
    return out


def reuse_histogram(records: Iterable[StepRecord], max_bin: int = 6) -> dict[str, float]:
    """Figure 4: the fraction of running task-time whose task served ``[k, k+1)`` DAGs.

    Bins ``"1"`` .. ``str(max_bin - 1)`` and ``f"{max_bin}+"``; fractions sum to 1 (the paper
    plots all bins but the first).
    """
    total = 0
    bins: Counter[str] = Counter()
    for rec in records:
        for users, n in rec.reuse_counts.items():
            key = str(users) if users < max_bin else f"{max_bin}+"
            bins[key] += n
            total += n
    keys = [str(k) for k in range(1, max_bin)] + [f"{max_bin}+"]
    return {k: (bins[k] / total if total else 0.0) for k in keys}


def write_csv(records: Iterable[StepRecord], path: str | Path) -> None:
    """Write the per-step CSV atomically (a failed run leaves no half-written file)."""
    write_table(path, CSV_COLUMNS, (rec.row() for rec in records))


def write_table(path: str | Path, columns: Sequence[str], rows: Iterable[Mapping[str, Any]],
                ) -> None:
    """Write dict rows as CSV through a temporary file renamed into place (atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns))
        w.writeheader()
        for row in rows:
            w.writerow(row)
    os.replace(tmp, path)
