from __future__ import annotations

import json

import pytest

from reuse.core.errors import StateError
from reuse.core.invariants import assert_invariants
from reuse.core.state import StateStore


def test_state_survives_restart_and_checkpoint(tmp_path, figure1):
    store = StateStore(tmp_path)
    m = store.open()
    for name in "ABCD":
        m.submit(figure1[name])
    m.remove("B")
    again = StateStore(tmp_path).open()
    assert again.to_state() == m.to_state()
    assert_invariants(again)
    store.checkpoint(m)
    assert (tmp_path / "journal.jsonl").read_text() == ""
    m.remove("A")  # journalled after the snapshot
    third = StateStore(tmp_path).open()
    assert third.to_state() == m.to_state() and set(third.submitted) == {"C", "D"}


def test_torn_last_line_is_dropped(tmp_path, figure1):
    m = StateStore(tmp_path).open()
    m.submit(figure1["A"])
    m.submit(figure1["B"])
    consistent = m.to_state()
    with open(tmp_path / "journal.jsonl", "a") as fh:  # a crash half-way through writing C
        fh.write(json.dumps({"seq": 3, "op": "submit", "dag": figure1["C"].to_dict()})[:70])
    again = StateStore(tmp_path).open()
    assert again.to_state() == consistent
    again.submit(figure1["C"])  # the journal is usable afterwards
    assert set(StateStore(tmp_path).open().submitted) == {"A", "B", "C"}


def test_crash_between_snapshot_and_truncation_does_not_replay_twice(tmp_path, figure1):
    store = StateStore(tmp_path)
    m = store.open()
    m.submit(figure1["A"])
    journal = (tmp_path / "journal.jsonl").read_text()
    store.checkpoint(m)
    (tmp_path / "journal.jsonl").write_text(journal)  # as if truncation never happened
    again = StateStore(tmp_path).open()
    assert list(again.submitted) == ["A"]


def test_damaged_journal_is_a_clear_error(tmp_path, figure1):
    m = StateStore(tmp_path).open()
    m.submit(figure1["A"])
    m.submit(figure1["B"])
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    (tmp_path / "journal.jsonl").write_text("garbage\n" + lines[1] + "\n")
    with pytest.raises(StateError, match=r"journal.jsonl: line 1 is damaged"):
        StateStore(tmp_path).open()


def test_failed_journal_write_changes_nothing(tmp_path, figure1):
    m = StateStore(tmp_path).open()
    m.submit(figure1["A"])
    before = m.to_state()
    (tmp_path / "journal.jsonl").unlink()
    (tmp_path / "journal.jsonl").mkdir()  # writing the journal now fails
    with pytest.raises(StateError, match="nothing was changed"):
        m.submit(figure1["B"])
    assert m.to_state() == before
