"""Figure 4 both ways: how much running task-time served more than one DAG.

The paper (5.3) plots "the time-weighted fraction of all running tasks over all steps that were
reused by [1, 2) DAGs, [2, 3) DAGs, etc." and reads it as "11% of all tasks are reused by > 1
and <= 2 dataflows, while another 4% are reused by > 2". Half-open bins and "> 1 and <= 2" only
make sense for a number that need not be an integer, so we read it as:

**the paper's reading** (:func:`time_averaged_histogram`)
    each running task's reuse count (how many submitted DAGs it serves, ``|users|``) averaged
    over its running time; the task goes into bin ``[k, k+1)`` of that average, weighted by its
    running time (steps, all of equal length). A task that stops and later starts again is two
    tasks (two Storm deployments).

**ours** (:func:`integer_histogram`, as :func:`reuse.core.planner.reuse_histogram`)
    every step, each running task counts once in the bin of its integer reuse count then.

Both weigh the same task-steps, so their bins sum to 1 and the mean reuse count agrees (the
weighted mean of per-task averages is the mean of per-step counts). They differ in how they
split it: a task that served 1 DAG for half its life and 2 for the other half is 50% "2" in
ours and wholly in ``[1, 2)`` in the paper's reading (but "reused", average > 1).

The paper's figures (text of 5.3/5.4; the panels are lost in the extraction, their letters follow
Figure 2's order a-f): 4a OPMW SEQ 11% in (1, 2] + 4% above 2; 4b/4c OPMW RW1/RW2 14% "used by
more than one DAG"; 4d RIoT SEQ 24% "used by more than one dataflow"; 4e/4f RIoT RW1/RW2 8%
"used by 2 or more dataflows". :func:`shares` gives, for each reading, the share that compares
with those: ``> 1`` (paper's reading) and ``>= 2`` (ours; the same thing for integers), and the
split at 2.

Examples
--------
A task serving 1, 2, 2, 1 DAGs over four steps, beside one serving 1 DAG for four steps:

>>> series = [{"t": 1, "u": 1}, {"t": 2, "u": 1}, {"t": 2, "u": 1}, {"t": 1, "u": 1}]
>>> integer_histogram(series, max_bin=3)
{'1': 0.75, '2': 0.25, '3+': 0.0}
>>> time_averaged_histogram(series, max_bin=3)   # t averages 1.5: bin [1, 2)
{'1': 1.0, '2': 0.0, '3+': 0.0}
>>> shares(series)["avg_gt1"], shares(series)["int_2plus"]
(0.5, 0.25)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reuse.analysis.paper import PAPER
from reuse.core.dataflow import Dataflow
from reuse.core.manager import Manager
from reuse.core.plan import PlanDelta
from reuse.core.planner import StepRecord, replay
from reuse.core.traces import Op

__all__ = ["PANELS", "TaskLife", "replay_users", "lifetimes", "integer_histogram",
           "time_averaged_histogram", "shares", "figure4_row"]

#: (workload, trace) -> the paper's Figure 4 panel (4e/4f inferred from Figure 2's order)
PANELS: Mapping[tuple[str, str], str] = {
    ("opmw", "seq"): "4a", ("opmw", "rw1"): "4b", ("opmw", "rw2"): "4c",
    ("riot", "seq"): "4d", ("riot", "rw1"): "4e", ("riot", "rw2"): "4f"}

#: per step (after each op): running task id -> number of submitted DAGs it serves
UsersSeries = Sequence[Mapping[str, int]]


@dataclass(frozen=True)
class TaskLife:
    """One running task from its start to its stop: ``steps`` steps, ``mean_users`` on average."""

    task: str
    start: int
    steps: int
    mean_users: float

    def __post_init__(self) -> None:
        if self.steps < 1 or self.mean_users < 1:
            raise ValueError(f"task {self.task}: steps {self.steps} and mean users "
                             f"{self.mean_users} must be >= 1")


def replay_users(flows: Mapping[str, Dataflow], ops: Sequence[Op], *, check: bool = False,
                 ) -> tuple[list[StepRecord], list[dict[str, int]]]:
    """Replay ``ops`` (:func:`reuse.core.planner.replay`) and keep every step's task -> users count."""
    manager = Manager()
    series: list[dict[str, int]] = []

    def on_step(_rec: StepRecord, _delta: PlanDelta) -> None:
        series.append(manager.reuse_counts())

    records = replay(flows, ops, check=check, manager=manager, on_step=on_step)
    return records, series


def lifetimes(series: UsersSeries) -> list[TaskLife]:
    """Cut the series into task lifetimes (runs of consecutive steps with the task running).

    >>> lifetimes([{"a": 1}, {"a": 3}, {}, {"a": 1}])
    [TaskLife(task='a', start=1, steps=2, mean_users=2.0), TaskLife(task='a', start=4, steps=1, mean_users=1.0)]
    """
    open_: dict[str, tuple[int, int, int]] = {}  # task -> (start step, steps, users summed)
    done: list[TaskLife] = []
    for step, counts in enumerate(series, start=1):
        for task in [t for t in open_ if t not in counts]:
            start, n, total = open_.pop(task)
            done.append(TaskLife(task, start, n, total / n))
        for task, users in counts.items():
            start, n, total = open_.get(task, (step, 0, 0))
            open_[task] = (start, n + 1, total + users)
    done.extend(TaskLife(t, s, n, tot / n) for t, (s, n, tot) in open_.items())
    return sorted(done, key=lambda life: (life.start, life.task))


def _bin(x: float, max_bin: int) -> str:
    k = int(x)  # floor for x >= 1: [k, k+1)
    return str(k) if k < max_bin else f"{max_bin}+"


def _keys(max_bin: int) -> list[str]:
    return [str(k) for k in range(1, max_bin)] + [f"{max_bin}+"]


def integer_histogram(series: UsersSeries, max_bin: int = 6) -> dict[str, float]:
    """Ours: fraction of task-steps whose task served ``k`` DAGs at that step (bins ``"1"`` ..
    ``f"{max_bin}+"``)."""
    bins: Counter[str] = Counter(_bin(u, max_bin) for counts in series for u in counts.values())
    total = sum(bins.values())
    return {k: bins[k] / total if total else 0.0 for k in _keys(max_bin)}


def time_averaged_histogram(series: UsersSeries, max_bin: int = 6) -> dict[str, float]:
    """The paper's reading: fraction of task-steps whose task's time-averaged reuse count lies
    in ``[k, k+1)`` (bin ``str(k)``; ``f"{max_bin}+"`` for ``[max_bin, inf)``)."""
    bins: Counter[str] = Counter()
    for life in lifetimes(series):
        bins[_bin(life.mean_users, max_bin)] += life.steps
    total = sum(bins.values())
    return {k: bins[k] / total if total else 0.0 for k in _keys(max_bin)}


def shares(series: UsersSeries) -> dict[str, float]:
    """The shares of task-time that compare with the paper's percentages.

    ``int_2plus`` (ours: count >= 2 at the step), ``int_2`` and ``int_3plus`` (its split at the
    paper's "<= 2"); ``avg_gt1`` (paper's reading: average > 1, "used by more than one DAG"),
    ``avg_1to2`` (1 < average <= 2) and ``avg_gt2``; ``avg_2plus`` (average >= 2: the bins
    ``[2, 3)`` and up, what the histogram shows right of its first bar).
    """
    steps = [u for counts in series for u in counts.values()]
    total = len(steps)
    lives = lifetimes(series)

    def frac(n: float) -> float:
        return n / total if total else 0.0

    return {
        "int_2plus": frac(sum(u >= 2 for u in steps)),
        "int_2": frac(sum(u == 2 for u in steps)),
        "int_3plus": frac(sum(u >= 3 for u in steps)),
        "avg_gt1": frac(sum(t.steps for t in lives if t.mean_users > 1)),
        "avg_1to2": frac(sum(t.steps for t in lives if 1 < t.mean_users <= 2)),
        "avg_gt2": frac(sum(t.steps for t in lives if t.mean_users > 2)),
        "avg_2plus": frac(sum(t.steps for t in lives if t.mean_users >= 2)),
    }


def figure4_row(workload: str, trace: str, series: UsersSeries) -> dict[str, Any]:
    """One row of the Figure 4 comparison: both readings' shares beside the paper's."""
    paper = PAPER.get((workload, trace), {})
    split = (f"{paper['reused_1to2']:.0%} + {paper['reused_gt2']:.0%}"
             if "reused_1to2" in paper else "")
    return {"workload": workload, "trace": trace, "panel": PANELS.get((workload, trace), ""),
            **shares(series), "paper_reused": paper.get("reused_2plus"), "paper_split": split}
