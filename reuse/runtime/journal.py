"""The run journal: what a live run must remember to be resumed after its driver dies.

``reuse run`` keeps ``journal.jsonl`` in its run directory (``--root``), one fsynced JSON line
per record, in three kinds:

- ``start``: the run's parameters (the dataflows, the trace, the policy, rate, trigger, shards,
  ``t0``, the shared query's first ``seq``), written once the shared query has started;
- ``op``: a step's operation, its cut (``J`` or ``R``), the first ``seq`` emitted in its step
  (``mark``) and the wall time the step began (``t_ms``), written under the engine's lock after the planner accepted it and before the
  deployment changes (write-ahead);
- ``row``: a finished step's CSV row and the first ``seq`` emitted in it (``mark``, which
  charges lost or duplicated outputs to their step).

A live engine (:class:`reuse.live.Engine`) has no trace: its start record holds no ``flows``
and no ``ops``, each submit's ``op`` record carries its dataflow (``flow``), its steps are its
operations in order, and it writes no rows (``Engine.resume`` reads it back).

What is not in the journal is in Spark's checkpoint (the shared query's offset log: which
batches ran over which ``seq``) and in the task states saved after each batch. A resumed run
replays the ``op`` records into a fresh planner and deployment at their recorded cuts (the
planners hand out the same runtime ids for the same operations), restarts the shared query from
its checkpoint, and carries on with the trace. A torn last line (the driver died while writing
it) is dropped: that operation never took effect. The resumed run's journal drops it from the
file before appending, or its first record would be glued to the torn one (a damaged line that
stops the next resume). Any other damage (a line that is not JSON, a record missing a field
a resume reads, a start record whose dataflows or trace do not check, an ``op`` that is not its
step of the trace) is a one-line :class:`~reuse.core.errors.StateError` naming the file and
record, before anything is started.

Nothing here imports Spark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.core.errors import ReuseError, StateError
from reuse.core.jsondata import short
from reuse.core.state import _atomic_write, append_journal, read_journal
from reuse.core.traces import Op, check_trace
from reuse.runtime.engines.contract import JournalOp
from reuse.runtime.rows import StepRow

__all__ = ["RunJournal", "JournalState", "load_journal", "step_started_ms"]

JOURNAL = "journal.jsonl"


@dataclass
class JournalState:
    """A run's journal, read back: its parameters, the operations enacted, the rows written."""

    start: dict[str, Any]
    ops: list[dict[str, Any]] = field(default_factory=list)  # {"step", "op", "dag", "cut"}
    rows: list[StepRow] = field(default_factory=list)  # the CSV rows, in step order
    marks: list[int] = field(default_factory=list)  # first seq of each row's step
    torn: bool = False

    @property
    def pending(self) -> dict[str, Any] | None:
        """The operation of the step the driver died in (enacted, no row yet), if any."""
        done = {int(r["step"]) for r in self.rows}
        left = [o for o in self.ops if int(o["step"]) not in done]
        return left[-1] if left else None

    @property
    def enacted(self) -> list[JournalOp]:
        """The operations enacted, at their cuts, in order: what an engine's ``replay``
        enacts again (:class:`~reuse.runtime.engines.contract.Recovery`)."""
        return [{"op": str(o["op"]), "dag": str(o["dag"]), "cut": int(o["cut"])}
                for o in self.ops]

    @property
    def flows(self) -> dict[str, Dataflow]:
        """The dataflows the run knows: its start record's (a trace's), then those its
        ``op`` records carry (a live engine's submits; a later submit of an id wins)."""
        out = {f.id: f for f in (parse_dataflow(d) for d in self.start.get("flows", []))}
        out.update((str(o["dag"]), parse_dataflow(o["flow"])) for o in self.ops if "flow" in o)
        return out

    @property
    def next_step(self) -> int:
        """The first step (1-based) whose operation was never enacted."""
        return max([int(o["step"]) for o in self.ops], default=0) + 1


class RunJournal:
    """Appends a run's records to ``<root>/journal.jsonl`` (each fsynced before it returns).

    A journal whose last line is unterminated (a resumed run's) is first rewritten as the
    records :func:`load_journal` read from it, so every record appended starts a line.
    """

    def __init__(self, root: str | Path) -> None:
        self.path = Path(root) / JOURNAL
        if self.path.exists() and not self.path.read_bytes().endswith(b"\n"):
            records, _ = read_journal(self.path, key=None)
            _atomic_write(self.path, "".join(json.dumps(r, separators=(",", ":")) + "\n"
                                             for r in records))

    def start(self, params: dict[str, Any]) -> None:
        append_journal(self.path, {"kind": "start", **params})

    def op(self, step: int, op: str, dag: str, cut: int, mark: int,
           t_ms: int | None = None, flow: dict[str, Any] | None = None) -> None:
        rec: dict[str, Any] = {"kind": "op", "step": step, "op": op, "dag": dag, "cut": cut,
                               "mark": mark}
        if t_ms is not None:
            rec["t_ms"] = t_ms
        if flow is not None:  # a live engine's submit: the dataflow it merged
            rec["flow"] = flow
        append_journal(self.path, rec)

    def row(self, row: StepRow, mark: int) -> None:
        append_journal(self.path, {"kind": "row", "mark": mark, "row": row})


def load_journal(root: str | Path) -> JournalState:
    """Read a run directory's journal; a one-line error if it cannot be resumed from.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> j = RunJournal(d)
    >>> j.start({"t0": 0})
    >>> j.op(1, "submit", "A", 12, 3)
    >>> j.row({"step": 1, "op": "submit", "dag": "A"}, 3)
    >>> j.op(2, "submit", "B", 40, 35)
    >>> st = load_journal(d)
    >>> st.pending["dag"], st.next_step, st.marks
    ('B', 3, [3])
    """
    path = Path(root) / JOURNAL
    if not path.exists():
        raise ReuseError("is not a resumable run directory (no journal.jsonl: runs on the shared query, --merge inplace, keep one)", file=str(root))
    records, torn = read_journal(path, key=None)
    starts = [r for r in records if r.get("kind") == "start"]
    if len(starts) != 1:
        raise StateError(f"needs exactly one start record, found {len(starts)}", file=str(path))
    st = JournalState(starts[0], torn=torn)
    trace = _check_start(starts[0], str(path))
    for n, r in enumerate(records, start=1):
        kind = r.get("kind")

        def bad(why: str, n: int = n, kind: Any = kind) -> StateError:
            return StateError(f"record {n} ({short(kind)}) {why}", file=str(path))

        if kind == "op":
            for name in ("step", "cut", "mark"):
                if not _is_int(r.get(name)):
                    raise bad(f"has no integer '{name}'")
            if r.get("op") not in ("submit", "remove") or not isinstance(r.get("dag"), str):
                raise bad("must name an op 'submit' or 'remove' and a 'dag' id")
            if "t_ms" in r and r["t_ms"] is not None and not _is_int(r["t_ms"]):
                raise bad("has a 't_ms' that is not an integer")
            if "flow" in r:
                try:
                    fid = parse_dataflow(r["flow"], source=str(path)).id
                except ReuseError as exc:
                    raise bad(f"carries a dataflow that is not valid: {exc}") from None
                if r["op"] != "submit" or fid != r["dag"]:
                    raise bad(f"carries dataflow {short(fid)} but is not its submit")
            step = r["step"]
            if trace is not None and (not 1 <= step <= len(trace)
                                      or trace[step - 1] != [r["op"], r["dag"]]):
                raise bad(f"is not step {step} of the start record's trace")
            st.ops.append(r)
        elif kind == "row":
            row = r.get("row")
            if not isinstance(row, dict) or not _is_int(row.get("step")) \
                    or not _is_int(r.get("mark")):
                raise bad("must hold a 'row' object with an integer 'step', and a 'mark'")
            if "t_end_ms" in row and row["t_end_ms"] is not None \
                    and not isinstance(row["t_end_ms"], (int, float)):
                raise bad("has a 't_end_ms' that is not a number")
            st.rows.append(cast(StepRow, row))  # checked: a dict with an int step
            st.marks.append(int(r["mark"]))
        elif kind != "start":
            raise StateError(f"unknown record kind {short(kind)}", file=str(path))
    steps = [int(o["step"]) for o in st.ops]
    if steps != list(range(1, len(steps) + 1)):
        raise StateError(f"operations are not steps 1..{len(steps)} in order", file=str(path))
    return st


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_start(start: dict[str, Any], path: str) -> list[list[str]] | None:
    """Check what a resume reads from the start record before it starts anything: ``t0`` and
    ``start_seq`` integers, ``flows`` dataflows, ``ops`` a trace over them. Returns the trace
    (``None``: the record has none, as a test's may not)."""
    for name in ("t0", "start_seq"):  # a run's record (with its flows) must hold both
        if (name in start or "flows" in start) and not _is_int(start.get(name)):
            raise StateError(f"start record's {name!r} is not an integer", file=path)
    flows: list[str] | None = None
    if "flows" in start:
        if not isinstance(start["flows"], list):
            raise StateError("start record's 'flows' is not a list of dataflows", file=path)
        try:
            flows = [parse_dataflow(d, source=path).id for d in start["flows"]]
        except ReuseError as exc:
            raise StateError(f"start record's dataflow is not valid: {exc}", file=path) from None
    if "ops" not in start:
        return None
    ops = start["ops"]
    if not isinstance(ops, list) or not all(
            isinstance(o, list) and len(o) == 2 and o[0] in ("submit", "remove")
            and isinstance(o[1], str) for o in ops):
        raise StateError("start record's 'ops' is not a list of [op, dag] pairs", file=path)
    if flows is not None:
        try:
            check_trace([Op(o, d) for o, d in ops], flows, file=path)
        except ReuseError as exc:
            raise StateError(f"start record's trace does not fit its dataflows: {exc}",
                             file=path) from None
    return ops


def step_started_ms(state: JournalState, step: int, default: int) -> int:
    """When ``step`` began in the run that wrote the journal: its ``op`` record's ``t_ms``,
    else (journals written before it was recorded) the end of the step before, else
    ``default``.

    Examples
    --------
    >>> st = JournalState({"t0": 0}, ops=[{"step": 1}, {"step": 2, "t_ms": 9000}],
    ...                   rows=[{"step": 1, "t_end_ms": 8000}])
    >>> step_started_ms(st, 2, 0), step_started_ms(st, 1, 5)
    (9000, 5)
    >>> st.ops[1].pop("t_ms"); step_started_ms(st, 2, 0)
    9000
    8000
    """
    for o in state.ops:
        if int(o["step"]) == step and o.get("t_ms") is not None:
            return int(o["t_ms"])
    for r in state.rows:
        if int(r["step"]) == step - 1 and r.get("t_end_ms"):
            return int(r["t_end_ms"])
    return default
