"""The floor: the same task code over the same events in one plain Python process, no Spark.

No engine can run these tasks for less CPU than this loop does, so every runtime cost is judged
against it (``benchmarks/limit.py``): a saving the floor does not show is overhead saved, not
work. The loop builds each running task once, generates each source event once per source task
(Default runs every dataflow's own sources, as the paper's baseline did; Reuse shares them) and
pushes one source ``seq`` at a time through the tasks parents-first. It records nothing: sink
tasks run their own code, but no digest or record is made, since that is the runtime's
accounting, not the dataflows' work.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reuse.core.dataflow import Dataflow
from reuse.core.manager import Manager
from reuse.core.matching import MatchPolicy
from reuse.runtime.common.execution import build_task, parents_first, source_event
from reuse.runtime.common.planners import ReusePlanner, make_planner

__all__ = ["FloorResult", "floor_run"]


@dataclass(frozen=True)
class FloorResult:
    """CPU of the plain loop: ``cpu_s`` over ``seqs`` source ``seq`` (one event per source
    stream each), so ``cores(rate) = cpu_s / seqs * rate``."""

    shares: bool
    tasks: int
    sources: int
    seqs: int
    cpu_s: float
    outputs: int

    def cores(self, rate: float) -> float:
        return self.cpu_s / self.seqs * rate

    @property
    def ms_per_seq(self) -> float:
        return 1000 * self.cpu_s / self.seqs


def floor_run(flows: Sequence[Dataflow], *, shares: bool, seqs: int, start: int = 0,
              data_dir: str = "", pi_iterations: int = 1600, rate: float = 10.0,
              match: MatchPolicy | None = None) -> FloorResult:
    """Run every dataflow of ``flows`` (all present at once, as at a SEQ peak) over
    ``[start, start + seqs)``; with ``shares``, merged under ``match`` (default: exact), so
    a containment residual reads its wide task's output.

    Examples
    --------
    >>> from reuse.core.dataflow import parse_dataflow
    >>> f = parse_dataflow({"id": "a", "tasks": [{"id": "s", "type": "S", "config": "source"},
    ...     {"id": "x", "type": "X", "config": {}}, {"id": "o", "type": "Sink",
    ...     "config": "sink"}], "streams": [["s", "x"], ["x", "o"]]})
    >>> r = floor_run([f], shares=True, seqs=5, pi_iterations=10)
    >>> (r.tasks, r.sources, r.outputs)
    (2, 1, 5)
    """
    planner = (ReusePlanner(Manager(match=match)) if shares and match is not None
               else make_planner(shares))
    tasks: dict[str, Any] = {}
    for f in flows:
        for new in planner.submit(f).start:
            tasks[new.id] = new
    order = parents_first({t: tasks[t].parents for t in tasks})
    opts = {"data_dir": data_dir, "pi_iterations": pi_iterations}
    built = {t: build_task(tasks[t].type, tasks[t].config, opts) for t in order
             if tasks[t].kind != "source"}
    sources = [t for t in order if tasks[t].kind == "source"]
    work = [(t, tasks[t].parents, built[t], tasks[t].kind == "sink") for t in order
            if tasks[t].kind != "source"]
    outputs = 0
    c0 = time.process_time()
    for seq in range(start, start + seqs):
        outs: dict[str, list[dict[str, Any]]] = {
            s: [source_event(tasks[s].stream, tasks[s].type, seq, 0, rate, data_dir)]
            for s in sources}
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
    cpu = time.process_time() - c0
    return FloorResult(shares, len(built), len(sources), seqs, cpu, outputs)
