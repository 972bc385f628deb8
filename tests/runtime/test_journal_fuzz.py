"""Fuzzing the run journal and what ``reuse run --resume`` reads from it (issue 34, item 3).

A valid journal (a run's start record with its dataflows and trace, ``op`` and ``row``
records) is damaged: cut at any byte, a line replaced by garbage or by another JSON value, a
field of a record changed or dropped, bytes that are not UTF-8, deep nesting. Reading it must
give a :class:`JournalState` whose properties work, or a one-line :class:`ReuseError`, never
another exception, and never change the file. The documented tolerance: a journal cut inside
its last line reads as the journal without that record (``torn``).

``resume_run`` is driven up to the point where it would start Spark (``live_run`` is replaced
by a stub), so a resume of a damaged journal is shown to fail with one line before anything
starts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.core.dataflow import load_dataflows
from reuse.core.errors import ReuseError
from reuse.core.state import read_journal
from reuse.runtime.journal import JOURNAL, RunJournal, load_journal, step_started_ms

FUZZ = settings(settings.get_profile("fuzz"))
FIX = Path(__file__).resolve().parents[1] / "fixtures"
FLOWS = [f.to_dict() for f in load_dataflows([FIX / "figure1"])]
OPS = [["submit", "A"], ["submit", "B"], ["remove", "A"], ["submit", "C"]]
START = {"flows": FLOWS, "ops": OPS, "policy": "reuse", "mode": "reuse", "shards": 2,
         "max_events": 1000, "step_seconds": 1.0, "master": "local[2]", "rate": 10.0,
         "trigger_s": 0.5, "pi_iterations": 10, "defrag_every": 0, "data_dir": "data",
         "check": True, "t0": 1_700_000_000_000, "start_seq": 0}

LEAVES = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10)
          | st.sampled_from([math.nan, "\ud800", 10 ** 30]))
JSON = st.recursive(LEAVES, lambda c: st.lists(c, max_size=3)
                    | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=8)


def journal_lines(n_steps: int, rows: int) -> list[bytes]:
    """A run's journal: its start record, ``n_steps`` ops, and rows for the first ``rows``."""
    recs: list[dict[str, Any]] = [{"kind": "start", **START}]
    for step in range(1, n_steps + 1):
        op, dag = OPS[step - 1]
        recs.append({"kind": "op", "step": step, "op": op, "dag": dag, "cut": 10 * step,
                     "mark": 10 * step - 3, "t_ms": 1000 * step})
        if step <= rows:
            recs.append({"kind": "row", "mark": 10 * step - 3,
                         "row": {"step": step, "op": op, "dag": dag,
                                 "t_end_ms": 1000 * step + 900}})
    return [json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in recs]


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    n = draw(st.integers(0, len(OPS)))
    lines = journal_lines(n, draw(st.integers(0, n)))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        what = draw(st.sampled_from(["field", "drop", "value", "bytes", "deep", "insert",
                                     "dup", "swap", "kind"]))
        try:
            rec = json.loads(lines[i])
        except (ValueError, RecursionError):  # damaged by an earlier round
            rec = None
        if what in ("field", "drop", "kind") and isinstance(rec, dict) and rec:
            row = rec.get("row")
            target = row if isinstance(row, dict) and row and draw(st.booleans()) else rec
            key = "kind" if what == "kind" else draw(st.sampled_from(sorted(target)))
            if what == "drop":
                target.pop(key, None)
            else:
                target[key] = draw(JSON)
            lines[i] = json.dumps(rec).encode("utf-8", "surrogatepass") + b"\n"
        elif what == "value":
            lines[i] = json.dumps(draw(JSON)).encode("utf-8", "surrogatepass") + b"\n"
        elif what == "bytes":
            lines[i] = draw(st.binary(max_size=40)).replace(b"\n", b"") + b"\n"
        elif what == "deep":
            lines[i] = b'{"kind":"op","step":' + b"[" * 3000 + b"]" * 3000 + b"}\n"
        elif what == "insert":
            lines.insert(i, json.dumps(draw(JSON)).encode("utf-8", "surrogatepass") + b"\n")
        elif what == "dup":
            lines.insert(i, lines[i])
        elif what == "swap" and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
    raw = b"".join(lines)
    if draw(st.booleans()):
        raw = raw[:draw(st.integers(0, len(raw)))]  # and torn somewhere
    return raw


def check_state(root: Path) -> Any:
    """Load a journal: a state whose properties work, or a one-line ReuseError."""
    try:
        st_ = load_journal(root)
    except ReuseError as exc:
        text = str(exc)
        assert text and "\n" not in text and len(text) < 2000
        return None
    _ = st_.pending, st_.next_step
    for step in range(1, st_.next_step + 1):
        step_started_ms(st_, step, 0)
    return st_


@FUZZ
@given(raw=damaged())
def test_damaged_journal_is_one_line_and_untouched(raw: bytes, tmp_path_factory: Any,
                                                   fuzz_count: Any) -> None:
    fuzz_count("run journal (load_journal)")
    root = tmp_path_factory.mktemp("run")
    (root / JOURNAL).write_bytes(raw)
    st_ = check_state(root)
    assert (root / JOURNAL).read_bytes() == raw
    try:  # a resumed run opens the journal to append: only a torn tail may be dropped
        RunJournal(root)
    except ReuseError as exc:
        assert "\n" not in str(exc)
        assert (root / JOURNAL).read_bytes() == raw
        return
    if (root / JOURNAL).read_bytes() != raw:  # unterminated: rewritten as the records it held
        assert not raw.endswith(b"\n")      # (a torn tail dropped), each on a line of its own
        (root / "before").mkdir()
        (root / "before" / JOURNAL).write_bytes(raw)
        records, _ = read_journal(root / "before" / JOURNAL)
        assert read_journal(root / JOURNAL) == (records, False)
    if st_ is not None:
        assert (load_journal(root).ops, load_journal(root).rows) == (st_.ops, st_.rows)


@FUZZ
@given(n=st.integers(1, len(OPS)), rows=st.integers(0, len(OPS)), data=st.data())
def test_a_torn_last_line_is_dropped(n: int, rows: int, data: st.DataObject,
                                     tmp_path_factory: Any, fuzz_count: Any) -> None:
    """The documented tolerance: cut inside the last line, the journal reads as without it."""
    fuzz_count("run journal (torn tail)")
    lines = journal_lines(n, min(rows, n))
    cut = data.draw(st.integers(0, len(lines[-1]) - 2))  # not its newline: that would be whole
    root = tmp_path_factory.mktemp("torn")
    (root / JOURNAL).write_bytes(b"".join(lines[:-1]) + lines[-1][:cut])
    whole = tmp_path_factory.mktemp("whole")
    (whole / JOURNAL).write_bytes(b"".join(lines[:-1]))
    torn = load_journal(root)
    ref = load_journal(whole)
    assert (torn.ops, torn.rows, torn.marks) == (ref.ops, ref.rows, ref.marks)
    assert torn.torn == (cut > 0)


@pytest.fixture(scope="module")
def no_spark() -> Any:
    """``resume_run`` up to the point where it would start Spark."""
    import reuse.runtime.run as run

    class Started(Exception):
        pass

    def stub(*args: Any, **kwargs: Any) -> None:
        raise Started

    real = run.live_run
    run.live_run = stub  # type: ignore[assignment]
    try:
        yield run.resume_run, Started
    finally:
        run.live_run = real  # type: ignore[assignment]


@FUZZ
@given(raw=damaged())
def test_resume_of_a_damaged_run_is_one_line(raw: bytes, no_spark: Any, tmp_path_factory: Any,
                                             fuzz_count: Any) -> None:
    fuzz_count("reuse run --resume (journal)")
    resume_run, started = no_spark
    root = tmp_path_factory.mktemp("resume")
    (root / JOURNAL).write_bytes(raw)
    try:
        resume_run(root, progress=None)
    except ReuseError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 2000
    except started:
        pass
    assert (root / JOURNAL).read_bytes() == raw
