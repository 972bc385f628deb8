"""The source replay's hold, read as the Spark driver reads it (no session needed)."""

from __future__ import annotations

import time
from pathlib import Path

from reuse.runtime.common.files import write_text
from reuse.runtime.dataplane.sources import ReplayDataSource


def _reader(tmp_path: Path, **opts: str):  # type: ignore[no-untyped-def]
    options = {"src": "SYS", "t0": str(int(time.time() * 1000) - 10_000), "rate": "10",
               "hold": str(tmp_path / "hold"), **opts}
    return ReplayDataSource(options).streamReader(None)


def test_a_hold_stops_the_replay_before_its_seq_and_a_release_lets_it_catch_up(
        tmp_path: Path) -> None:
    reader = _reader(tmp_path)
    assert reader.latestOffset({"seq": 0})["seq"] >= 100  # 10 s at 10/s, no hold file
    write_text(tmp_path / "hold", "40")
    assert reader.latestOffset({"seq": 0})["seq"] == 40
    # a hold behind the batch's start holds it where it is, never rewinds it
    assert reader.latestOffset({"seq": 60})["seq"] == 60
    (tmp_path / "hold").unlink()
    assert reader.latestOffset({"seq": 40})["seq"] >= 100


def test_the_limit_still_ends_a_held_replay(tmp_path: Path) -> None:
    write_text(tmp_path / "hold", "80")
    assert _reader(tmp_path, limit="30").latestOffset({"seq": 0})["seq"] == 30
