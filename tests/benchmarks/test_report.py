"""benchmarks/report.py: tables generated from raw files, and ``--check`` (issue 33). No Spark:
the raw files are the committed ones, copied into a small repository in ``tmp_path``."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "benchmarks" / "report.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


report = _load()

PAGE = """# Benchmarks

Faults (`docs/bench/faults.json`):

<!-- report:faults -->
<!-- /report:faults -->

Issue 24:

<!-- report:rates_apps -->
<!-- /report:rates_apps -->

- <!-- verdict:rates_apps --> **Target missed** (decided).
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two committed raw files and a page whose blocks are rendered."""
    bench = tmp_path / "docs" / "bench"
    bench.mkdir(parents=True)
    for f in ("faults.json", "rates_apps.json"):
        shutil.copy(ROOT / "docs" / "bench" / f, bench / f)
    (tmp_path / "BENCHMARKS.md").write_text(PAGE, encoding="utf-8")
    assert report.render_all(tmp_path) == []  # writes the blocks
    return tmp_path


def _page(repo: Path) -> str:
    return (repo / "BENCHMARKS.md").read_text(encoding="utf-8")


def _edit(repo: Path, old: str, new: str) -> None:
    text = _page(repo)
    assert old in text
    (repo / "BENCHMARKS.md").write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_repository_as_committed_passes() -> None:
    assert report.check(ROOT) == []


def test_rendering_fills_the_blocks_and_check_then_passes(repo: Path) -> None:
    text = _page(repo)
    assert "| driver | 10 (mid-trace) | 14 | 1 | 16.5 | 2.0 | 14.4 | 0 | 0 |" in text
    assert "| reuse-inplace, K=1, U=2, apps | 73 | 27 | 0.753 [0.735, 0.801] | 7.4 |" in text
    assert "default-inplace lower by 0.341 cores" in text
    assert "raw file without provenance: written before issue 33" in text
    assert report.check(repo) == []
    assert report.main(["--check", "--root", str(repo)]) == 0
    # rendering again changes nothing
    assert report.render_all(repo) == [] and _page(repo) == text


def test_check_fails_on_a_hand_edited_table_and_rendering_restores_it(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(repo, "| 16.5 |", "| 6.5 |")
    edited = _page(repo)
    assert report.main(["--check", "--root", str(repo)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "report:faults differs from its raw files (faults.json)" in out[0]
    assert _page(repo) == edited  # --check writes nothing
    assert report.main(["--root", str(repo)]) == 0
    assert "| 16.5 |" in _page(repo) and report.check(repo) == []


def test_check_fails_on_a_missing_raw_file(repo: Path) -> None:
    (repo / "docs" / "bench" / "faults.json").unlink()
    problems = report.check(repo)
    assert any("docs/bench/faults.json: raw file missing (read by report:faults)" in p
               for p in problems)
    # the prose's citation of it is reported too
    assert any("docs/bench/faults.json: cited raw file missing" in p for p in problems)


def test_check_fails_on_a_wrong_verdict_word(repo: Path) -> None:
    _edit(repo, "**Target missed** (decided)", "**Target met** (decided)")
    problems = report.check(repo)
    assert len(problems) == 1
    assert "verdict:rates_apps: the line says 'met'" in problems[0]
    assert "gives 'missed'" in problems[0]


def test_not_decided_is_wrong_for_a_comparison_of_three_runs_each(repo: Path) -> None:
    _edit(repo, "**Target missed** (decided)", "one run: not decided")
    assert ["'not decided'" in p for p in report.check(repo)] == [True]


def test_check_fails_on_an_unknown_marker(repo: Path) -> None:
    _edit(repo, "Issue 24:", "<!-- report:nope -->\n<!-- /report:nope -->\n\nIssue 24:")
    problems = report.check(repo)
    assert len(problems) == 1 and "report:nope: no table of that name" in problems[0]
    _edit(repo, "<!-- verdict:rates_apps -->", "<!-- verdict:nope -->")
    assert any("verdict:nope: no verdict of that name" in p for p in report.check(repo))


def test_check_fails_on_an_unclosed_block(repo: Path) -> None:
    _edit(repo, "<!-- /report:faults -->\n", "")
    problems = report.check(repo)
    assert any("report:faults has no <!-- /report:faults -->" in p for p in problems)


def test_cited_raw_files_must_exist_outside_code_blocks(repo: Path) -> None:
    _edit(repo, "Issue 24:", "Issue 24 (`docs/bench/gone.json`, docs/bench/rates_*.json):")
    problems = report.check(repo)
    assert len(problems) == 1 and "docs/bench/gone.json: cited raw file missing" in problems[0]
    # a command in a code block writes a file; it does not cite one
    _edit(repo, "Issue 24 (`docs/bench/gone.json`, docs/bench/rates_*.json):",
          "```\nrun --json docs/bench/gone.json\n```\n\n    run --json docs/bench/gone2.json\n")
    assert report.check(repo) == []
    _edit(repo, "Faults (`docs/bench/faults.json`)", "Faults (docs/bench/nothing_*.json)")
    assert any("docs/bench/nothing_*.json: no raw file matches" in p for p in report.check(repo))


def test_a_verdict_word_beside_a_cited_file_needs_a_marker(repo: Path) -> None:
    _edit(repo, "Faults (`docs/bench/faults.json`):", "Target met (`docs/bench/faults.json`):")
    problems = report.check(repo)
    assert len(problems) == 1 and "without a <!-- verdict:NAME --> marker" in problems[0]
    # inside inline code it quotes output, and is not a claim
    _edit(repo, "Target met (`docs/bench/faults.json`):", "`decided: docs/bench/faults.json`:")
    assert report.check(repo) == []


def test_a_verdict_marker_needs_a_verdict_word(repo: Path) -> None:
    _edit(repo, "**Target missed** (decided)", "**Target** (see above)")
    assert any("no verdict word on its line" in p for p in report.check(repo))


def test_a_raw_file_with_provenance_is_credited(repo: Path) -> None:
    f = repo / "docs" / "bench" / "faults.json"
    runs = json.loads(f.read_text(encoding="utf-8"))
    prov = {"command": "python benchmarks/runtime_faults.py", "commit": "0123456789abcdef",
            "dirty": False, "time": "2026-11-27T10:00:00Z",
            "machine": {"cpu": "AMD EPYC", "cores": 2, "memory_gib": 23.4, "python": "3.11.7",
                        "pyspark": "4.0.1", "java": "openjdk 17"}}
    # a file written by provenance.raw_file: the results under a header
    f.write_text(json.dumps({"provenance": prov, "results": runs}), encoding="utf-8")
    problems = report.check(repo)
    assert len(problems) == 1 and "report:faults differs" in problems[0]  # the footnote only
    assert report.render_all(repo) == []
    text = _page(repo)
    assert ("commit 0123456789, AMD EPYC, 2 cores, 23.4 GiB, Python 3.11.7, PySpark 4.0.1"
            in " ".join(text.split()))
    assert "| driver | 10 (mid-trace) | 14 | 1 | 16.5 | 2.0 | 14.4 | 0 | 0 |" in text
    assert text.count(report.NO_PROVENANCE) == 1  # rates_apps.json's


def test_the_registry_reads_only_files_under_docs_bench() -> None:
    reg = report.registry()
    for name, e in reg.items():
        assert e.name == name and e.files and (e.render or e.verdict)
        for f in e.files:
            assert "/" not in f and f.endswith(".json")


def test_markers_shown_as_examples_are_not_blocks(repo: Path) -> None:
    _edit(repo, "Issue 24:", "```markdown\n<!-- report:nope -->\n<!-- /report:nope -->\n```\n\n"
          "A sentence takes `<!-- verdict:NAME -->` on its line.\n\nIssue 24:")
    assert report.check(repo) == []


def _decided_raw() -> dict:
    """A small raw file as ``benchmarks/decide.py`` writes it: 3 steps, 3 repetitions per arm,
    Reuse below Default at steps 1 and 3, the runs drifting up by 0.1 a repetition."""
    base = {"default-inplace": [0.50, 0.30, 0.40], "reuse-inplace": [0.45, 0.31, 0.30]}
    tweak = {1: 0.02, 2: -0.02}  # step 2's paired difference: +0.03, -0.01, +0.01
    runs = [{"rep": i, "arm": a, "ok": True, "seconds": 100.0,
             "values": [round(v + 0.1 * i + (tweak.get(i, 0.0) if a == "reuse-inplace"
                                             and k == 1 else 0.0), 4)
                        for k, v in enumerate(base[a])], "rows": []}
            for i in (1, 2, 3) for a in base]
    return {"provenance": {"command": "python benchmarks/decide.py fig3-riot --reps 3",
                           "commit": "fedcba9876543210", "dirty": False,
                           "time": "2026-11-28T09:00:00Z",
                           "machine": {"cpu": "AMD EPYC", "cores": 2, "memory_gib": 23.4,
                                       "python": "3.11.7", "pyspark": "4.0.1"}},
            "comparison": {"name": "fig3-riot", "arms": ["default-inplace", "reuse-inplace"],
                           "pairs": [["reuse-inplace", "default-inplace"]]},
            "results": {"kind": "trace", "statistic": "cores", "reps": 3,
                        "labels": ["submit a", "submit b", "remove a"],
                        "windows": {"peak": [0, 1], "mean": [0, 1, 2]}, "runs": runs}}


def test_a_decided_comparison_renders_and_its_verdict_is_checked(tmp_path: Path) -> None:
    bench = tmp_path / "docs" / "bench"
    bench.mkdir(parents=True)
    (bench / "decide_fig3_riot.json").write_text(json.dumps(_decided_raw()), encoding="utf-8")
    page = tmp_path / "BENCHMARKS.md"
    page.write_text("# Figure 3\n\n<!-- report:decide_fig3_riot -->\n<!-- /report:decide_fig3_riot"
                    " -->\n\n- <!-- verdict:decide_fig3_riot --> Reuse below Default: met.\n",
                    encoding="utf-8")
    # rendered; and "met" needs the runs' spread rule too, so the line's word is wrong
    problems = report.render_all(tmp_path)
    assert len(problems) == 1 and "the line says 'met'" in problems[0]
    assert "gives 'no difference'" in problems[0]
    text = page.read_text(encoding="utf-8")
    assert "**reuse-inplace against default-inplace**: 3 paired runs" in text
    assert ("| 1 | submit a | 0.650 [0.550, 0.750] | 0.700 [0.600, 0.800] | "
            "-0.050 [-0.050, -0.050] | reuse-inplace lower |") in text
    assert ("| 2 | submit b | 0.490 [0.430, 0.610] | 0.500 [0.400, 0.600] | "
            "0.010 [-0.010, 0.030] | no difference |") in text
    assert "| 3 | remove a |" in text and "-0.100 [-0.100, -0.100] | reuse-inplace lower |" in text
    # whole runs: paired, peak and mean are decided; the drift hides them from the runs' ranges
    assert "| peak (steps 1-2) |" in text and "| mean (steps 1-3) |" in text
    assert "| reuse-inplace lower | no difference |" in text
    assert "Per step, of 3: reuse-inplace lower at 2, default-inplace lower at 0, no " \
           "difference at 1, not decided at 0" in " ".join(text.split())
    assert "commit fedcba9876" in text
    page.write_text(text.replace("Default: met.", "Default: no difference."), encoding="utf-8")
    assert report.check(tmp_path) == []
    # the table is regenerated from the runs: a run changed by hand changes it
    raw = _decided_raw()
    raw["results"]["runs"][0]["values"][0] = 0.1
    (bench / "decide_fig3_riot.json").write_text(json.dumps(raw), encoding="utf-8")
    assert any("report:decide_fig3_riot differs" in p for p in report.check(tmp_path))


def test_decided_verdicts() -> None:
    raw = report.body(_decided_raw())
    assert report._decided_verdict([raw]) == "no difference"
    for r in raw["runs"]:  # no drift: the runs' ranges part too
        r["values"] = [v - 0.1 * r["rep"] for v in r["values"]]
    assert report._decided_verdict([raw]) == "met"
    raw["comparison"]["pairs"] = [["default-inplace", "reuse-inplace"]]
    assert report._decided_verdict([raw]) == "missed"
    raw["runs"] = raw["runs"][:4]
    assert report._decided_verdict([raw]) == "not decided"


def _floor_raw(cores: list[float]) -> dict:
    """A decided cell against the floor at one rate (100/s): the columnar floor is 0.1 cores."""
    floor = {"reuse": {"ms_per_seq": 2.0, "columnar": {"ms_per_seq": 1.0}},
             "default": {"ms_per_seq": 3.0}}
    cells = [{"mode": "reuse-inplace", "rate": 100.0, "cores": c, "sustained": True}
             for c in cores]
    return {"reps": len(cores), "comparison": {"name": "rates-riot-floor"},
            "delegated": {"cells": cells, "floor": floor,
                          "args": {"trigger": 2.0, "window": 60.0, "settle": 20.0}}}


@pytest.mark.parametrize(("cores", "verdict"), [
    ([0.15, 0.19, 0.2], "met"),  # every run within 2x the columnar floor (0.2 cores)
    ([0.21, 0.3, 0.4], "missed"),  # every run above it
    ([0.19, 0.21, 0.25], "not decided"),  # the runs straddle it
])
def test_the_floor_bound_is_judged_run_by_run_against_the_columnar_floor(
        cores: list[float], verdict: str) -> None:
    raw = _floor_raw(cores)
    assert report._floor_bound_verdict([raw]) == verdict
    table = report._decided_floor([raw])
    assert "| 100 | reuse-inplace |" in table and "x floor columnar" in table


def _saving_raw(pairs: list[tuple[float, float]]) -> dict:
    """A decided cell with Default and Reuse at 100/s, one (default, reuse) pair of cores per
    repetition. Work saved: 0.1 cores by the per-event floor, 0.05 by the columnar one."""
    floor = {"reuse": {"ms_per_seq": 2.0, "columnar": {"ms_per_seq": 1.0}},
             "default": {"ms_per_seq": 3.0, "columnar": {"ms_per_seq": 1.5}},
             "work_saved_cores": {"100": 0.1}}
    cells = [{"mode": m, "rate": 100.0, "cores": c, "sustained": True, "rep": i}
             for i, (d, r) in enumerate(pairs, 1)
             for m, c in (("default-inplace", d), ("reuse-inplace", r))]
    return {"reps": len(pairs), "comparison": {"name": "rates-riot-inplace"},
            "delegated": {"cells": cells, "floor": floor,
                          "args": {"trigger": 2.0, "window": 60.0, "settle": 20.0}}}


@pytest.mark.parametrize(("pairs", "verdict"), [
    ([(0.40, 0.35), (0.42, 0.36), (0.41, 0.30)], "met"),  # saved 0.05-0.11: >= 0.9 x 0.05
    ([(0.40, 0.39), (0.42, 0.41), (0.41, 0.42)], "missed"),  # saved -0.01-0.01 in every pair
    ([(0.40, 0.30), (0.42, 0.41), (0.41, 0.35)], "not decided"),  # the pairs straddle it
    ([(0.40, 0.30), (0.42, 0.32)], "not decided"),  # two pairs decide nothing
])
def test_the_saving_is_judged_pair_by_pair_against_the_columnar_work(
        pairs: list[tuple[float, float]], verdict: str) -> None:
    raw = _saving_raw(pairs)
    assert report._saving_verdict([raw]) == verdict
    per_event, col = report._saving_ratios(raw["delegated"], 100.0)
    assert col == pytest.approx([p * 2 for p in per_event])  # half the work by the columnar
    table = report._decided_saving([raw])
    assert "| 100 | default-inplace |" in table and "columnar floor" in table


def test_a_mode_is_held_to_the_floor_bound_on_its_own_runs() -> None:
    """Default's runs far above the floor do not make Reuse's bound missed."""
    raw = _saving_raw([(0.9, 0.08), (0.95, 0.09), (0.9, 0.07)])  # columnar Reuse floor 0.1
    assert report._mode_floor_verdict([raw]) == "met"
    assert report._floor_bound_verdict([raw]) == "missed"


def _seq_raw(pairs: list[tuple[float, float]]) -> dict:
    """A decided SEQ peak: (default-shared, reuse-relaunch) peak cores per repetition; 40%
    of the tasks saved without sources, 50% with them."""
    runs = {"default-shared": [{"rep": i, "peak": {"cores": d, "queries": 24}}
                               for i, (d, _) in enumerate(pairs, 1)],
            "reuse-relaunch": [{"rep": i, "peak": {"cores": r, "queries": 6}}
                               for i, (_, r) in enumerate(pairs, 1)]}
    return {"reps": len(pairs), "comparison": {"name": "seq-peak-riot"},
            "delegated": {"runs": runs, "default_tasks": 100, "reuse_tasks": 50,
                          "default_nonsource_tasks": 80, "reuse_nonsource_tasks": 48,
                          "args": {"rate": 200.0, "trigger": 20.0, "window": 60.0,
                                   "settle": 45.0}}}


@pytest.mark.parametrize(("pairs", "verdict"), [
    ([(1.0, 0.6), (1.1, 0.64), (1.0, 0.62)], "met"),  # savings 38-42% >= 0.9 x 40%
    ([(1.0, 0.9), (1.1, 0.8), (1.0, 0.7)], "missed"),  # 10-30% < 36%
    ([(1.0, 0.6), (1.1, 0.8), (1.0, 0.62)], "not decided"),  # the pairs straddle it
])
def test_the_seq_peak_saving_is_judged_pair_by_pair(pairs: list[tuple[float, float]],
                                                    verdict: str) -> None:
    raw = _seq_raw(pairs)
    assert report._seq_saving_verdict([raw], "reuse-relaunch") == verdict
    assert report._seq_saving_verdict([raw], "reuse") == "not decided"  # no runs of it
    table = report._decided_seq_peak([raw])
    assert "| reuse-relaunch | 3 |" in table and "(40.0%)" in table


def test_a_pair_and_a_window_verdict_follow_the_runs() -> None:
    """The lazy trace's verdicts come from its runs: lazy below Default met, lazy below stop
    over the removals met; with the arms' values swapped run by run, both are missed."""
    import copy

    raw = report.body(json.loads((ROOT / "docs" / "bench" / "decide_trace_lazy_opmw.json")
                                 .read_text()))
    assert report._pair_verdict([raw], 1) == "met"
    assert report._window_verdict([raw], 2, "removals") == "met"
    flipped = copy.deepcopy(raw)
    by = {(r["rep"], r["arm"]): r for r in flipped["runs"]}
    for rep in {r["rep"] for r in flipped["runs"]}:  # lazy's runs become Default's, and back
        lazy, default = by[rep, "reuse-relaunch-lazy"], by[rep, "default-shared"]
        lazy["values"], default["values"] = default["values"], lazy["values"]
    assert report._pair_verdict([flipped], 1) == "missed"


def test_a_steps_verdict_needs_the_arm_lower_at_every_step() -> None:
    """A cell comparison's target ("Reuse below Default at every rate") from the steps'
    paired verdicts: _decided_raw's step 2 is no difference, so not met; with step 2 made
    lower too, met; with one step's arms swapped run by run, missed."""
    import copy

    raw = report.body(_decided_raw())
    assert report._steps_verdict([raw], 0) == "no difference"
    lower = copy.deepcopy(raw)
    for r in lower["runs"]:
        if r["arm"] == "reuse-inplace":
            r["values"][1] -= 0.1
    assert report._steps_verdict([lower], 0) == "met"
    by = {(r["rep"], r["arm"]): r for r in lower["runs"]}
    for rep in (1, 2, 3):
        a, b = by[rep, "reuse-inplace"]["values"], by[rep, "default-inplace"]["values"]
        a[0], b[0] = b[0], a[0]
    assert report._steps_verdict([lower], 0) == "missed"


def _spread_dict(values: list[float]) -> dict:
    return {"n": len(values), "median": sorted(values)[len(values) // 2], "min": min(values),
            "max": max(values)}


@pytest.mark.parametrize(("ratios", "verdict"), [
    ([[1.1, 1.2, 1.25], [1.0, 1.1, 1.3]], "met"),
    ([[1.1, 1.2, 1.25], [1.31, 1.4, 1.5]], "missed"),
    ([[1.1, 1.2, 1.35], [1.0, 1.1, 1.3]], "not decided"),
    ([[1.1], [1.0]], "not decided"),  # one repetition decides nothing
])
def test_the_shard_bound_is_judged_on_every_repetition(ratios: list[list[float]],
                                                        verdict: str) -> None:
    raws = [{"shards": i + 1, "mode": "reuse", "floor_ms": _spread_dict([1.0]),
             "shard_ms": _spread_dict(r), "ratio": _spread_dict(r),
             "whole_ratio": _spread_dict(r)} for i, r in enumerate(ratios)]
    assert report._shard_cost_verdict(raws) == verdict
    assert "| 2 | reuse |" in report._shard_cost(raws)


@pytest.mark.parametrize(("critical", "verdict"), [
    ([0.5, 0.6, 0.66], "met"), ([0.7, 0.8, 0.9], "missed"), ([0.6, 0.7, 0.8], "not decided")])
def test_the_critical_path_bound(critical: list[float], verdict: str) -> None:
    s = _spread_dict(critical)
    raw = {"mode": "reuse", "keying": "field", "batch": 600, "args": {},
           "floor": {"ms": s, "ratio": s},
           "staged-2": {"ms": s, "ratio": s, "critical_ms": s, "balance": s,
                        "bytes": _spread_dict([40000.0]), "crossed": _spread_dict([20000.0])}}
    assert report._stage_cost_verdict([raw]) == verdict
    assert "| staged-2 |" in report._stage_cost([raw])


def test_the_non_spark_renderers_and_their_verdicts() -> None:
    manager = {"rows": [
        {"running_tasks": 100_000, "submitted_dags": 35_000, "fast_mean_us": 55.0,
         "fast_p99_us": 104.0, "reference_mean_ms": None},
        {"running_tasks": 105, "submitted_dags": 11, "fast_mean_us": 90.0, "fast_p99_us": 150.0,
         "reference_mean_ms": 1.6}],
        "growth": [{"dag_tasks": 10, "mean_us": 67.8, "running_tasks": 100_000}]}
    assert report._manager_verdict([manager]) == "met"
    assert "| 105 | 11 | 90.0 / 150.0 | 1.60 | 18x |" in report._manager([manager])
    manager["rows"][0]["fast_p99_us"] = 1500.0
    assert report._manager_verdict([manager]) == "not decided"
    manager["rows"][0]["fast_mean_us"] = 1200.0
    assert report._manager_verdict([manager]) == "missed"
    cells = [{"config": 0, "strategy": s, "ok": True, "seconds": t, "al_ratio": a,
              "constraint": None} for s, t, a in (("aels+rp+la", 0.08, 1.0),
                                                  ("cloud-only", 0.01, 1.38))]
    speed = {"infrastructure": "x", "strategies": ["aels+rp+la", "cloud-only"], "cells": cells}
    assert report._placement_speed_verdict([speed]) == "met"
    assert "| 0 | 0.080 s x1.0000 | 0.010 s x1.3800 |" in report._placement_speed([speed])
    cells[0]["seconds"] = 12.0
    assert report._placement_speed_verdict([speed]) == "missed"
    frames = {"entropy": [
        {"stream": "SYS", "batch": 1000, "entropy": 4.4, "json_lines_b": 100, "frame_b": 100,
         "frame_lz4_b": 20, "gate": "lz4", "plain_ev_s": 2e6, "lz4_ev_s": 1e6}],
        "relay": [{"task": "pass", "batch": 1000, "frames": "gate", "frame_b": 10,
                   "ev_s": 7e5, "events": 1000}]}
    assert report._frames_throughput_verdict([frames]) == "missed"
    assert report._relay_hop_verdict([frames]) == "met"
    assert "| SYS | 1,000 | 4.40 |" in report._bus_frames([frames])
    assert "| pass-through | 1,000 | gated |" in report._relay_hop([frames])


def test_the_placement_margins_decide_on_regular_topologies() -> None:
    margins = [{"topo_class": tc, "strategy": s, "pairs": 10, "ratio": 1.6,
                "better_pct": pct, "better_min": 7.0, "better_max": 42.0}
               for tc, s, pct in (("regular", "cloud-only", 37.0), ("regular", "tcep", 45.4),
                                  ("large", "tcep", 55.0))]
    raw = {"scale": "paper", "runs": 17550, "wall_s": 926.0, "time_limit_s": 600.0,
           "over_limit_pct": {"tcep": 0.0}, "margins": margins}
    assert report._placement_margin_verdict([raw], "cloud-only", 26.0) == "met"
    assert report._placement_margin_verdict([raw], "tcep", 50.0) == "missed"
    assert report._placement_margin_verdict([raw], "aels", 1.0) == "not decided"
    assert "| cloud-only | regular | 10 | 1.600 | 37.0% [7.0, 42.0] |" in \
        report._placement_margins([raw])


def test_the_placement_search_is_one_row_per_strategy_and_class_in_size_order() -> None:
    import pandas as pd

    spec = importlib.util.spec_from_file_location(
        "bench_placement_eval", ROOT / "benchmarks" / "placement_eval.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    df = pd.DataFrame([
        {"strategy": s, "topo_class": tc, "status": st, "latency": lat, "evaluations": ev,
         "resolution_time": t}
        for s, tc, st, lat, ev, t in (
            ("aels", "large", "ok", 2.0, 1000, 0.5), ("aels", "large", "ok", 4.0, 3000, 1.5),
            ("aels", "regular", "infeasible", float("nan"), 10, 0.01),
            ("aels+rp+la", "regular", "ok", 1.0, 980, 0.02))])
    rows = bench.search_rows(df)
    table = report._placement_search([{"search": rows}])
    lines = [ln for ln in table.splitlines() if ln.startswith("| aels")]
    assert lines == ["| aels | regular | 1 | 10 | 0.010 / 0.01 | - |",
                     "| aels | large | 2 | 2,000 | 1.000 / 1.50 | 3.000 |",
                     "| aels+rp+la | regular | 1 | 980 | 0.020 / 0.02 | 1.000 |"]


def test_window_slices_are_compared_repetition_by_repetition() -> None:
    res = {f"k={k} kernel": {"windows": [5, 10][:k], "unfused": _spread_dict([2.0, 2.2, 2.1]),
                             "fused": _spread_dict([1.0, 1.1, 1.2]), "ratio": _spread_dict(r)}
           for k, r in ((1, [0.9, 1.1, 1.0]), (2, [1.8, 2.0, 1.9]))}
    table = report._window_slices([{**res, "config": {"ks": [1, 2]}}])
    assert "| 1 | kernel | 5 |" in table and table.count("no difference") == 1
    assert "| 2 | kernel | 5, 10 |" in table and "fused lower" in table
    assert report._window_slices_verdict_of(_spread_dict([0.5, 0.6, 0.7])) == "unfused lower"
    assert report._window_slices_verdict_of(_spread_dict([1.5])) == "not decided"


def test_the_cores_latency_curve_renders_and_draws(tmp_path: Path) -> None:
    """Issue 35's cores-latency table (one row per rate, mode and trigger, triggers in order)
    and its plot, from a raw file of ``runtime_rates.py`` with ``/triggerS`` modes."""
    def cell(mode: str, rate: float, trigger: float, cores: float, p50: float) -> dict:
        return {"mode": f"{mode}/trigger{trigger:g}", "rate": rate, "trigger_s": trigger,
                "cores": cores, "p50_ms": p50 * 1000, "p99_ms": p50 * 2000,
                "running_tasks": 73 if mode.startswith("reuse") else 117, "sustained": True}

    cells = [cell(m, r, t, c / t, t / 2) for r in (10.0, 100.0) for t in (10.0, 2.0, 1.0)
             for m, c in (("default-inplace", 1.0), ("reuse-inplace", 0.8))]
    raw = {"args": {"repeat": 1, "window": 60.0, "settle": 20.0}, "cells": cells}
    text = report._cores_latency([raw])
    rows = [r for r in text.splitlines() if r.startswith("| 10 |")]
    assert [r.split("|")[2:4] for r in rows][:3] == [
        [" default-inplace ", " 1 "], [" default-inplace ", " 2 "], [" default-inplace ", " 10 "]]
    assert "one run per cell" in text and "| 100 | reuse-inplace | 10 | 73 |" in text
    spec = importlib.util.spec_from_file_location(
        "plot_cores_latency", report.ROOT / "benchmarks" / "plot_cores_latency.py")
    assert spec is not None and spec.loader is not None
    plot = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = plot
    spec.loader.exec_module(plot)
    assert [p[0] for p in plot.points(raw, 10.0, "reuse-inplace")] == [1.0, 2.0, 10.0]
    plot.draw(raw, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
