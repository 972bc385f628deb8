"""The run journal (``reuse.runtime.journal``), without Spark (issue 21).

What the module promises: one JSON line per record (``start``, ``op``, ``row``); a torn last
line is dropped (that record never took effect) and the run can still be resumed, more than
once; a damaged journal is a one-line error; and the ``op`` records, replayed at their cuts
into a fresh planner and deployment, rebuild the same runtime ids and task windows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.core.errors import ReuseError, StateError
from reuse.runtime.common.planners import ReusePlanner
from reuse.runtime.engines.shared.deploy import Deployment
from reuse.runtime.journal import JOURNAL, RunJournal, load_journal


def _chain(dag: str, *types: str) -> Dataflow:
    ids = ["src", *(f"t{i}" for i in range(len(types))), "out"]
    tasks = [{"id": "src", "type": "S", "config": "source"}]
    tasks += [{"id": f"t{i}", "type": t, "config": {}} for i, t in enumerate(types)]
    tasks.append({"id": "out", "type": "Sink", "config": {"topic": dag}})
    return parse_dataflow({"id": dag, "tasks": tasks,
                           "streams": list(zip(ids, ids[1:], strict=False))})


FLOWS = {"a": _chain("a", "X", "Y"), "b": _chain("b", "X", "Z"), "c": _chain("c", "X", "Y", "W")}
# (op, dag, cut): b shares a's source and X; a comes back as a new incarnation
TRACE = [("submit", "a", 10), ("submit", "b", 20), ("remove", "a", 30), ("submit", "a", 40),
         ("submit", "c", 50)]


class Engine:
    """The shared query's deployment layer driven as ``InplaceRuntime`` drives it: the
    planner accepts an operation, the journal records it (write-ahead), the deployment
    changes; batches claim ``seq`` ranges in between."""

    def __init__(self) -> None:
        self.planner = ReusePlanner()
        self.dep = Deployment(2)
        self.ids: list[tuple[str, ...]] = []  # per operation: started (+ reused) or ended

    def enact(self, op: str, dag: str, cut: int, journal: RunJournal | None = None,
              step: int = 0) -> None:
        if op == "submit":
            p = self.planner.submit(FLOWS[dag])
            if journal is not None:
                journal.op(step, op, dag, cut, cut - 3)
            self.dep.deploy(p, cut)
            self.ids.append(tuple(t.id for t in p.start) + p.reused)
        else:
            r = self.planner.remove(dag)
            if journal is not None:
                journal.op(step, op, dag, cut, cut - 3)
            self.dep.end(r, cut)
            self.ids.append(r.stop)

    def tasks(self) -> dict[str, Any]:
        return self.dep.as_dict()["tasks"]


def _live(root: Path, steps: int, *, rows: int | None = None) -> Engine:
    """A run that enacted the first ``steps`` operations of the trace and wrote ``rows`` rows
    (default: one per operation), a batch claimed after each step."""
    journal = RunJournal(root)
    journal.start({"t0": 1000, "start_seq": 0, "ops": [[o, d] for o, d, _ in TRACE]})
    eng = Engine()
    rows = steps if rows is None else rows
    for step, (op, dag, cut) in enumerate(TRACE[:steps], start=1):
        eng.enact(op, dag, cut, journal, step)
        if step <= rows:
            journal.row({"step": step, "op": op, "dag": dag, "cut": cut}, cut - 3)
        eng.dep.claim(cut - 10 if step > 1 else 0, cut + 5)
    return eng


def test_records_are_one_json_line_each(tmp_path: Path) -> None:
    _live(tmp_path, 2)
    lines = (tmp_path / JOURNAL).read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""
    recs = [json.loads(x) for x in lines[:-1]]
    assert [r["kind"] for r in recs] == ["start", "op", "row", "op", "row"]
    assert recs[1] == {"kind": "op", "step": 1, "op": "submit", "dag": "a", "cut": 10,
                       "mark": 7}
    assert recs[2] == {"kind": "row", "mark": 7,
                       "row": {"step": 1, "op": "submit", "dag": "a", "cut": 10}}


def test_load_reads_parameters_operations_rows_and_the_pending_step(tmp_path: Path) -> None:
    _live(tmp_path, 4, rows=3)  # the driver died in step 4, after enacting its operation
    st = load_journal(tmp_path)
    assert st.start == {"kind": "start", "t0": 1000, "start_seq": 0,
                        "ops": [[o, d] for o, d, _ in TRACE]}
    assert [(o["step"], o["op"], o["dag"], o["cut"]) for o in st.ops] == [
        (n, *t) for n, t in enumerate(TRACE[:4], start=1)]
    assert [r["step"] for r in st.rows] == [1, 2, 3] and st.marks == [7, 17, 27]
    assert st.pending is not None and (st.pending["step"], st.pending["dag"]) == (4, "a")
    assert (st.next_step, st.torn) == (5, False)
    (tmp_path / "done").mkdir()
    _live(tmp_path / "done", 5)
    done = load_journal(tmp_path / "done")
    assert (done.pending, done.next_step) == (None, 6)


def test_replaying_the_operations_at_their_cuts_rebuilds_the_deployment(tmp_path: Path) -> None:
    """Same runtime ids (the incarnation ``a`` comes back as included), same windows, same
    shards, once a batch has claimed the next ``seq`` on both."""
    live = _live(tmp_path, 5, rows=4)
    again = Engine()
    for o in load_journal(tmp_path).ops:
        again.enact(o["op"], o["dag"], int(o["cut"]))
    assert again.ids == live.ids
    assert live.ids[3] == ("a.t1~2", "a.out~2", "a.src", "a.t0")  # a again: fresh ids
    again.dep.claim(55, 60)
    live.dep.claim(55, 60)
    assert again.tasks() == live.tasks()
    assert {t: (d["start"], d["end"]) for t, d in live.tasks().items()} == {
        "a.src": (10, None), "a.t0": (10, None), "b.t1": (20, None), "b.out": (20, None),
        "a.t1~2": (40, None), "a.out~2": (40, None), "c.t2": (50, None), "c.out": (50, None)}


def test_a_torn_last_line_is_an_operation_that_never_took_effect(tmp_path: Path) -> None:
    """The driver died writing step 4's operation: the journal reads as if it never was,
    and the resumed run enacts it anew as step 4."""
    _live(tmp_path, 3)
    with open(tmp_path / JOURNAL, "a", encoding="utf-8") as fh:
        fh.write('{"kind":"op","step":4,"op":"sub')
    st = load_journal(tmp_path)
    assert st.torn and len(st.ops) == 3 and st.pending is None and st.next_step == 4


def test_a_resumed_run_appends_after_a_torn_line_and_resumes_again(tmp_path: Path) -> None:
    """Resuming appends to the journal: the torn tail must not swallow the next record (or
    turn into a damaged line mid-file that stops the next resume)."""
    _live(tmp_path, 3, rows=2)
    with open(tmp_path / JOURNAL, "a", encoding="utf-8") as fh:
        fh.write('{"kind":"row","mark":27,"row":{"st')  # died writing step 3's row
    first = load_journal(tmp_path)
    assert first.torn and first.pending is not None and first.pending["step"] == 3
    journal = RunJournal(tmp_path)  # the resumed run measures step 3 again, goes on
    journal.row({"step": 3, "op": "remove", "dag": "a", "cut": 30}, 27)
    journal.op(4, "submit", "a", 40, 37)
    second = load_journal(tmp_path)
    assert not second.torn
    assert [r["step"] for r in second.rows] == [1, 2, 3] and second.marks == [7, 17, 27]
    assert second.pending is not None and second.pending["step"] == 4


def test_a_complete_last_record_without_its_newline_is_kept(tmp_path: Path) -> None:
    """Everything but the newline was written: the record is read, and kept on resume."""
    _live(tmp_path, 2)
    path = tmp_path / JOURNAL
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    assert [r["step"] for r in load_journal(tmp_path).rows] == [1, 2]
    RunJournal(tmp_path).op(3, "remove", "a", 30, 27)
    st = load_journal(tmp_path)
    assert [r["step"] for r in st.rows] == [1, 2] and [o["step"] for o in st.ops] == [1, 2, 3]


@pytest.mark.parametrize("damage, message", [
    (lambda ls: [ls[0], "garbage", *ls[1:]], "line 2 is damaged"),
    (lambda ls: ls[1:], "needs exactly one start record, found 0"),
    (lambda ls: [ls[0], *ls], "needs exactly one start record, found 2"),
    (lambda ls: [*ls, '{"kind":"nap"}'], "unknown record kind 'nap'"),
    (lambda ls: [ls[0], ls[3], ls[4], ls[1], ls[2]], "operations are not steps 1..2 in order"),
])
def test_a_damaged_journal_is_a_one_line_error(tmp_path: Path, damage: Any,
                                              message: str) -> None:
    _live(tmp_path, 2)
    path = tmp_path / JOURNAL
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(damage(lines)) + "\n", encoding="utf-8")
    with pytest.raises(StateError, match=message) as exc:
        load_journal(tmp_path)
    assert len(str(exc.value).splitlines()) == 1 and JOURNAL in str(exc.value)


def test_no_journal_is_not_a_resumable_run(tmp_path: Path) -> None:
    with pytest.raises(ReuseError, match="is not a resumable run directory"):
        load_journal(tmp_path)


def test_a_live_engines_journal_carries_its_dataflows(tmp_path: Path) -> None:
    """A live engine has no trace: each submit's op record carries its dataflow, and the
    journal gives them back for a resume (a later submit of an id wins)."""
    j = RunJournal(tmp_path)
    j.start({"t0": 0, "start_seq": 5, "front": "live"})
    j.op(1, "submit", "a", 10, 6, flow=FLOWS["a"].to_dict())
    j.op(2, "submit", "b", 20, 16, flow=FLOWS["b"].to_dict())
    j.op(3, "remove", "a", 30, 26)
    again = FLOWS["c"].to_dict() | {"id": "a"}
    j.op(4, "submit", "a", 40, 36, flow=again)
    st = load_journal(tmp_path)
    assert [(o["op"], o["dag"], o["cut"]) for o in st.enacted] == [
        ("submit", "a", 10), ("submit", "b", 20), ("remove", "a", 30), ("submit", "a", 40)]
    assert set(st.flows) == {"a", "b"} and st.flows["b"] == FLOWS["b"]
    assert st.flows["a"].to_dict() == parse_dataflow(again).to_dict()
    assert st.next_step == 5


@pytest.mark.parametrize(("flow", "why"), [
    ({"id": "a", "tasks": "nope"}, "carries a dataflow that is not valid"),
    (FLOWS["b"].to_dict(), "carries dataflow 'b' but is not its submit"),
])
def test_a_live_op_with_a_bad_dataflow_is_a_one_line_error(tmp_path: Path, flow: Any,
                                                            why: str) -> None:
    j = RunJournal(tmp_path)
    j.start({"t0": 0, "start_seq": 0})
    j.op(1, "submit", "a", 10, 1, flow=flow)
    with pytest.raises(StateError, match=why) as err:
        load_journal(tmp_path)
    assert "\n" not in str(err.value) and JOURNAL in str(err.value)
