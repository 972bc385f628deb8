"""What the live engine reports, as plain data: per task, per dataflow, cores over time.

Pure functions over what the shared query already writes (``batches.jsonl``: per batch, each
task's CPU seconds and the events it took; sink records: each output's emit and output time),
so they are tested without Spark. :class:`reuse.live.engine.Engine` feeds them.

Choices:

- **Rates are over a recent window** (``window_s``, default 10 s): a task's events/s and cores
  are its events and CPU seconds in the batches that *started* in the window, divided by the
  window's span as the batches cover it. A number over the whole run would hide a merge.
- **CPU share** is a task's share of all task CPU in the window (what the shards spent), and
  the **bill** of each user is the task's cores split equally between its users, the rule the
  live bills use (:mod:`reuse.analysis.billing_live`).
- **Latency** per dataflow is output time minus the source event's emit time (``ts``) over its
  sinks' most recent records, so with a broker it includes the way through Mosquitto and the
  bus.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reuse.runtime.common.files import safe_name
from reuse.runtime.measure import percentile

__all__ = ["task_table", "recent_records", "first_records", "latency", "cores_series"]


def task_table(batches: Sequence[Mapping[str, Any]], tasks: Mapping[str, Mapping[str, Any]],
               users: Mapping[str, Sequence[str]], *, now_ms: float, window_s: float = 10.0,
               ) -> list[dict[str, Any]]:
    """One row per live task: ``id, type, kind, shard, users, reuse, events_per_s, cores,
    cpu_share, bill_per_user``.

    ``tasks``: runtime task -> ``{"type", "kind", "shard"}`` (the deployment's live tasks);
    ``users``: runtime task -> the submitted dataflows it serves.

    Examples
    --------
    >>> b = [{"ms": 0, "wall_s": 1.0, "task_cpu_s": {"a": 0.5, "b": 1.5},
    ...       "task_events": {"a": 10, "b": 10}},
    ...      {"ms": 1000, "wall_s": 1.0, "task_cpu_s": {"a": 0.5, "b": 1.5},
    ...       "task_events": {"a": 10, "b": 10}}]
    >>> t = {"a": {"type": "P", "kind": "task", "shard": 0},
    ...      "b": {"type": "Q", "kind": "sink", "shard": 1}}
    >>> rows = task_table(b, t, {"a": ["D1", "D2"], "b": ["D2"]}, now_ms=2000)
    >>> [(r["id"], r["events_per_s"], r["cores"], r["cpu_share"], r["bill_per_user"])
    ...  for r in rows]
    [('a', 10.0, 0.5, 0.25, 0.25), ('b', 10.0, 1.5, 0.75, 1.5)]
    """
    recent = [b for b in batches if float(b.get("ms", 0)) >= now_ms - window_s * 1000]
    if recent:
        first = min(float(b["ms"]) for b in recent)
        last = max(float(b["ms"]) + 1000 * float(b.get("wall_s", 0)) for b in recent)
        span = max((last - first) / 1000, 1e-9)
    else:
        span = window_s
    cpu: dict[str, float] = {}
    events: dict[str, int] = {}
    for b in recent:
        for t, c in (b.get("task_cpu_s") or {}).items():
            cpu[t] = cpu.get(t, 0.0) + float(c)
        for t, n in (b.get("task_events") or {}).items():
            events[t] = events.get(t, 0) + int(n)
    total = sum(cpu.get(t, 0.0) for t in tasks)
    rows = []
    for tid in sorted(tasks):
        info = tasks[tid]
        who = tuple(sorted(users.get(tid, ())))
        cores = cpu.get(tid, 0.0) / span
        rows.append({"id": tid, "type": info.get("type"), "kind": info.get("kind"),
                     "shard": info.get("shard"), "users": who, "reuse": len(who),
                     "events_per_s": round(events.get(tid, 0) / span, 3),
                     "cores": round(cores, 6),
                     "cpu_share": round(cpu.get(tid, 0.0) / total, 6) if total > 0 else 0.0,
                     "bill_per_user": round(cores / len(who), 6) if who else 0.0})
    return rows


def recent_records(sinks_dir: str | os.PathLike[str], task: str, files: int = 5,
                   ) -> list[dict[str, Any]]:
    """The sink records of a task's last ``files`` batches, in ``seq`` order (each batch writes
    one file under a name that sorts by batch, see
    :func:`~reuse.runtime.common.files.write_records`)."""
    d = Path(sinks_dir) / safe_name(task)
    if not d.is_dir():
        return []
    out: list[dict[str, Any]] = []
    for f in sorted(p for p in d.iterdir() if p.suffix == ".jsonl")[-files:]:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line))
    out.sort(key=lambda r: (r["q"], r["o"]))
    return out


def first_records(sinks_dir: str | os.PathLike[str], task: str, since: int,
                  ) -> list[dict[str, Any]]:
    """The records of the first batch file of a task holding an output with ``seq >= since``
    (a reused sink wrote earlier outputs for its first user)."""
    d = Path(sinks_dir) / safe_name(task)
    if not d.is_dir():
        return []
    for f in sorted(p for p in d.iterdir() if p.suffix == ".jsonl"):
        recs = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()
                if line.strip()]
        recs = [r for r in recs if int(r["q"]) >= since]
        if recs:
            return recs
    return []


def latency(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``n``, ``p50_ms``, ``p99_ms`` of output time minus emit time over sink records.

    >>> latency([{"o": 110.0, "ts": 100}, {"o": 130.0, "ts": 100}, {"o": 5.0, "ts": None}])
    {'n': 2, 'p50_ms': 10.0, 'p99_ms': 30.0}
    """
    lat = [float(r["o"]) - float(r["ts"]) for r in records if r.get("ts") is not None]
    p50, p99 = percentile(lat, 50), percentile(lat, 99)
    return {"n": len(lat), "p50_ms": None if p50 is None else round(p50, 1),
            "p99_ms": None if p99 is None else round(p99, 1)}


def cores_series(samples: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Cores over time from cumulative CPU samples ``(wall s, CPU s)``: one point per interval,
    at its end.

    >>> cores_series([(0.0, 0.0), (2.0, 3.0), (4.0, 4.0)])
    [(2.0, 1.5), (4.0, 0.5)]
    """
    return [(t1, round((c1 - c0) / (t1 - t0), 4))
            for (t0, c0), (t1, c1) in zip(samples, samples[1:], strict=False) if t1 > t0]
