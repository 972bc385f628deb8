"""Event accounting: what every submitted sink should have output, and what it did output.

The reference is a pure-Python execution of the run's running tasks (from the runtime's ledger)
over the same deterministic source events, one source ``seq`` at a time, each task taking the
events with ``start <= seq < end`` (its join and end cuts), parents' outputs in parent order.
That is exactly the guarantee the runtime gives (see :mod:`reuse.runtime.engines.partial.engine`): a submitted
DAG's sink outputs, over its window ``[J, R)``, are those of its running sink task in this
execution. Reused stateful tasks are warm: they started at their own, earlier, join point.

A sink's outputs are compared as multisets of ``(seq, digest)``: ``lost`` counts expected
outputs missing, ``duplicated`` counts outputs seen more often than expected (or not expected).

k-safety. A replicated sink's consumers read every copy's records and de-duplicate them by
``(seq, digest)``: what a dataflow observes is the union (the larger count of each key) of its
running sink's records and its replicas'. So a replica that wrote anything the reference does
not is counted as duplicated, and a dead copy's missing records are not lost while another copy
has them. :func:`replica_account` checks each replica on its own over its own window.

Re-plans (issue 36). A remove may re-plan other dataflows: their sinks are then computed by a
new running task from the cut on (:mod:`reuse.runtime.common.sink_history`), which continues
its predecessor's state (``takes_over``), plus the wide tasks' it ``absorbs``. The reference
starts such a task exactly so (:func:`reference_records`), and a dataflow's outputs are read
from each of its sink tasks over that task's part of the window only.
"""

from __future__ import annotations

import bisect
import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import build_task, digest, parents_first, source_event
from reuse.runtime.common.files import safe_name
from reuse.runtime.common.planners import stream_events_name
from reuse.runtime.common.sink_history import sink_segments
from reuse.runtime.rows import StepRow

__all__ = ["parents_first", "reference_records", "observed_records", "dag_outputs", "account",
           "leaked_records", "replica_account", "copies", "charge_to_steps"]

Key = tuple[int, str]


def reference_records(ledger: Mapping[str, Any], upto: int) -> dict[str, Counter[Key]]:
    """Running sink task -> multiset of ``(seq, digest)`` it should output for ``seq < upto``."""
    tasks = ledger["tasks"]
    order = [t for t in parents_first({t: i["parents"] for t, i in tasks.items()})
             if tasks[t]["kind"] != "source"]
    if not order:
        return {}
    src_of: dict[str, tuple[str, str]] = {}
    for t in tasks.values():
        if t["kind"] == "source":
            src_of[t["topic"]] = (stream_events_name(t["topic"].split(":", 1)[1]), t["type"])
    opts = ledger["opts"]
    built = {t: build_task(tasks[t]["type"], tasks[t]["config"], opts) for t in order}
    lo = min(int(tasks[t]["start"]) for t in order)
    recorded = {rid for rid in _sink_tasks(ledger) if tasks[rid]["kind"] == "task"}
    handed: dict[int, list[str]] = {}  # seq -> the tasks a re-plan starts there (issue 36)
    for t in order:
        if tasks[t].get("takes_over"):
            handed.setdefault(int(tasks[t]["start"]), []).append(t)
    out: dict[str, Counter[Key]] = {t: Counter() for t in order
                                    if tasks[t]["kind"] == "sink" or t in recorded}
    delivered = _recorded(ledger)
    for seq in range(lo, upto):
        if delivered is None:
            src_ev = {topic: source_event(name, typ, seq, int(ledger["t0"]),
                                          float(ledger["rate"]), ledger["data_dir"])
                      for topic, (name, typ) in src_of.items()}
        else:  # a broker-fed run: the events the bus recorded (a seq never delivered: none)
            src_ev = {topic: ev for topic, (name, _) in src_of.items()
                      if (ev := delivered.get(name, {}).get(seq)) is not None}
        if seq in handed:
            _continue(handed[seq], tasks, built)
        outs: dict[str, list[dict[str, Any]]] = {}
        for t in order:
            info = tasks[t]
            end = info["end"]
            if seq < int(info["start"]) or (end is not None and seq >= int(end)):
                outs[t] = []
                continue
            inputs: list[dict[str, Any]] = []
            for p in info["parents"]:
                if tasks[p]["kind"] == "source":
                    if tasks[p]["topic"] in src_ev:
                        inputs.append(json.loads(json.dumps(src_ev[tasks[p]["topic"]])))
                else:
                    inputs.extend(outs[p])
            res: list[dict[str, Any]] = []
            for ev in inputs:
                r = built[t].process(ev)
                if info["kind"] == "sink":
                    out[t][(ev["seq"], digest(ev))] += 1
                else:
                    r = json.loads(json.dumps(r))
                    res.extend(r)
                    if t in recorded:
                        for o in r:
                            out[t][(o["seq"], digest(o))] += 1
            outs[t] = res
    return out


def _continue(started: list[str], tasks: Mapping[str, Any], built: dict[str, Any]) -> None:
    """Give the tasks a re-plan starts at this ``seq`` the state their predecessors have now
    (before the ``seq``), plus the states of the wide tasks they absorb, by the task layer's
    own combine (:meth:`reuse.tasks.base.Task.absorb`). Written here, not shared with the
    engine, so that the engine's seeding is checked against it; a predecessor started at the
    same ``seq`` is continued first."""
    todo = list(started)

    def go(t: str) -> None:
        todo.remove(t)
        old = tasks[t]["takes_over"]
        if old in todo:
            go(old)
        task = built[t]
        if not getattr(task, "stateful", False) or old not in built:
            return
        state = built[old].get_state()
        for w in tasks[t].get("absorbs") or ():
            state = type(task).absorb(state, built[w].get_state())
        task.set_state(state)

    while todo:
        go(todo[0])


def _sink_tasks(ledger: Mapping[str, Any]) -> set[str]:
    """Every running task that computed some dataflow's sink (re-plans included)."""
    return {rid for d in ledger["dags"].values() for segs in sink_segments(d).values()
            for rid, _, _ in segs}


def _span(lo: int, hi: int | None, upto: int) -> tuple[int, int]:
    return lo, upto if hi is None else min(hi, upto)


def _recorded(ledger: Mapping[str, Any]) -> dict[str, dict[int, dict[str, Any]]] | None:
    """The source events of a broker-fed run (``None``: the run replayed its sources)."""
    src = ledger.get("source") or {}
    if src.get("kind", "replay") == "replay":
        return None
    from reuse.runtime.dataplane.broker_feed import load_recorded

    if not src.get("recorded"):
        raise SparkRuntimeError("a broker-fed run's ledger names no recorded source events")
    return load_recorded(src["recorded"])


def observed_records(root: str | os.PathLike[str], sink_task: str) -> list[dict[str, Any]]:
    """The sink records the runtime wrote for one running sink task (all batches)."""
    d = Path(root) / "sinks" / safe_name(sink_task)
    recs: list[dict[str, Any]] = []
    if not d.is_dir():
        return recs
    for name in sorted(os.listdir(d)):
        if name.endswith(".jsonl") and not name.startswith("."):
            for line in (d / name).read_text(encoding="utf-8").splitlines():
                if line:
                    recs.append(json.loads(line))
    return recs


def copies(ledger: Mapping[str, Any], rid: str) -> list[str]:
    """A running task and every replica it ever had (k-safety), the task first."""
    reps = ledger.get("replicas") or {}
    return [rid] + sorted(r for r, info in reps.items() if info["of"] == rid)


def dag_outputs(root: str | os.PathLike[str], ledger: Mapping[str, Any], upto: int,
                ) -> dict[str, dict[str, Counter[Key]]]:
    """Submitted DAG -> sink -> multiset of ``(seq, digest)`` observed in its window."""
    cache: dict[str, list[dict[str, Any]]] = {}
    out: dict[str, dict[str, Counter[Key]]] = {}
    for dag, info in ledger["dags"].items():
        per: dict[str, Counter[Key]] = {}
        for sink, segs in sink_segments(info).items():
            seen: Counter[Key] = Counter()
            for rid, a, b in segs:  # each running sink task over its own sub-window
                lo, hi = _span(a, b, upto)
                mine: Counter[Key] = Counter()
                for copy in copies(ledger, rid):  # de-duplicated by (seq, digest) across copies
                    if copy not in cache:
                        cache[copy] = observed_records(root, copy)
                    mine |= Counter((r["q"], r["d"]) for r in cache[copy] if lo <= r["q"] < hi)
                seen += mine
            per[sink] = seen
        out[dag] = per
    return out


def account(root: str | os.PathLike[str], ledger: Mapping[str, Any], upto: int,
            ref: Mapping[str, Counter[Key]] | None = None) -> dict[str, dict[str, Any]]:
    """Per submitted DAG: expected, observed, lost and duplicated outputs over its window
    (``ref``: :func:`reference_records` of the same ledger, when the caller has it)."""
    ref = ref if ref is not None else reference_records(ledger, upto)
    seen = dag_outputs(root, ledger, upto)
    report: dict[str, dict[str, Any]] = {}
    for dag, info in ledger["dags"].items():
        lo = int(info["J"])
        hi = min(int(info["R"]), upto) if info["R"] is not None else upto
        exp_total = obs_total = lost = dup = 0
        lost_keys: list[Key] = []
        lost_seqs: list[int] = []
        dup_seqs: list[int] = []
        for sink, segs in sink_segments(info).items():
            exp: Counter[Key] = Counter()
            for rid, a, b in segs:  # after a re-plan, each running sink task over its part
                x, y = _span(a, b, upto)
                exp += Counter({k: n for k, n in ref.get(rid, Counter()).items()
                                if x <= k[0] < y})
            obs = seen[dag][sink]
            exp_total += sum(exp.values())
            obs_total += sum(obs.values())
            missing = exp - obs
            lost += sum(missing.values())
            dup += sum((obs - exp).values())
            lost_keys += sorted(missing)[:5]
            lost_seqs += [k[0] for k, n in missing.items() for _ in range(n)]
            dup_seqs += [k[0] for k, n in (obs - exp).items() for _ in range(n)]
        report[dag] = {"expected": exp_total, "observed": obs_total, "lost": lost,
                       "duplicated": dup, "window": [lo, hi], "lost_sample": lost_keys,
                       "lost_seqs": lost_seqs, "duplicated_seqs": dup_seqs}
    return report


def leaked_records(root: str | os.PathLike[str], ledger: Mapping[str, Any], upto: int,
                   ) -> dict[str, list[int]]:
    """Recorded task -> ``seq`` of every output it wrote outside its own window ``[start, end)``.

    :func:`account` cuts outputs to each DAG's window before counting, so a paused or stopped
    task that kept emitting after its end cut would go unseen there; this looks at the task's
    own window instead. Every engine must leave it empty.
    """
    tasks = ledger["tasks"]
    recorded = _sink_tasks(ledger)
    out: dict[str, list[int]] = {}
    for rid in sorted(recorded):
        info = tasks[rid]
        lo = int(info["start"])
        hi = upto if info["end"] is None else min(int(info["end"]), upto)
        bad = [int(r["q"]) for r in observed_records(root, rid) if not lo <= r["q"] < hi
               and r["q"] < upto]
        if bad:
            out[rid] = bad
    return out


def replica_account(root: str | os.PathLike[str], ledger: Mapping[str, Any], upto: int,
                    ref: Mapping[str, Counter[Key]] | None = None,
                    ) -> dict[str, dict[str, Any]]:
    """Per recorded replica (k-safety): its own records over its own window ``[start, end)``
    against its primary's reference outputs there. A replica seeded with the wrong state, or
    started at the wrong ``seq``, shows here even while its primary's records hide it."""
    reps = ledger.get("replicas") or {}
    recorded = _sink_tasks(ledger)
    ref = ref if ref is not None else reference_records(ledger, upto)
    out: dict[str, dict[str, Any]] = {}
    for r, info in sorted(reps.items()):
        if info["of"] not in recorded:
            continue
        lo = int(info["start"])
        hi = upto if info["end"] is None else min(int(info["end"]), upto)
        exp = Counter({k: n for k, n in ref.get(info["of"], Counter()).items()
                       if lo <= k[0] < hi})
        obs = Counter((x["q"], x["d"]) for x in observed_records(root, r) if x["q"] < upto)
        out[r] = {"of": info["of"], "window": [lo, hi], "expected": sum(exp.values()),
                  "observed": sum(obs.values()), "lost": sum((exp - obs).values()),
                  "duplicated": sum((obs - exp).values())}
    return out


def charge_to_steps(rows: Sequence[StepRow], marks: Sequence[int], *,
                    lost: Iterable[int], duplicated: Iterable[int]) -> None:
    """Set each step's ``lost`` and ``duplicated``: an output is charged to the step its
    source ``seq`` fell in (step ``i`` holds the ``seq`` from ``marks[i]`` to the next mark;
    a ``seq`` before the first mark is the first step's). The same for every driver.

    >>> rows = [{}, {}]
    >>> charge_to_steps(rows, [0, 10], lost=[3, 12, 15], duplicated=[-1])
    >>> rows
    [{'lost': 1, 'duplicated': 1}, {'lost': 2, 'duplicated': 0}]
    """
    def counts(seqs: Iterable[int]) -> list[int]:
        n = [0] * len(rows)
        for s in seqs:
            n[max(0, bisect.bisect_right(marks, s) - 1)] += 1
        return n

    for r, n_lost, n_dup in zip(rows, counts(lost), counts(duplicated), strict=True):
        r["lost"], r["duplicated"] = n_lost, n_dup
