"""Spread and verdicts of repeated runs (reuse.runtime.spread), without Spark.

The verdict is checked against its definition on the raw values: two modes differ only when
every value of one is below every value of the other, and then the lower one is named.
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
