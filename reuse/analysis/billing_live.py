"""Bills from a live run: the CPU each task really used, per step, split by the Shapley rule.

The shared-query engine (``--merge inplace``) times every task in every batch and writes it to
``<run>/batches.jsonl`` (``task_cpu_s``, with the batch's source ``seq`` range ``[lo, hi)``);
its ledger (``<run>/ledger.json``) has each submit's and remove's cut and each dataflow's
image: the running tasks it started or reused. From those two files:

- A *step* is the span of source ``seq`` from one operation's cut to the next (the last ends
  at the last batch), as ``reuse plan`` counts steps, one per operation.
- A batch's CPU for a task is spread over the steps that the ``seq`` it took (its window
  ``[start, end)`` within the batch's ``[lo, hi)``) overlaps, in proportion to the ``seq``
  shared with each; so every second a task spent is billed to a step in which it had users.
- The users of a task at a step are the dataflows present after that step's operation whose
  image holds the task. Each task's cost is split equally among them: the Shapley value of the
  step's cost game (:mod:`reuse.analysis.billing`).

What the bill leaves out is the engine's own overhead (the driver, the JVM, batch scheduling,
sink records outside the task loop): the run's CSV measures the whole (``cores``), and the
difference is reported next to the bills, not hidden in them.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from reuse.analysis.billing import Charge, StepCosts
from reuse.core.errors import ReuseError

__all__ = ["live_steps"]


def _read(run: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    ledger_path, batches_path = run / "ledger.json", run / "batches.jsonl"
    if not ledger_path.is_file():
        raise ReuseError("is not a live run directory (no ledger.json)", file=str(run))
    try:
        ledger = json.loads(ledger_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ReuseError(f"ledger is not JSON ({e.msg}, line {e.lineno})",
                         file=str(ledger_path)) from None
    if ledger.get("engine") != "inplace" or not batches_path.is_file():
        raise ReuseError("has no per-task CPU: only the shared-query engine (reuse run "
                         "--merge inplace) records it", file=str(run))
    batches = []
    for n, line in enumerate(batches_path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            batches.append(json.loads(line))
        except json.JSONDecodeError:
            raise ReuseError(f"line {n} is not JSON", file=str(batches_path)) from None
    return ledger, batches


def live_steps(run: str | Path) -> list[StepCosts]:
    """Per step of a live run: the present dataflows and each task's measured CPU seconds.

    Raises
    ------
    ReuseError
        Not a run directory, not a shared-query run, or a corrupt file (named).
    """
    ledger, batches = _read(Path(run))
    ops = [e for e in ledger["log"] if e["event"] in ("submit", "remove")]
    if not ops:
        return []
    cuts = [int(e["J"] if e["event"] == "submit" else e["R"]) for e in ops]
    # the images: every running task a present dataflow started or reused
    incarnations = sorted(ledger["dags"].items(), key=lambda kv: int(kv[1]["J"]))
    users_at: list[dict[str, set[str]]] = []
    present_at: list[frozenset[str]] = []
    for cut in cuts:
        users: dict[str, set[str]] = defaultdict(set)
        present = set()
        for _inst, d in incarnations:
            if int(d["J"]) <= cut and (d["R"] is None or int(d["R"]) > cut):
                present.add(d["dag"])
                for t in [*d.get("tasks", []), *d.get("reused", [])]:
                    users[t].add(d["dag"])
        users_at.append(users)
        present_at.append(frozenset(present))
    cpu: list[dict[str, float]] = [defaultdict(float) for _ in ops]
    tasks = ledger["tasks"]
    for b in batches:
        for task, c in b.get("task_cpu_s", {}).items():
            # the seq the task really took in this batch: its own window within [lo, hi)
            info = tasks.get(task, {})
            lo = max(int(b["lo"]), int(info.get("start", b["lo"])))
            end = info.get("end")
            hi = int(b["hi"]) if end is None else min(int(b["hi"]), int(end))
            if hi <= lo:
                continue
            k = max(0, bisect.bisect_right(cuts, lo) - 1)
            while k < len(ops):
                a = max(lo, cuts[k])
                z = hi if k + 1 == len(ops) else min(hi, cuts[k + 1])
                if z > a:
                    cpu[k][task] += c * (z - a) / (hi - lo)
                if k + 1 == len(ops) or cuts[k + 1] >= hi:
                    break
                k += 1
    steps = []
    for k in range(len(ops)):
        charges = [Charge(task, c, frozenset(users_at[k][task]))
                   for task, c in sorted(cpu[k].items()) if users_at[k].get(task) and c > 0]
        steps.append(StepCosts(k + 1, present_at[k], tuple(charges)))
    return steps
