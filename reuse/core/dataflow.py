"""The dataflow model: concrete tasks, streams and DAGs (section 3.1 of the paper).

A dataflow ``D = <T, S>`` is a DAG of concrete tasks ``t = <id, type, config>`` and streams
``s = <up.id, down.id>``. It is immutable: the manager never edits a submitted dataflow, it keeps
it as the record of what the user asked for.

The on-disk form is the JSON the paper's manager took (task id, type, config and wiring)::

    {"id": "etl-sys",
     "tasks": [{"id": "src", "type": "SYS", "config": "source"},
               {"id": "parse", "type": "SenMLParse", "config": {"schema": "sys"}},
               {"id": "out", "type": "MQTTPublish", "config": "sink"}],
     "streams": [["src", "parse"], ["parse", "out"]]}

``config`` is any JSON value; two configs are equal when their canonical JSON (sorted keys, no
whitespace) is equal. Tasks with no incoming stream are the DAG's input (source) tasks ``I``;
tasks with no outgoing stream are its output (sink) tasks ``O``. The paper also fixes the source
and sink configs to the constants ``'source'`` and ``'sink'``; we do not require that, since a
sink's config (say, the topic it publishes to) is legitimately part of what makes it distinct.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reuse.core.errors import DataflowError, shown
from reuse.core.jsondata import MAX_DEPTH, JsonError, bad_text, loads, short, too_deep

__all__ = ["Task", "Dataflow", "canonical_config", "parse_dataflow", "load_dataflow",
           "load_dataflows", "dump_dataflow", "fresh_id", "name_problem"]


def canonical_config(config: Any) -> str:
    """The canonical JSON text of a config: equal configs give equal text, whatever key order.

    Examples
    --------
    >>> canonical_config({"b": 1, "a": [1, 2]}) == canonical_config({"a": [1, 2], "b": 1})
    True
    >>> canonical_config("source")
    '"source"'
    """
    try:
        return json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    except RecursionError:  # a config built in Python, nested past the recursion limit
        raise ValueError("nested too deeply") from None


@dataclass(frozen=True)
class Task:
    """A concrete task ``t = <id, type, config>``; ``config_key`` is its canonical config."""

    id: str
    type: str
    config: Any = field(compare=False, hash=False)
    config_key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "config_key", canonical_config(self.config))

    @property
    def abstract(self) -> tuple[str, str]:
        """The abstract task ``tau = <type, config>`` this concrete task instantiates."""
        return (self.type, self.config_key)


@dataclass(frozen=True)
class Dataflow:
    """A validated DAG ``D = <T, S>``.

    Build it with :func:`parse_dataflow` (from JSON data) or the constructor (which validates the
    same way). Tasks keep their input order; ``order`` is a topological order of task ids.
    """

    id: str
    tasks: tuple[Task, ...]
    streams: tuple[tuple[str, str], ...]
    source: str | None = field(default=None, compare=False)  # file it came from, for errors
    order: tuple[str, ...] = field(init=False, compare=False, repr=False)
    parents: Mapping[str, tuple[str, ...]] = field(init=False, compare=False, repr=False)
    children: Mapping[str, tuple[str, ...]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        by_id: dict[str, Task] = {}
        for task in self.tasks:
            if task.id in by_id:
                raise self.error("duplicate task id", task=task.id)
            by_id[task.id] = task
        if not by_id:
            raise self.error("has no tasks")
        parents: dict[str, list[str]] = {t: [] for t in by_id}
        children: dict[str, list[str]] = {t: [] for t in by_id}
        seen: set[tuple[str, str]] = set()
        for up, down in self.streams:
            for end in (up, down):
                if end not in by_id:
                    raise self.error(f"stream [{short(up)}, {short(down)}] names an unknown task",
                                     task=end)
            if up == down:
                raise self.error("stream is a self-loop", task=up)
            if (up, down) in seen:
                raise self.error(f"duplicate stream [{short(up)}, {short(down)}]", task=down)
            seen.add((up, down))
            parents[down].append(up)
            children[up].append(down)
        order = _topological_order([t.id for t in self.tasks], parents, children)
        if order is None:
            stuck = _a_cycle([t.id for t in self.tasks], children)
            path = " -> ".join(map(shown, stuck if len(stuck) <= 9
                                   else [*stuck[:4], "...", *stuck[-4:]]))
            raise self.error(f"has a cycle: {path}", task=stuck[0])
        object.__setattr__(self, "order", tuple(order))
        object.__setattr__(self, "parents", {k: tuple(v) for k, v in parents.items()})
        object.__setattr__(self, "children", {k: tuple(v) for k, v in children.items()})
        object.__setattr__(self, "_by_id", by_id)

    def error(self, message: str, *, task: str | None = None) -> DataflowError:
        return DataflowError(message, file=self.source, dag=self.id, task=task)

    def task(self, task_id: str) -> Task:
        return self._by_id[task_id]  # type: ignore[attr-defined, no-any-return]

    def __len__(self) -> int:
        return len(self.tasks)

    @property
    def sources(self) -> tuple[str, ...]:
        """Input tasks ``I``: no incoming stream."""
        return tuple(t.id for t in self.tasks if not self.parents[t.id])

    @property
    def sinks(self) -> tuple[str, ...]:
        """Output tasks ``O``: no outgoing stream."""
        return tuple(t.id for t in self.tasks if not self.children[t.id])

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tasks": [{"id": t.id, "type": t.type, "config": t.config} for t in self.tasks],
            "streams": [list(s) for s in self.streams],
        }


def _topological_order(ids: Sequence[str], parents: Mapping[str, Sequence[str]],
                       children: Mapping[str, Sequence[str]]) -> list[str] | None:
    """Kahn's algorithm, taking ready tasks in input order; ``None`` if there is a cycle."""
    pos = {t: i for i, t in enumerate(ids)}
    indegree = {t: len(parents[t]) for t in ids}
    ready = [pos[t] for t in ids if indegree[t] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = ids[heapq.heappop(ready)]
        order.append(node)
        for child in children[node]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, pos[child])
    return order if len(order) == len(ids) else None


def _a_cycle(ids: Sequence[str], children: Mapping[str, Sequence[str]]) -> list[str]:
    """One cycle, as a closed path of task ids, to name in the error message."""
    colour: dict[str, int] = {}
    for start in ids:
        if colour.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(children[start]))]
        colour[start] = 1
        path.append(start)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not colour.get(nxt):
                colour[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(children[nxt])))
    raise AssertionError("no cycle found")  # pragma: no cover - called only when one exists


def parse_dataflow(data: Any, *, source: str | None = None) -> Dataflow:
    """Validate JSON data as a dataflow and build it.

    Raises :class:`~reuse.core.errors.DataflowError` naming the file, DAG and task for a missing field,
    a wrong type, a duplicate task id, a stream naming an unknown task, a self-loop or a cycle,
    a config nested deeper than :data:`~reuse.core.jsondata.MAX_DEPTH` levels, or a string that
    is not Unicode text (a lone surrogate).
    De-dup is checked separately (:func:`reuse.core.equivalence.check_dedup`), since it needs signatures.
    """
    def fail(message: str, dag: str | None = None, task: str | None = None) -> DataflowError:
        return DataflowError(message, file=source, dag=dag, task=task)

    def need(obj: Mapping[str, Any], key: str, what: str, dag: str | None = None,
             task: str | None = None) -> Any:
        if key not in obj:
            raise fail(f"{what} is missing field '{key}'", dag, task)
        return obj[key]

    if not isinstance(data, dict):
        raise fail("a dataflow must be a JSON object with 'id', 'tasks' and 'streams'")
    dag_id = need(data, "id", "dataflow")
    if not isinstance(dag_id, str) or not dag_id:
        raise fail("dataflow 'id' must be a non-empty string")
    why = name_problem(dag_id)
    if why:
        raise fail(f"dataflow 'id' {why}")
    tasks_data = need(data, "tasks", "dataflow", dag_id)
    streams_data = need(data, "streams", "dataflow", dag_id)
    if not isinstance(tasks_data, list):
        raise fail("'tasks' must be a list", dag_id)
    if not isinstance(streams_data, list):
        raise fail("'streams' must be a list", dag_id)
    tasks = []
    for i, item in enumerate(tasks_data):
        if not isinstance(item, dict):
            raise fail(f"tasks[{i}] must be an object with 'id', 'type' and 'config'", dag_id)
        tid = need(item, "id", f"tasks[{i}]", dag_id)
        if not isinstance(tid, str) or not tid:
            raise fail(f"tasks[{i}] 'id' must be a non-empty string", dag_id)
        why = name_problem(tid)
        if why:
            raise fail(f"tasks[{i}] 'id' {why}", dag_id)
        ttype = need(item, "type", "task", dag_id, tid)
        if not isinstance(ttype, str) or not ttype:
            raise fail("'type' must be a non-empty string", dag_id, tid)
        why = name_problem(ttype)
        if why:
            raise fail(f"'type' {why}", dag_id, tid)
        config = need(item, "config", "task", dag_id, tid)
        if too_deep(config):
            raise fail(f"'config' is nested deeper than {MAX_DEPTH} levels (or holds itself)",
                       dag_id, tid)
        try:
            task = Task(tid, ttype, config)
        except (TypeError, ValueError) as exc:
            raise fail(f"'config' is not plain JSON ({exc})", dag_id, tid) from None
        if bad_text(task.config_key):
            raise fail("'config' is not Unicode text (a string holds a lone surrogate)",
                       dag_id, tid)
        tasks.append(task)
    streams = []
    for i, item in enumerate(streams_data):
        if (not isinstance(item, (list, tuple)) or len(item) != 2
                or not all(isinstance(end, str) for end in item)):
            raise fail(f"streams[{i}] must be a pair of task ids [up, down], got {short(item)}",
                       dag_id)
        streams.append((item[0], item[1]))
    return Dataflow(dag_id, tuple(tasks), tuple(streams), source=source)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def name_problem(name: str) -> str:
    """Why a DAG id, task id or type cannot name anything (empty: it can). Names are printed
    one per line, written to CSV and used in topics, so they hold no control character or line
    break, and they are Unicode text (no lone surrogate)."""
    found = _CONTROL.search(name)
    if found:
        return f"holds a control character or line break (U+{ord(found.group()):04X})"
    if bad_text(name):
        return "is not Unicode text (it holds a lone surrogate)"
    return ""


def load_dataflow(path: str | Path) -> Dataflow:
    """Read and validate one dataflow JSON file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataflowError(f"cannot read file ({exc.strerror})", file=str(path)) from None
    except UnicodeDecodeError:
        raise DataflowError("is not UTF-8 text", file=str(path)) from None
    try:
        data = loads(text)
    except JsonError as exc:
        raise DataflowError(str(exc), file=str(path)) from None
    return parse_dataflow(data, source=str(path))


def load_dataflows(paths: Iterable[str | Path]) -> list[Dataflow]:
    """Load files and the ``*.json`` files of directories (sorted), rejecting repeated DAG ids."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(p.glob("*.json")))
        else:
            files.append(p)
    flows: list[Dataflow] = []
    seen: dict[str, str | None] = {}
    for f in files:
        flow = load_dataflow(f)
        if flow.id in seen:
            raise DataflowError(f"DAG id is already used by {seen[flow.id]}", file=str(f),
                                dag=flow.id)
        seen[flow.id] = flow.source
        flows.append(flow)
    return flows


def dump_dataflow(flow: Dataflow, path: str | Path) -> None:
    """Write a dataflow as JSON (sorted keys), the format :func:`load_dataflow` reads."""
    Path(path).write_text(json.dumps(flow.to_dict(), indent=1, sort_keys=True) + "\n",
                          encoding="utf-8")


def fresh_id(wanted: str, taken: Container[str], sep: str = "#") -> str:
    """``wanted``, or ``wanted#2``, ``#3``... whichever is not ``taken`` (``sep`` between the
    name and its number: the runtime's incarnations use ``~``)."""
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}{sep}{n}" in taken:
        n += 1
    return f"{wanted}{sep}{n}"
