from __future__ import annotations

import pytest

from reuse.tasks.base import TaskError
from reuse.tasks.sources import replay


def test_replay_is_deterministic_and_numbered(data_dir):
    a = list(replay("SYS", data_dir, limit=5))
    b = list(replay("SYS", data_dir, limit=5))
    assert a == b
    assert [e["seq"] for e in a] == [0, 1, 2, 3, 4]
    assert [e["ts"] for e in a] == [0, 100, 200, 300, 400]  # 10 events/s
    assert a[0]["event_time"] == 1422748800000 and a[0]["payload"].startswith('{"e":')


def test_whole_files_and_loop(data_dir):
    assert len(list(replay("SYS", data_dir))) == 1000
    assert len(list(replay("TAXI", data_dir))) == 1000  # last line has no newline
    looped = list(replay("FIT", data_dir, loop=True, limit=100))
    assert len(looped) == 100 and looped[45]["payload"] == looped[0]["payload"]
    assert looped[99]["seq"] == 99


def test_unknown_source(data_dir):
    with pytest.raises(TaskError, match="unknown source 'GRID'"):
        list(replay("GRID", data_dir))
