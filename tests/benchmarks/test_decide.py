"""benchmarks/decide.py and its registry (issue 33, item 3), without Spark or any run.

The registry is checked entry by entry; ``--list`` and ``--dry-run`` run in-process; the runs
are faked by replacing :func:`decide.run_arm` / :func:`decide.run_cell` (the only functions
that start a subprocess), and the provenance header (which asks git and ``java -version``) by
a stub, so the raw file a decision writes is checked without starting anything.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from reuse.core.paths import opmw_corpus_dir, riotbench_dir
from reuse.runtime.common.policy import LIVE_MODES
from reuse.runtime.run import CSV_COLUMNS
from reuse.runtime.spec import RunSpec
from reuse.testing import missing

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}",
                                                  ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


decide = _load("decide")
report = _load("report")
decisions = sys.modules["decisions"]  # the registry decide.py imports
provenance = sys.modules["provenance"]

FIG3 = ("default-inplace", "reuse-inplace")
needs_data = pytest.mark.skipif(
    not (riotbench_dir().is_dir() and opmw_corpus_dir().is_dir()),
    reason=missing("data", "data/riotbench or data/opmw not set up"))


@pytest.fixture(autouse=True)
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may start a process (a JVM least of all)."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a subprocess was started: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(provenance, "provenance", lambda argv=None: {
        "command": "python benchmarks/decide.py", "commit": "0123456789abcdef", "dirty": False,
        "machine": {"cpu": "test", "cores": 2}, "time": "2026-11-28T00:00:00Z"})


# ---------------------------------------------------------------- the registry

def test_every_entry_is_valid() -> None:
    names = [c.name for c in decisions.COMPARISONS]
    raws = [c.raw for c in decisions.COMPARISONS]
    assert len(set(names)) == len(names) and len(set(raws)) == len(raws)
    for c in decisions.COMPARISONS:
        assert decisions.get(c.name) is c
        assert c.raw.startswith("docs/bench/") and c.raw.endswith(".json")
        assert "/" not in c.raw.removeprefix("docs/bench/")
        assert c.target and c.shortened and c.statistic and c.issue > 0
        assert c.kind in ("trace", "cell") and c.arms and len(set(c.arms)) == len(c.arms)
        for a, b in c.pairs:
            assert a != b and a in c.arms and b in c.arms
        assert c.pairs or (c.kind == "cell" and len(c.arms) == 1)  # only the floor's
        assert c.seconds(3) > 0 and c.runs_per_rep > 0
        if c.kind == "trace":
            assert c.statistic in CSV_COLUMNS and c.steps > 0 and c.step_s > 0
            assert set(c.windows) <= {"peak", "mean", "removals"} and c.windows
            for arm in c.arms:
                assert arm in LIVE_MODES
                RunSpec.of(policy=arm, step_seconds=c.step_s, warmup_s=c.warmup_s,
                           rate=c.rate, trigger_s=c.trigger_s)  # a valid run, built only
            if c.shortened.startswith("steps"):  # shortened: a whole number of triggers
                assert (c.step_s / c.trigger_s).is_integer()
            assert not c.script and not c.args
        else:
            assert (ROOT / c.script).is_file() and c.run_s > 0
            assert c.out_flag in ("--json", "--out")
            assert not {"--repeat", "--json", "--out", "--only", "--only-mode"} & set(c.args)
            args = dict(zip(c.args[::2], c.args[1::2], strict=False))
            modes = args["--modes"] if "--modes" in args else args["--order"]
            assert tuple(modes.split(",")) == c.arms
            if "--rates" in args:  # the runs of one repetition: rates x modes, less --skip
                skip = set(filter(None, args.get("--skip", "").split(",")))
                cells = [f"{m}@{r}" for r in args["--rates"].split(",") for m in c.arms]
                assert c.cells_per_rep == len([x for x in cells if x not in skip])
            else:
                assert c.cells_per_rep == len(c.arms)
    with pytest.raises(KeyError, match="unknown comparison 'nope'"):
        decisions.get("nope")


def test_figure_3_is_registered_on_both_workloads() -> None:
    for name, workload in (("fig3-riot", "riot"), ("fig3-opmw", "opmw")):
        c = decisions.get(name)
        assert (c.kind, c.workload, c.trace, c.dags, c.issue) == ("trace", workload, "seq", 0, 14)
        assert c.arms == FIG3 and c.pairs == (("reuse-inplace", "default-inplace"),)
        assert {"peak", "mean"} <= set(c.windows) and c.statistic == "cores"
        assert (c.rate, c.trigger_s, c.warmup_s, c.step_s) == (10.0, 2.0, 10.0, 8.0)


@needs_data
def test_registered_steps_are_the_traces() -> None:
    for c in decisions.COMPARISONS:
        if c.kind != "trace":
            continue
        ops, windows = decide.trace_shape(c)
        assert len(ops) == c.steps, c.name
        assert set(windows) == set(c.windows)
        assert windows["mean"] == list(range(c.steps))
        if "removals" in windows:
            assert windows["removals"] == [i for i, (op, _) in enumerate(ops) if op == "remove"]
    _, w = decide.trace_shape(decisions.get("fig3-riot"))
    assert w["peak"] == [20, 21]  # all 21 DAGs deployed at step 21, and the next


def test_estimates_follow_the_parameters() -> None:
    c = decisions.get("fig3-riot")
    assert c.seconds(3) == 3 * 2 * (15 + 10 + 42 * 8 + 30)
    assert c.seconds(5) == 5 * 2 * (15 + 10 + 42 * 8 + 30)
    cell = decisions.get("rates-riot-inplace")
    assert cell.seconds(3) == 3 * 8 * 90 + 60
    assert decisions.total_seconds(3) == sum(x.seconds(3) for x in decisions.COMPARISONS)
    assert "3 reps x 2 runs x (15 s JVM + 10 s warm-up + 42 x 8 s + 30 s" in c.formula(3)


# ---------------------------------------------------------------- --list and --dry-run

def test_list_prints_every_comparison_its_time_and_the_total(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert decide.main(["--list"]) == 0
    out = capsys.readouterr().out
    for c in decisions.COMPARISONS:
        assert f"\n{c.name} (issue {c.issue}): {c.target}\n" in out
        assert f"= {decide._hm(c.seconds(3))}" in out and c.raw in out
    total = decisions.total_seconds(3)
    assert f"total: {decide._hm(total)} for {len(decisions.COMPARISONS)} comparisons" in out
    assert ("within the 3 h 00 min target" in out) == (total < 3 * 3600)
    assert decide._hm(39 * 60) == "39 min" and decide._hm(3 * 3600 + 7 * 60) == "3 h 07 min"
    assert decide.main(["--list", "--reps", "5"]) == 0
    assert f"total: {decide._hm(decisions.total_seconds(5))}" in capsys.readouterr().out


def test_dry_run_prints_the_interleaved_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert decide.main(["fig3-riot", "--reps", "3", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    cmds = [shlex.split(x) for x in lines if not x.startswith("#")]
    assert len(cmds) == 6
    assert [c[-3:] for c in cmds] == [["fig3-riot", "--only-arm", a] for a in FIG3 * 3]
    assert all(c[0] == sys.executable and c[1].endswith("benchmarks/decide.py") for c in cmds)
    assert lines[-1].startswith("# fig3-riot: estimated 39 min")
    assert decide.main(["seq-peak-opmw", "--reps", "4", "--dry-run"]) == 0
    cell = [shlex.split(x) for x in capsys.readouterr().out.splitlines()
            if not x.startswith("#")]
    assert len(cell) == 1 and cell[0][1].endswith("benchmarks/runtime_seq_peak.py")
    assert cell[0][-4:-1] == ["--repeat", "4", "--out"]


def test_bad_arguments_run_nothing() -> None:
    for argv in (["nope"], [], ["fig3-riot", "--reps", "0"],
                 ["fig3-riot", "--only-arm", "reuse"]):  # reuse is not an arm of fig3-riot
        with pytest.raises(SystemExit):
            decide.main(argv)


def test_the_plan_interleaves_the_arms() -> None:
    c = decisions.get("fig3-opmw")
    assert decide.plan(c, 3) == [(1, FIG3[0]), (1, FIG3[1]), (2, FIG3[0]), (2, FIG3[1]),
                                 (3, FIG3[0]), (3, FIG3[1])]
    four = decisions.get("trace-policy-riot")
    assert [a for _, a in decide.plan(four, 2)] == list(four.arms) * 2
    assert decide.plan(decisions.get("seq-peak-riot"), 3) == []  # the script interleaves


# ---------------------------------------------------------------- a decision, faked runs

OPS = [("submit", "a"), ("submit", "b"), ("remove", "a"), ("remove", "b")]
#: cores per step of each arm; repetition i adds 0.1 * i to both (drift between repetitions)
CORES = {"default-inplace": [0.50, 0.60, 0.40, 0.20], "reuse-inplace": [0.40, 0.61, 0.35, 0.22]}


def _rows(arm: str, rep: int) -> list[dict[str, Any]]:
    wobble = {1: -0.02, 4: 0.02}.get(rep, 0.0)  # step 2's difference changes sign with it
    return [{"step": i + 1, "op": op, "dag": dag, "cut": 100 * i + rep, "cores": round(
        CORES[arm][i] + 0.1 * rep + (wobble if arm == "reuse-inplace" and i == 1 else 0.0), 4)}
        for i, (op, dag) in enumerate(OPS)]


@pytest.fixture
def fake_trace(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    """A 4-step trace; each run returns made-up rows; repetition 2 of Reuse fails."""
    started: list[tuple[int, str]] = []

    def run_arm(c: Any, arm: str) -> dict[str, Any] | None:
        rep = sum(1 for _, a in started if a == arm) + 1
        started.append((rep, arm))
        return None if (rep, arm) == (2, "reuse-inplace") else {"rows": _rows(arm, rep)}

    monkeypatch.setattr(decide, "run_arm", run_arm)
    monkeypatch.setattr(decide, "trace_shape", lambda c: (
        OPS, {"peak": [1, 2], "mean": [0, 1, 2, 3]}))
    return started


def test_a_decision_writes_every_run_and_the_paired_verdicts(
        fake_trace: list[tuple[int, str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "docs" / "bench" / "decide_fig3_riot.json"
    assert decide.main(["fig3-riot", "--reps", "4", "--out", str(out)]) == 0
    assert fake_trace == decide.plan(decisions.get("fig3-riot"), 4)  # A B A B A B A B
    raw = json.loads(out.read_text(encoding="utf-8"))
    assert raw["provenance"]["commit"] == "0123456789abcdef"
    assert raw["comparison"]["name"] == "fig3-riot" and raw["comparison"]["step_s"] == 8.0
    res = raw["results"]
    assert res["order"] == [[r, a] for r, a in fake_trace]
    assert [(r["rep"], r["arm"], r["ok"]) for r in res["runs"]][2:4] == [
        (2, "default-inplace", True), (2, "reuse-inplace", False)]
    assert res["runs"][0]["rows"] == _rows("default-inplace", 1)  # every run's rows, kept
    assert res["labels"] == ["submit a", "submit b", "remove a", "remove b"]
    assert res["cuts"][1] == [101, 104]  # the cuts' range over the complete runs, per step
    d = res["decisions"][0]
    assert (d["a"], d["b"], d["n"]) == ("reuse-inplace", "default-inplace", 3)
    assert [s["verdict"] for s in d["steps"]] == [
        "reuse-inplace lower", "no difference", "reuse-inplace lower", "default-inplace lower"]
    assert d["steps"][0]["diff"]["median"] == pytest.approx(-0.1)
    peak, mean = d["windows"]
    assert peak["paired"]["verdict"] == "reuse-inplace lower"
    assert peak["whole"]["outcome"] == "no difference"  # the drift hides it from whole runs
    assert mean["steps"] == [0, 1, 2, 3]
    printed = capsys.readouterr().out
    assert "reuse-inplace - default-inplace: 3 paired runs" in printed
    assert f"wrote {out}" in printed
    # the report renders the same decision from the runs alone
    body = report.body(raw)
    table = report._decided([body])
    assert "| 1 | submit a | 0.700 [0.500, 0.800] | 0.800 [0.600, 0.900] | " \
           "-0.100 [-0.100, -0.100] | reuse-inplace lower |" in table
    assert "| peak (steps 2-3) |" in table and "Overall, paired: peak: reuse-inplace lower" \
        in table
    assert report._decided_verdict([body]) == "no difference"  # the runs' rule does not agree


def test_a_run_whose_rows_are_not_the_trace_is_left_out(
        fake_trace: list[tuple[int, str]], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setattr(decide, "run_arm", lambda c, arm: {"rows": _rows(arm, 1)[:3]})
    out = tmp_path / "x.json"
    decide.main(["fig3-riot", "--reps", "3", "--out", str(out)])
    res = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert not any(r["ok"] for r in res["runs"]) and res["decisions"][0]["n"] == 0
    assert {s["verdict"] for s in res["decisions"][0]["steps"]} == {"not decided"}


def test_a_cell_comparison_pairs_its_scripts_runs(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    cores = {"default-inplace": {10.0: 0.30, 30.0: 0.50}, "reuse-inplace": {10.0: 0.28, 30.0: 0.52}}
    cells = [{"mode": m, "rate": r, "rep": i, "cores": cores[m][r] + 0.01 * i}
             for r in (10.0, 30.0) for i in (1, 2, 3) for m in FIG3]
    cells[-1] = {"mode": "reuse-inplace", "rate": 30.0, "rep": 3, "failed": True}
    seen: list[int] = []
    monkeypatch.setattr(decide, "run_cell", lambda c, reps, out: seen.append(reps) or {
        "args": {}, "floor": {}, "cells": cells})
    out = tmp_path / "cell.json"
    assert decide.main(["rates-opmw-inplace", "--reps", "3", "--out", str(out)]) == 0
    assert seen == [3]
    res = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert res["labels"] == ["10/s", "30/s"] and res["delegated"]["cells"] == cells
    runs = {(r["rep"], r["arm"]): r["values"] for r in res["runs"]}
    assert runs[3, "reuse-inplace"] == [pytest.approx(0.31), None]
    d = res["decisions"][0]
    assert [s["verdict"] for s in d["steps"]] == ["reuse-inplace lower", "not decided"]
    assert d["windows"] == []
    peak = decide.aggregate_cell(decisions.get("seq-peak-riot"), 3, {"runs": {
        "default-shared": [{"rep": i, "peak": {"cores": 1.0 + i / 100}} for i in (1, 2, 3)],
        "reuse": [{"rep": i, "peak": {"cores": 1.1}} for i in (1, 2, 3)],
        "reuse-relaunch": [{"rep": i, "peak": {"cores": 0.6}} for i in (1, 3)]}})
    assert peak["labels"] == ["SEQ peak"]
    verdicts = [x["steps"][0]["verdict"] for x in peak["decisions"]]
    assert verdicts == ["default-shared lower", "not decided"]  # relaunch: 2 pairs only
