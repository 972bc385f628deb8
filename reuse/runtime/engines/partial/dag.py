"""A partial DAG: one streaming query whose tasks run together in one Python operator per batch.

Why one operator: Spark computes a fork inside a query once per branch and cannot share a
streaming subplan, so a sub-DAG whose tasks were separate Spark operators would recompute every
shared parent. Instead each micro-batch of the query's bus input goes through
``coalesce(1).mapInPandas(...)``: one Python worker runs the sub-DAG's tasks in topological order
(a fork's parent once), and returns the messages for the published topics, the sink records and
the new task states. The driver (``foreachBatch``) writes those out. Task CPU is spent in Spark's
Python workers; the driver only moves files.

Event order. A task receives, per batch, its parents' outputs concatenated in parent order and
stably sorted by source ``seq``: the same order whatever the batch boundaries, so a task fed
through the bus (Reuse) sees what it sees inside one query (Default). A stateful task with two or
more parents, one of them in another query, only takes events up to the query's high-water mark
(all inputs complete up to it) and holds the rest in its state until the slower input catches up.

Admission. Each task has a start cut ``J`` (its join point) in the spec and may get an end cut
``R`` through the control file; it processes events with ``J <= seq < R`` and nothing else. An
ended task stays deployed and skips work (the paper's pause). When every task has an end cut and
the high-water mark has passed the largest, the query is *drained*: it writes a final state and
goes quiet, so the runtime can stop it and a successor can take over the state.

State (the exactly-once argument). After a batch the driver writes the topic messages and sink
records under names fixed by ``(launch, batch id)`` and then the task states to
``<checkpoint>/tstate/<batch>.json``. A batch re-run after a crash or restart starts from the
state of the last batch before it and the same input offsets (from Spark's offset log), so it
recomputes the same outputs and overwrites the same names: nothing is lost or duplicated.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import is_stateful, task_kind
from reuse.runtime.common.files import read_json, write_json, write_records
from reuse.runtime.common.states import BatchStates
from reuse.runtime.common.window import SEQ, UNBOUNDED, run_window
from reuse.runtime.dataplane.bus import make_bus
from reuse.runtime.dataplane.frames import decode_frame, encode_frame

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

__all__ = ["run_batch", "PartialHandler"]


def run_batch(spec: Mapping[str, Any], control: Mapping[str, Any], state: Mapping[str, Any],
              messages: list[tuple[str, str, bytes]], now_ms: Callable[[], float] | None = None,
              ) -> dict[str, Any]:
    """Run the sub-DAG's tasks on one batch of bus messages ``(topic, key, frame)``.

    Pure apart from the clock used to stamp sink records. The tasks run in the one interpreter
    of a window (:func:`~reuse.runtime.common.window.run_window`), unbounded (the batch is what
    the bus delivered), each task's window its join cut ``J`` and end cut ``R``; what is the
    partial DAG's own is where inputs come from (its other tasks' outputs, bus topics, and the
    events a stateful join holds past the high-water mark). Returns ``{"topics": {topic:
    frame}, "sinks": {task: [record line]}, "state": new_state}``; the published frames are
    encoded here, in the worker, like the input frames are decoded here. A malformed input frame
    raises :class:`~reuse.runtime.dataplane.frames.FrameError` (naming its topic and key) before
    anything is returned, so the batch fails and its offsets are not committed: nothing is
    skipped.
    """
    opts = spec.get("opts", {})
    hw = dict(state.get("hw", {}))
    offsets = dict(state.get("offsets", {}))
    ext: dict[str, list[dict[str, Any]]] = {}
    for topic, key, data in sorted(messages, key=lambda m: (m[0], m[1])):
        frame = decode_frame(data, topic=topic, key=key)
        hw[topic] = max(hw.get(topic, -1), frame.hw)
        ext.setdefault(topic, []).extend(json.loads(v) for v in frame.values)
        offsets[topic] = max(offsets.get(topic, ""), key)
    in_topics = sorted(set(spec["topics"].values()))
    qhw = min((hw.get(t, -1) for t in in_topics), default=-1)
    ends = {k: int(v) for k, v in control.get("end", {}).items()}
    starts = spec.get("start", {})
    internal = {t["id"] for t in spec["tasks"]}
    held = dict(state.get("held", {}))
    recorded = set(control.get("record", []))
    tasks = [{**t, "kind": task_kind(t["type"], t["config"]), "start": int(starts.get(t["id"], 0)),
              "end": ends.get(t["id"]), "record": t["id"] in recorded} for t in spec["tasks"]]
    waits = {t["id"] for t in spec["tasks"]  # a stateful join with an input from another query
             if len(t["parents"]) > 1 and any(p not in internal for p in t["parents"])}

    def gather(t: Mapping[str, Any], outputs: Mapping[str, list[Any]]) -> list[Any]:
        tid = t["id"]
        merged: list[dict[str, Any]] = list(held.get(tid, []))
        for p in t["parents"]:
            merged.extend(outputs.get(p, []) if p in internal else ext.get(spec["topics"][p], []))
        merged.sort(key=SEQ)
        if tid in waits and merged and is_stateful(t, opts):
            held[tid] = [e for e in merged if e["seq"] > qhw]
            return [e for e in merged if e["seq"] <= qhw]
        held.pop(tid, None)
        return merged

    res = run_window(tasks, 0, UNBOUNDED, state.get("tasks", {}), {**opts, "fuse_predicates": False},
                     source=_no_source, gather=gather, now_ms=now_ms, skip_idle=True)
    limit = opts.get("limit")
    last = max(ends.values()) if ends else 0
    if limit is not None:
        last = min(last, int(limit))
    final = bool(ends) and all(t["id"] in ends for t in spec["tasks"]) and qhw >= last - 1
    topics = {}
    for tid in control.get("publish", []):
        if tid in internal:
            lines = [json.dumps(e, separators=(",", ":")) for e in res.outputs.get(tid, [])]
            # an ended task vouches for its topic only below its end cut: past it, a hand-over
            # successor (or nobody) writes the topic, and a consumer told more would count
            # itself done (or release a join's held events) before the successor's outputs
            hw_t = qhw if tid not in ends else min(qhw, ends[tid] - 1)
            topics[spec["name_of"][tid]] = encode_frame(hw_t, lines)
    new_state = {"tasks": {**state.get("tasks", {}), **res.states}, "hw": hw,
                 "offsets": offsets, "held": held, "qhw": qhw, "final": final}
    return {"topics": topics, "sinks": res.sinks, "state": new_state}


def _no_source(t: Mapping[str, Any], a: int, b: int) -> list[dict[str, Any]]:
    raise SparkRuntimeError("a partial DAG runs no source task: its sources are queries of "
                            "their own", task=str(t["id"]))


#: The worker's output rows: a published topic's frame, a sink's records, or the new state.
_WORKER_SCHEMA = "kind string, name string, text string, frame binary"


def _worker(spec: dict[str, Any], control: dict[str, Any], state: dict[str, Any],
            ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    def fn(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        import pandas as pd

        messages: list[tuple[str, str, bytes]] = []
        for f in frames:
            messages.extend(zip(f["topic"], f["key"], f["frame"], strict=True))
        res = run_batch(spec, control, state, messages)
        rows: list[tuple[str, str, str | None, bytes | None]]
        rows = [("topic", k, None, v) for k, v in res["topics"].items()]
        rows += [("sink", k, "\n".join(v) + "\n", None) for k, v in res["sinks"].items()]
        rows.append(("state", "", json.dumps(res["state"], separators=(",", ":")), None))
        yield pd.DataFrame(rows, columns=["kind", "name", "text", "frame"])

    return fn


class PartialHandler:
    """The ``foreachBatch`` function of one partial-DAG query (runs in the driver process).

    Parameters
    ----------
    spec
        ``name``, ``launch`` (int), ``tasks`` (topological ``{id, type, config, parents}``),
        ``topics`` (external parent -> input topic), ``name_of`` (task -> its output topic),
        ``start`` (task -> join cut), ``opts``, ``initial`` (predecessor final-state files
        whose task states this query takes over; waited for on the first batch).
    root
        The runtime directory (control files, sink records, task states).
    bus_spec
        Options of the bus messages are published to.
    """

    def __init__(self, spec: dict[str, Any], root: str, bus_spec: dict[str, str]) -> None:
        self.spec = spec
        self.root = Path(root)
        self.bus = make_bus(bus_spec)
        self.name = spec["name"]
        self.states = BatchStates(self.root / "ckpt" / self.name / "tstate")
        self.control_path = self.root / "control" / f"{self.name}.json"
        self.final_path = self.root / "final" / f"{self.name}.json"
        self.batches = 0
        self.busy_s = 0.0
        self.in_batch = False

    # -- state --------------------------------------------------------------------------------

    def _state_before(self, batch_id: int) -> dict[str, Any]:
        state = self.states.before(batch_id)
        return state if state is not None else self._initial_state()

    def _initial_state(self, timeout_s: float = 300.0) -> dict[str, Any]:
        state: dict[str, Any] = {"tasks": {}, "held": {}, "hw": {}, "offsets": {}}
        mine = {t["id"] for t in self.spec["tasks"]}
        deadline = time.time() + timeout_s
        for path in self.spec.get("initial", []):
            while not Path(path).exists():
                if time.time() > deadline:
                    raise SparkRuntimeError(f"predecessor state {path} never became final",
                                            task=self.name)
                time.sleep(0.05)
            prev = read_json(path)
            for k in ("tasks", "held"):
                state[k].update({t: v for t, v in prev.get(k, {}).items() if t in mine})
        return state

    # -- one batch ----------------------------------------------------------------------------

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.in_batch = True
        try:
            self._batch(df, batch_id)
        finally:
            self.in_batch = False

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        t_start = time.time()
        control = read_json(self.control_path, {}) or {}
        state = self._state_before(batch_id)
        if state.get("final"):
            self.states.save(batch_id, state)
            return
        rows = df.coalesce(1).mapInPandas(
            _worker(self.spec, control, state), _WORKER_SCHEMA,
        ).collect()
        new_state = state
        key = f"{int(self.spec['launch']):06d}-{batch_id:09d}"
        for kind, name, text, frame in rows:
            if kind == "topic":
                self.bus.publish(name, key, bytes(frame))
            elif kind == "sink":
                write_records(self.root / "sinks", name, key, text)
            elif kind == "state":
                new_state = json.loads(text)
        self._slow_down(control, int(state.get("qhw", -1)), int(new_state.get("qhw", -1)))
        self.states.save(batch_id, new_state)
        if new_state.get("final") and not self.final_path.exists():
            write_json(self.final_path, new_state)
        self.batches += 1
        self.busy_s += time.time() - t_start

    def _slow_down(self, control: Mapping[str, Any], hw0: int, hw1: int) -> None:
        """Test-only (``Runtime.slow_down``): sleep ``slow_s`` seconds per source ``seq`` the
        batch advanced the high-water mark, so the query takes ``factor`` times the source time
        it processed, whatever the fan-out of its inputs. The sleep is cut short once the
        control file no longer asks for it (the slowdown ended)."""
        slow = float(control.get("slow_s") or 0.0)
        if not slow or hw0 < 0 or hw1 <= hw0:
            return
        until = time.time() + slow * (hw1 - hw0)
        while (left := until - time.time()) > 0:
            time.sleep(min(0.5, left))
            if not (read_json(self.control_path, {}) or {}).get("slow_s"):
                return
