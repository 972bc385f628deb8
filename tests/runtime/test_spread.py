"""Spread and verdicts of repeated runs (reuse.runtime.spread), without Spark.

The verdict is checked against its definition on the raw values: two modes differ only when
every value of one is below every value of the other, and then the lower one is named. The
paired decision (issue 33) likewise: a step differs only when every repetition's difference has
one sign, and whatever :func:`compare` decides, the paired rule decides the same way.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.runtime import SparkRuntimeError
from reuse.runtime.spread import (
    MIN_REPEATS,
    Spread,
    compare,
    difference_range,
    interleave,
    paired,
    paired_diff,
    pairs,
)

values = st.lists(st.floats(min_value=0.0, max_value=4.0, allow_nan=False), min_size=3,
                  max_size=6)


def test_spread_hand_computed():
    s = Spread.of([0.463, 0.441, 0.470])
    assert (s.n, s.median, s.lo, s.hi) == (3, 0.463, 0.441, 0.470)
    assert Spread.of([1, 4, 2, 3]).median == 2.5  # even count: mean of the middle two
    assert Spread.of([2.0]).to_dict() == {"n": 1, "median": 2.0, "min": 2.0, "max": 2.0}
    with pytest.raises(SparkRuntimeError, match="no values"):
        Spread.of([])
    with pytest.raises(SparkRuntimeError, match="not a spread"):
        Spread(3, 5.0, 0.0, 1.0)


def test_touching_ranges_are_no_difference():
    v = compare("reuse", [0.30, 0.35, 0.40], "default", [0.40, 0.45, 0.50])
    assert v.outcome == "no difference" and v.lower is None and v.gap == 0.0
    assert v.diff == pytest.approx(-0.10)


def test_lower_names_the_mode_and_how_far():
    v = compare("reuse-inplace", [0.408, 0.401, 0.415], "default-inplace", [0.463, 0.470, 0.450])
    assert v.outcome == "lower" and v.lower == "reuse-inplace" and v.higher == "default-inplace"
    assert v.diff == pytest.approx(0.408 - 0.463) and v.gap == pytest.approx(0.450 - 0.415)
    text = str(v)
    assert "\n" not in text and text.startswith("reuse-inplace vs default-inplace: "
                                                 "reuse-inplace lower by 0.055 cores")
    w = compare("reuse", [1.78, 1.80, 1.79], "default", [1.60, 1.65, 1.70])
    assert w.lower == "default" and w.higher == "reuse" and "default lower by 0.140" in str(w)


def test_too_few_runs_decide_nothing():
    assert MIN_REPEATS == 3
    v = compare("reuse", [0.9, 0.91], "default", [1.3, 1.2, 1.25])
    assert v.outcome == "not decided" and v.lower is None
    assert "not decided (2 and 3 runs" in str(v)
    v = compare("reuse", [], "default", [1.3, 1.2, 1.25])
    assert v.outcome == "not decided" and v.diff is None and "(0 and 3 runs" in str(v)
    assert compare("reuse", [0.9, 0.91], "default", [1.3, 1.2], min_n=2).outcome == "lower"


@given(values, values)
def test_verdict_by_definition(a, b):
    v = compare("a", a, "b", b)
    if max(a) < min(b):
        assert (v.outcome, v.lower) == ("lower", "a")
    elif max(b) < min(a):
        assert (v.outcome, v.lower) == ("lower", "b")
    else:
        assert (v.outcome, v.lower, v.gap) == ("no difference", None, 0.0)
    # the same comparison the other way round names the same mode
    w = compare("b", b, "a", a)
    assert (w.outcome, w.lower) == (v.outcome, v.lower)
    assert w.diff == pytest.approx(-v.diff) and w.gap == pytest.approx(v.gap)


@given(values, values)
def test_difference_range_holds_every_pair(a, b):
    sa, sb = Spread.of(a), Spread.of(b)
    lo, hi = difference_range(sa, sb)
    assert all(lo - 1e-12 <= x - y <= hi + 1e-12 for x in a for y in b)
    assert (lo <= 0 <= hi) == sa.overlaps(sb)


def test_interleave():
    assert interleave(["a", "b", "c"], 2) == [(1, "a"), (1, "b"), (1, "c"), (2, "a"),
                                              (2, "b"), (2, "c")]
    assert interleave(["a"], 1) == [(1, "a")]
    with pytest.raises(SparkRuntimeError, match="at least 1"):
        interleave(["a", "b"], 0)
    with pytest.raises(SparkRuntimeError, match="each mode once"):
        interleave(["a", "a"], 3)


def test_pairs():
    modes = ["default-shared", "reuse", "reuse-relaunch-lazy", "default-inplace",
             "reuse-inplace", "reuse-inplace+k1u2"]
    assert pairs(modes) == [("reuse", "default-shared"), ("reuse-relaunch-lazy", "default-shared"),
                            ("reuse-inplace", "default-inplace"),
                            ("reuse-inplace+k1u2", "default-inplace")]
    assert pairs(modes, [("reuse-inplace+k1u2", "reuse-inplace"),
                         ("reuse", "default-shared")])[-1] == ("reuse-inplace+k1u2",
                                                              "reuse-inplace")
    assert pairs(["default", "default-inplace"]) == []
    with pytest.raises(SparkRuntimeError, match="reuse-relaunch is not among"):
        pairs(["default", "reuse"], [("reuse-relaunch", "default")])


# ---------------------------------------------------------------- paired by step (issue 33)

def test_paired_diff_hand_computed():
    d = paired_diff("3", "reuse", "default", [(0.30, 0.32), (0.40, 0.43), (0.50, 0.52)])
    assert (d.outcome, d.lower, d.verdict) == ("lower", "reuse", "reuse lower")
    assert d.diff is not None and d.diff.n == 3
    assert (d.diff.median, d.diff.lo, d.diff.hi) == pytest.approx((-0.02, -0.03, -0.02))
    # the same values unpaired overlap: compare cannot tell them apart
    assert compare("reuse", [0.30, 0.40, 0.50], "default", [0.32, 0.43, 0.52]).outcome == \
        "no difference"
    w = paired_diff("3", "reuse", "default", [(0.33, 0.32), (0.44, 0.43), (0.55, 0.52)])
    assert w.verdict == "default lower" and w.lower == "default"
    assert paired_diff("3", "a", "b", [(1.0, 1.0), (1.1, 1.0), (1.2, 1.0)]).verdict == \
        "no difference"  # touching 0 counts as containing it
    d = paired_diff("3", "a", "b", [(1.0, 2.0), (None, 2.0), (1.0, None)])
    assert d.verdict == "not decided" and d.diff is not None and d.diff.n == 1
    assert paired_diff("3", "a", "b", [(1.0, 2.0)] * 2, min_n=2).verdict == "a lower"
    empty = paired_diff("3", "a", "b", [])
    assert empty.verdict == "not decided" and empty.diff is None
    assert empty.to_dict()["diff"] is None
    assert d.to_dict()["a_spread"] == {"n": 1, "median": 1.0, "min": 1.0, "max": 1.0}


def test_paired_steps_windows_and_counts():
    reps = [([0.50, 0.30, 0.20], [0.52, 0.35, 0.18]),
            ([0.60, 0.31, 0.21], [0.63, 0.30, 0.20]),
            ([0.40, 0.29, 0.19], [0.41, 0.36, 0.17])]
    p = paired("reuse-inplace", "default-inplace", reps, labels=["s1", "s2", "s3"],
               windows={"peak": [0, 1], "last": [2]})
    assert p.n == 3 and [s.label for s in p.steps] == ["s1", "s2", "s3"]
    assert [s.verdict for s in p.steps] == ["reuse-inplace lower", "no difference",
                                            "default-inplace lower"]
    assert p.lower_at("default-inplace") == [3] and p.count("no difference") == 1
    assert p.chance == 0.125
    peak, last = p.windows
    assert peak.steps == (0, 1) and peak.paired.verdict == "reuse-inplace lower"
    assert peak.whole.outcome == "no difference"  # whole runs: the ranges overlap
    assert last.paired.verdict == "default-inplace lower"
    d = p.to_dict()
    assert d["counts"] == {"reuse-inplace lower": 1, "default-inplace lower": 1,
                           "no difference": 1, "not decided": 0}
    assert d["windows"][0]["whole"]["outcome"] == "no difference"
    # the default window is the mean over every step; {} asks for none
    assert paired("a", "b", reps).windows[0].steps == (0, 1, 2)
    assert paired("a", "b", reps, windows={}).windows == ()


def test_paired_leaves_out_what_a_run_did_not_measure():
    reps = [([0.1, None], [0.2, 0.3]), ([0.1, 0.2], [0.2, 0.3]), ([0.1, 0.2], [0.2, 0.3])]
    p = paired("a", "b", reps)
    assert p.steps[1].diff is not None and p.steps[1].diff.n == 2
    assert p.steps[1].verdict == "not decided" and p.steps[0].verdict == "a lower"
    mean = p.windows[0]
    assert mean.paired.diff is not None and mean.paired.diff.n == 2  # run 1 has no mean
    assert mean.whole.outcome == "not decided"


def test_paired_needs_the_same_steps():
    with pytest.raises(SparkRuntimeError, match="the same steps in every run"):
        paired("a", "b", [([1.0, 2.0], [1.0, 2.0]), ([1.0], [1.0])])
    with pytest.raises(SparkRuntimeError, match="2 steps of a and 1 of b"):
        paired("a", "b", [([1.0, 2.0], [1.0])])
    with pytest.raises(SparkRuntimeError, match="3 labels for 2 steps"):
        paired("a", "b", [([1.0, 2.0], [1.0, 2.0])], labels=["1", "2", "3"])
    with pytest.raises(SparkRuntimeError, match="window 'peak'"):
        paired("a", "b", [([1.0, 2.0], [1.0, 2.0])], windows={"peak": [2]})
    with pytest.raises(SparkRuntimeError, match="window 'none'"):
        paired("a", "b", [([1.0, 2.0], [1.0, 2.0])], windows={"none": []})
    # every run failed: each step and the mean not decided
    none = paired("a", "b", [], labels=["1", "2"])
    assert [s.verdict for s in none.steps] == ["not decided"] * 2 and none.n == 0
    assert none.windows[0].whole.outcome == "not decided" and none.chance == 1.0


runs = st.integers(min_value=1, max_value=6).flatmap(
    lambda n: st.tuples(st.lists(st.floats(0.0, 4.0), min_size=n, max_size=n),
                        st.lists(st.floats(0.0, 4.0), min_size=n, max_size=n)))


@given(runs)
def test_paired_verdict_by_definition(ab):
    a, b = ab
    d = paired_diff("1", "a", "b", zip(a, b, strict=True))
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if len(a) < MIN_REPEATS:
        assert d.verdict == "not decided"
    elif max(diffs) < 0:
        assert d.verdict == "a lower"
    elif min(diffs) > 0:
        assert d.verdict == "b lower"
    else:
        assert d.verdict == "no difference"
    # swapping the arms names the same one
    e = paired_diff("1", "b", "a", zip(b, a, strict=True))
    assert (e.outcome, e.lower) == (d.outcome, d.lower)


@given(runs)
def test_paired_decides_whatever_compare_decides(ab):
    a, b = ab
    v = compare("a", a, "b", b)
    d = paired("a", "b", [([x], [y]) for x, y in zip(a, b, strict=True)]).steps[0]
    if v.outcome == "lower":
        assert d.lower == v.lower
    if v.outcome == "not decided":
        assert d.verdict == "not decided"
