"""What ``reuse.live.Engine`` refuses about run directories before any JVM starts (issue 32):
a new engine in a directory that holds a run, and a resume of what is not a live engine's."""

from __future__ import annotations

from pathlib import Path

import pytest

from reuse.core.errors import ReuseError
from reuse.live import Engine
from reuse.runtime.journal import RunJournal


def test_a_new_engine_refuses_a_directory_that_holds_a_run(tmp_path: Path) -> None:
    RunJournal(tmp_path).start({"t0": 0, "start_seq": 0})
    with pytest.raises(ReuseError, match="already holds a run") as err:
        Engine(root=tmp_path)
    assert "Engine.resume" in str(err.value) and "\n" not in str(err.value)


def test_resume_refuses_a_directory_without_a_live_engines_journal(tmp_path: Path) -> None:
    with pytest.raises(ReuseError, match="no journal.jsonl"):
        Engine.resume(tmp_path)
    RunJournal(tmp_path).start({"t0": 0, "start_seq": 0, "flows": [], "ops": []})
    with pytest.raises(ReuseError, match="reuse run --resume") as err:
        Engine.resume(tmp_path)
    assert "\n" not in str(err.value)


def test_a_resume_across_applications_refuses_what_it_cannot_take_up(tmp_path: Path) -> None:
    """A directory with an ``apps.json`` is handed to ``AppsEngine.resume``: without the live
    engine's record, with a trace's record (``reuse run --resume``'s) or with another master,
    one line naming the directory, and nothing started (no Redis folder)."""
    import json

    (tmp_path / "apps.json").write_text(json.dumps({"instances": [], "replacements": []}))
    with pytest.raises(ReuseError, match="holds no live engine across applications") as err:
        Engine.resume(tmp_path)
    assert str(tmp_path) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ReuseError, match="resumes on its instances' master"):
        Engine.resume(tmp_path, master="local[1]")
    (tmp_path / "apps-run.json").write_text("{}")
    with pytest.raises(ReuseError, match="finish it with reuse run --resume"):
        Engine.resume(tmp_path)
    assert not (tmp_path / "redis").exists()


def test_across_applications_bad_settings_are_refused_before_anything_starts(
        tmp_path: Path) -> None:
    with pytest.raises(ReuseError, match="needs --k-safe K >= 1"):
        Engine(replicas="apps", k_safe=0, root=tmp_path)
    with pytest.raises(ReuseError, match="unknown --replicas 'bogus'"):
        Engine(replicas="bogus", root=tmp_path)
    with pytest.raises(ReuseError, match="takes no record"):
        Engine(replicas="apps", record="digest", root=tmp_path)
    assert not any(tmp_path.iterdir())  # nothing was started or written


def test_a_broker_that_answers_nothing_is_refused_and_a_password_is_kept(
        tmp_path: Path) -> None:
    """A broker-fed engine checks its broker before any JVM starts, and keeps the broker's
    password under its root, where ``Engine.resume`` finds it (its journal holds the URL
    masked)."""
    import socket
    import stat

    from reuse.runtime.common.run_secrets import secret_file
    from reuse.runtime.run import check_broker

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ReuseError) as err:
        Engine(source=f"mqtt://u:pw@127.0.0.1:{port}", root=tmp_path / "a")
    assert "\n" not in str(err.value) and "pw" not in str(err.value)
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
    with socket.socket() as listening:  # a port that answers
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        check_broker(f"mqtt://u:pw@127.0.0.1:{listening.getsockname()[1]}", tmp_path / "b")
    kept = secret_file(tmp_path / "b", "broker")
    assert kept.read_text() == "pw" and stat.S_IMODE(kept.stat().st_mode) == 0o600
