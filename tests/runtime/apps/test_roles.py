"""What each instance runs and how far it may claim (issue 24), without Spark or Redis."""

from __future__ import annotations

import random
from typing import Any

import pytest

from reuse.core.errors import ReuseError
from reuse.runtime.apps.roles import RoleLog, check_apps, instance_tasks, ready_mark
from reuse.runtime.common.planners import ReusePlanner
from reuse.testing import riot_flows


def _live(pl: ReusePlanner, flows: dict[str, Any], dags: list[str]) -> dict[str, list[str]]:
    parents: dict[str, list[str]] = {}
    for d in dags:
        for t in pl.submit(flows[d]).start:
            parents[t.id] = list(t.parents)
    return parents


def test_a_replica_runs_the_shared_tasks_closed_under_parents() -> None:
    """On real RIoT dataflows: a replica instance's set is every task with ``>= U`` users and
    each of its ancestors; the home and ``U = 1`` run everything."""
    flows = riot_flows()
    pl = ReusePlanner()
    parents = _live(pl, flows, ["stats-sys", "clean-sys", "etl-sys", "pred-sys"])
    users = pl.users()
    for u in (2, 3):
        got = instance_tasks(False, users, parents, u)
        assert got is not None and got == {t for t, n in users.items() if n >= u}
        assert all(p in got for t in got for p in parents[t])  # closed under parents
    assert instance_tasks(True, users, parents, 2) is None
    assert instance_tasks(False, users, parents, 1) is None


def test_the_ready_mark_stops_at_every_cut_and_never_passes_the_horizon() -> None:
    """Random clocks, horizons and cuts: claiming from the frontier to each mark in turn puts a
    batch boundary on every cut, and no claim passes the horizon or the clock."""
    rng = random.Random(7)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, 400), rng.randint(0, 8)))
        frontier, bounds = 0, []
        for clock in sorted(rng.sample(range(1, 500), 30)):
            horizon = clock + rng.randint(-20, 20)
            mark = ready_mark(clock, horizon, cuts, frontier)
            assert mark >= frontier
            assert mark == frontier or mark <= min(clock, horizon)
            if mark > frontier:
                bounds.append(mark)
                frontier = mark
        assert {c for c in cuts if c <= frontier} <= set(bounds)


def test_the_role_log_answers_by_the_batch_first_seq() -> None:
    log = RoleLog()
    log.set(10, frozenset({"a"}))
    log.set(10, frozenset({"a", "b"}))  # two operations at one cut: the last set holds
    log.set(30, None)
    assert log.at(9) == frozenset() and log.at(10) == {"a", "b"} and log.at(30) is None
    with pytest.raises(ValueError, match="below"):
        log.set(20, None)


@pytest.mark.parametrize(("k", "u", "workers", "message"), [
    (0, 2, None, "needs --k-safe K >= 1"),
    (1, 0, None, "U must be an integer >= 1"),
    (True, 2, None, "needs --k-safe K >= 1"),
    (2, 2, 2, "needs K\\+1=3 workers"),
])
def test_parameters_it_cannot_run_are_one_line_errors(k: Any, u: Any, workers: Any,
                                                      message: str) -> None:
    with pytest.raises(ReuseError, match=message) as exc:
        check_apps(k, u, workers=workers)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(("extra", "message"), [
    (["--k-safe", "0", "--replicas", "apps"], "--replicas apps needs --k-safe K >= 1"),
    (["--k-safe", "1", "--replicas", "apps", "--replicate-min-users", "0"],
     "--replicate-min-users must be an integer >= 1"),
    (["--k-safe", "1", "--replicas", "apps", "--merge", "partial"],
     "needs the shared query"),
    # broker-fed runs across applications (issue 32): a broker that is not there is one
    # line before the run's Redis or any instance starts
    (["--k-safe", "1", "--replicas", "apps", "--source", "mqtt://127.0.0.1:1"],
     "no MQTT broker at mqtt://127.0.0.1:1"),
])
def test_reuse_run_refuses_bad_apps_parameters_before_anything_starts(
        refused_run: Any, extra: list[str], message: str) -> None:
    """One line, exit 1, and no JVM, Redis, instance, CSV or run directory."""
    code, err = refused_run(extra)
    assert code == 1 and len(err.splitlines()) == 1 and message in err, err


def test_an_apps_run_without_its_start_record_is_not_resumed(tmp_path: Any,
                                                             capsys: Any) -> None:
    """``--resume`` of an apps run whose coordinator died before its trace began (an
    ``apps.json``, no start record): one line naming the folder and the files, exit 1, and
    nothing started or written (no Redis folder, no CSV)."""
    from reuse.cli import main

    (tmp_path / "apps.json").write_text("{}")
    out = tmp_path / "out.csv"
    code = main(["run", "--resume", str(tmp_path), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1, err
    assert str(tmp_path) in err and "apps-run.json" in err, err
    assert not out.exists() and not (tmp_path / "redis").exists()


def test_reuse_run_resume_sends_a_live_engines_run_to_engine_resume(tmp_path: Any,
                                                                    capsys: Any) -> None:
    """A live engine's run across applications (``apps-live.json``) is ``Engine.resume``'s:
    ``reuse run --resume`` says so in one line and starts nothing."""
    from reuse.cli import main

    (tmp_path / "apps.json").write_text("{}")
    (tmp_path / "apps-live.json").write_text("{}")
    code = main(["run", "--resume", str(tmp_path), "--out", str(tmp_path / "out.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "Engine.resume" in err, err
    assert not (tmp_path / "redis").exists()


@pytest.mark.parametrize(("apps_json", "names"), [
    ('{"instances": [{"id": "i0"}], "replacements": []}', "apps.json"),  # no spec, no pid
    ('{"instances": [], "replacements": [', "apps.json"),  # torn by the death
    ('{"instances": 3, "replacements": []}', "apps.json"),
])
def test_a_resume_refuses_a_broken_apps_record_before_anything_starts(
        tmp_path: Any, capsys: Any, apps_json: str, names: str) -> None:
    """A complete start record but an unreadable ``apps.json``: one line naming the file, exit
    1, and nothing started (no Redis, whose folder it would make; no CSV)."""
    import json
    from pathlib import Path

    from reuse.cli import main
    from reuse.runtime.apps.instance import InstanceSpec
    from reuse.runtime.spec import RunSpec

    spec = RunSpec.of(replicas="apps", k_safe=1, data_dir=Path("d"))
    (tmp_path / "apps-run.json").write_text(json.dumps({"flows": [], "ops": [],
                                                        **spec.to_journal()}))
    (tmp_path / "apps").mkdir()
    base = InstanceSpec(id="", home=False, run="run", redis="redis://127.0.0.1:9/0", root="",
                        t0=0, start_seq=0, flows=[])
    (tmp_path / "apps" / "base.spec.json").write_text(json.dumps(base.as_dict()))
    (tmp_path / "apps.json").write_text(apps_json)
    out = tmp_path / "out.csv"
    code = main(["run", "--resume", str(tmp_path), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and names in err, err
    assert not out.exists() and not (tmp_path / "redis").exists()
