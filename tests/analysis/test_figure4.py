"""Figure 4 both ways, on the paper's Figure 1 scenario worked out by hand and on random series."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.analysis.figure4 import (
    figure4_row,
    integer_histogram,
    lifetimes,
    replay_users,
    shares,
    time_averaged_histogram,
)
from reuse.core.dataflow import Dataflow
from reuse.core.planner import reuse_histogram
from reuse.core.traces import load_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_figure1_by_hand(figure1: dict[str, Dataflow]) -> None:
    # submit A, B, C, D, remove B. By hand: the shared src/parse/kalman serve 1, 2, 3, 3, 2 DAGs
    # over steps 1-5 (mean 2.2, 15 task-steps); B's regression 1, 2, 2, 1 over steps 2-5 (mean
    # 1.5, 4); every other task serves one DAG: A's avg/out 10, B's out 3, C's plot/pub 6,
    # D's five 10. Task-steps: 5 + 7 + 9 + 14 + 13 = 48.
    records, series = replay_users(figure1, load_trace(FIXTURES / "figure1-trace.json"),
                                   check=True)
    assert [len(s) for s in series] == [5, 7, 9, 14, 13]
    s = shares(series)
    # ours: count >= 2 at steps 2..5: 3, 4 (three at 3, one at 2), 4 (same), 3
    assert s["int_2plus"] == pytest.approx(14 / 48)
    assert s["int_2"] == pytest.approx(8 / 48) and s["int_3plus"] == pytest.approx(6 / 48)
    # the paper's reading: the prefix (2.2) and the regression (1.5) are reused on average
    assert s["avg_gt1"] == pytest.approx(19 / 48)
    assert s["avg_1to2"] == pytest.approx(4 / 48) and s["avg_gt2"] == pytest.approx(15 / 48)
    assert s["avg_2plus"] == pytest.approx(15 / 48)
    assert time_averaged_histogram(series, max_bin=3) == pytest.approx(
        {"1": 33 / 48, "2": 15 / 48, "3+": 0.0})
    assert integer_histogram(series, max_bin=3) == pytest.approx(
        {"1": 34 / 48, "2": 8 / 48, "3+": 6 / 48})
    assert integer_histogram(series) == pytest.approx(reuse_histogram(records))
    slr = [life for life in lifetimes(series) if life.task == "B.slr"]
    assert len(slr) == 1 and (slr[0].start, slr[0].steps, slr[0].mean_users) == (2, 4, 1.5)


def test_a_task_that_restarts_is_two_lifetimes() -> None:
    lives = lifetimes([{"x": 2}, {"x": 2}, {}, {"x": 1}])
    assert [(lf.start, lf.steps, lf.mean_users) for lf in lives] == [(1, 2, 2.0), (4, 1, 1.0)]
    # one lifetime would average 5/3 and fall into [1, 2); two put 2 of 3 task-steps in [2, 3)
    assert time_averaged_histogram([{"x": 2}, {"x": 2}, {}, {"x": 1}], max_bin=3)["2"] == \
        pytest.approx(2 / 3)


def test_row_carries_the_papers_figures() -> None:
    row = figure4_row("opmw", "seq", [{"a": 1, "b": 2}])
    assert row["panel"] == "4a" and row["paper_split"] == "11% + 4%"
    assert row["paper_reused"] == pytest.approx(0.15) and row["int_2plus"] == 0.5
    assert figure4_row("riot", "rw1", [])["paper_reused"] == pytest.approx(0.08)


# a series: each step, which of 6 tasks run and how many DAGs each serves
series_st = st.lists(st.dictionaries(st.sampled_from("abcdef"), st.integers(1, 7), max_size=6),
                     min_size=0, max_size=25)


@given(series_st)
def test_both_readings_weigh_the_same_task_time(series: list[dict[str, int]]) -> None:
    total = sum(len(c) for c in series)
    lives = lifetimes(series)
    assert sum(lf.steps for lf in lives) == total
    # the weighted mean of per-task averages is the mean of per-step counts (exact arithmetic)
    assert sum(Fraction(lf.mean_users).limit_denominator(1000) * lf.steps for lf in lives) == \
        sum(u for c in series for u in c.values())
    for hist in (integer_histogram(series), time_averaged_histogram(series)):
        assert sum(hist.values()) == pytest.approx(1.0 if total else 0.0)
    s = shares(series)
    assert s["int_2"] + s["int_3plus"] == pytest.approx(s["int_2plus"])
    assert s["avg_1to2"] + s["avg_gt2"] == pytest.approx(s["avg_gt1"])
    # a task that ever served 2+ DAGs has an average above 1, over all its steps
    assert s["avg_gt1"] >= s["int_2plus"] - 1e-12 and s["avg_2plus"] <= s["avg_gt1"] + 1e-12


@given(series_st)
def test_constant_counts_make_both_readings_agree(series: list[dict[str, int]]) -> None:
    # give every task one count for the whole series: no averaging left to differ
    fixed = {t: 1 + ord(t) % 4 for t in "abcdef"}
    const = [{t: fixed[t] for t in step} for step in series]
    assert integer_histogram(const) == pytest.approx(time_averaged_histogram(const))
