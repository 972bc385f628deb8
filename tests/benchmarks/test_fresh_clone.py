"""benchmarks/fresh_clone.py: what a committed pass log says, read back the way the raw file
records it (issue 34's suite times come from these logs, not from hand-copied numbers)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("bench_fresh_clone",
                                               ROOT / "benchmarks" / "fresh_clone.py")
assert _SPEC is not None and _SPEC.loader is not None
fresh_clone = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = fresh_clone
_SPEC.loader.exec_module(fresh_clone)


def test_every_recorded_pass_reads_back_from_its_log() -> None:
    raw = json.loads((ROOT / "docs" / "bench" / "fresh_clone.json").read_text())
    tests = [r for r in raw["results"] if r["kind"] == "test"]
    assert tests
    for rec in tests:
        text = (ROOT / rec["log"]).read_text(encoding="utf-8")
        again = fresh_clone.parse_log(text)
        assert again["spark_lane"] == rec["spark_lane"] and again["other_lane"] == rec["other_lane"]
        assert again.get("jvm_lane") == rec.get("jvm_lane")
        assert again["failed_tests"] == rec["failed_tests"]
        # green means every lane passed and the command exited 0; the limit is each lane's
        lanes = fresh_clone.lanes_of(rec)
        assert rec["green"] == (rec["rc"] == 0 and all(x["failed"] == 0 for x in lanes))
        assert rec["within_limit"] == (rec["green"] and max(x["seconds"] for x in lanes) < 900)


def test_a_failed_lane_makes_the_pass_red_whatever_the_exit_code() -> None:
    log = "\n".join(["== 47 passed, 1591 deselected in 800.0s (0:13:20) ==",
                     "FAILED tests/x.py::t - AssertionError", "1 failed, 1588 passed in 290.1s",
                     "Spark and browser tests: exit 0; the others: exit 1"])
    rec = fresh_clone.record(log, command="bash .ci/run", commit="0" * 40, loaded=False,
                             started="2026-11-28T07:00:00Z", ended="2026-11-28T07:14:00Z",
                             rc=0, how="a test")
    assert rec["other_lane"] == {"passed": 1588, "failed": 1, "seconds": 290.1}
    assert not rec["green"] and not rec["within_limit"]
    assert rec["failed_tests"] == ["tests/x.py::t"] and rec["pytest_s"] == 800.0


def test_a_shuffled_pass_keeps_its_seed_and_the_table_names_it() -> None:
    log = "\n".join(["== 47 passed in 800.0s (0:13:20) ==", "1589 passed in 290.1s",
                     "Spark and browser tests: exit 0; the others: exit 0"])
    base = dict(command="bash .ci/run --shuffle 2", commit="0" * 40, loaded=False,
                started="2026-11-28T07:00:00Z", ended="2026-11-28T07:14:00Z", rc=0, how="t")
    rec = fresh_clone.record(log, shuffle=2, **base)  # type: ignore[arg-type]
    assert rec["shuffle"] == 2 and rec["green"]
    assert "shuffle" not in fresh_clone.record(log, **base)  # type: ignore[arg-type]
    report = importlib.import_module("benchmarks.report")
    assert "shuffled (seed 2)" in report._fresh_clone([[rec]])


def test_a_three_lane_pass_needs_its_many_jvm_lane() -> None:
    """The passes of 2026-11-29 that ran the tests starting several JVMs in a lane of their
    own: a pass whose log lacks that lane's summary (it died) is red, and its time counts for
    the limit."""
    head = ["== 43 passed in 500.0s (0:08:20) ==",
            "======== the tests that start several JVMs, run beside the above ========"]
    tail = ["======== the tests without Spark or a browser, run beside the above ========",
            "1589 passed in 290.1s",
            "Spark and browser tests: exit 0; the many-JVM tests: exit 0; the others: exit 0"]
    base = dict(command="bash .ci/run", commit="0" * 40, loaded=False,
                started="2026-11-29T07:00:00Z", ended="2026-11-29T07:14:00Z", rc=0, how="t")
    ok = fresh_clone.record("\n".join([*head, "7 passed in 950.0s (0:15:50)", *tail]), **base)
    assert ok["jvm_lane"] == {"passed": 7, "failed": 0, "seconds": 950.0}
    assert ok["green"] and ok["pytest_s"] == 950.0 and not ok["within_limit"]
    died = fresh_clone.record("\n".join([*head, *tail]), **base)
    assert died["jvm_lane"] is None and not died["green"]
