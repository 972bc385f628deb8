"""Repeated measurements of a live run: their spread, and a verdict that respects it (issue 21).

One live run's cores are one draw of a noisy quantity: the same mode on the same machine
differs from run to run by more than many of the savings it is compared on (BENCHMARKS.md).
So a benchmark that decides a target runs the compared modes interleaved, ``A B A B A B``, each
repetition in a fresh process and JVM (:func:`interleave` is that order), summarises each mode's
values as median, min and max (:class:`Spread`), and compares two modes with :func:`compare`:

- **no difference** when the two min-max ranges overlap: ``a.lo <= b.hi and b.lo <= a.hi``
  (touching counts as overlapping). Equivalently, the range of ``a - b`` over every pair of
  runs (:func:`difference_range`) contains 0.
- otherwise the mode whose whole range lies below the other's is **lower**: by the difference
  of the medians, and at least by the gap between the ranges (the smallest difference any pair
  of runs showed).
- **not decided** when either mode has fewer than ``min_n`` values (:data:`MIN_REPEATS`, 3):
  with one or two runs a range is too narrow to stand for the spread.

Nothing here runs Spark: ``benchmarks/runtime_rates.py``, ``runtime_seq_peak.py`` and
``runtime_trace.py`` (``--repeat N``) feed it the values their runs measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reuse.runtime import SparkRuntimeError

__all__ = ["MIN_REPEATS", "Spread", "Verdict", "compare", "difference_range", "interleave",
           "pairs"]

#: Repetitions per mode below which :func:`compare` decides nothing.
MIN_REPEATS = 3


@dataclass(frozen=True)
class Spread:
    """Median, min (``lo``) and max (``hi``) of one mode's ``n`` values.

    Examples
    --------
    >>> s = Spread.of([0.41, 0.38, 0.46])
    >>> (s.n, s.median, s.lo, s.hi)
    (3, 0.41, 0.38, 0.46)
    >>> str(s)
    '0.410 [0.380, 0.460]'
    """

    n: int
    median: float
    lo: float
    hi: float

    def __post_init__(self) -> None:
        if self.n < 1 or not self.lo <= self.median <= self.hi:
            raise SparkRuntimeError(f"not a spread: n={self.n}, median {self.median}, range "
                                    f"[{self.lo}, {self.hi}]")

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        """The spread of ``values`` (at least one; the median of an even count is the mean of
        the middle two)."""
        vs = [float(v) for v in values]
        if not vs:
            raise SparkRuntimeError("no values to take the spread of")
        return cls(len(vs), statistics.median(vs), min(vs), max(vs))

    def overlaps(self, other: Spread) -> bool:
        """Whether the two min-max ranges share a point (touching counts)."""
        return self.lo <= other.hi and other.lo <= self.hi

    def to_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "median": self.median, "min": self.lo, "max": self.hi}

    def __str__(self) -> str:
        return f"{self.median:.3f} [{self.lo:.3f}, {self.hi:.3f}]"


def difference_range(a: Spread, b: Spread) -> tuple[float, float]:
    """The range of ``a - b`` over every pair of one value of ``a`` and one of ``b``:
    ``(a.lo - b.hi, a.hi - b.lo)``. It contains 0 exactly when the ranges overlap.

    Examples
    --------
    >>> difference_range(Spread(3, 1.0, 0.75, 1.25), Spread(3, 0.5, 0.25, 0.5))
    (0.25, 1.0)
    """
    return a.lo - b.hi, a.hi - b.lo


@dataclass(frozen=True)
class Verdict:
    """Mode ``a`` against mode ``b`` (see :func:`compare`).

    ``outcome`` is ``"no difference"``, ``"lower"`` (then ``lower`` names the mode whose whole
    range lies below the other's) or ``"not decided"`` (too few runs). ``diff`` is
    ``median(a) - median(b)`` and ``gap`` the distance between the two ranges (0 when they
    overlap); both are ``None`` when a mode has no value.
    """

    a: str
    b: str
    spread_a: Spread | None
    spread_b: Spread | None
    outcome: str
    lower: str | None
    diff: float | None
    gap: float | None
    unit: str = "cores"
    min_n: int = MIN_REPEATS

    @property
    def higher(self) -> str | None:
        """The mode whose whole range lies above the other's (``None`` unless ``lower``)."""
        if self.lower is None:
            return None
        return self.b if self.lower == self.a else self.a

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "outcome": self.outcome, "lower": self.lower,
                "diff": self.diff, "gap": self.gap,
                "a_spread": None if self.spread_a is None else self.spread_a.to_dict(),
                "b_spread": None if self.spread_b is None else self.spread_b.to_dict()}

    def __str__(self) -> str:
        sa, sb, u = self.spread_a, self.spread_b, self.unit
        if sa is None or sb is None or self.outcome == "not decided":
            na, nb = (0 if s is None else s.n for s in (sa, sb))
            return (f"{self.a} vs {self.b}: not decided ({na} and {nb} runs, at least "
                    f"{self.min_n} each needed)")
        both = f"{self.a} {sa}, {self.b} {sb}"
        if self.outcome == "no difference":
            return f"{self.a} vs {self.b}: no difference (ranges overlap: {both} {u})"
        assert self.diff is not None and self.gap is not None
        hi = sb if self.lower == self.a else sa
        return (f"{self.a} vs {self.b}: {self.lower} lower by {abs(self.diff):.3f} {u} "
                f"({abs(self.diff) / hi.median:.1%} of {self.higher}'s median), ranges "
                f"{self.gap:.3f} apart ({both} {u})")


def compare(a: str, values_a: Sequence[float], b: str, values_b: Sequence[float], *,
            min_n: int = MIN_REPEATS, unit: str = "cores") -> Verdict:
    """Compare the values of mode ``a`` with those of mode ``b`` by their min-max ranges.

    Parameters
    ----------
    a, b
        The modes' names (printed in the verdict).
    values_a, values_b
        Each mode's measured values, one per repetition (failed runs left out).
    min_n
        Fewer values than this on either side decide nothing.
    unit
        Printed after the values.

    Returns
    -------
    Verdict
        ``"no difference"`` if the ranges overlap, else ``"lower"`` with the lower mode.

    Examples
    --------
    >>> v = compare("reuse", [0.90, 0.88, 0.95], "default", [1.26, 1.21, 1.30])
    >>> v.outcome, v.lower, round(v.diff, 3), round(v.gap, 3)
    ('lower', 'reuse', -0.36, 0.26)
    >>> print(v)
    reuse vs default: reuse lower by 0.360 cores (28.6% of default's median), ranges 0.260 apart (reuse 0.900 [0.880, 0.950], default 1.260 [1.210, 1.300] cores)
    >>> print(compare("reuse-inplace", [0.26, 0.25, 0.27], "default-inplace", [0.26, 0.24, 0.25]))
    reuse-inplace vs default-inplace: no difference (ranges overlap: reuse-inplace 0.260 [0.250, 0.270], default-inplace 0.250 [0.240, 0.260] cores)
    >>> compare("reuse", [0.9], "default", [1.3]).outcome
    'not decided'
    """
    sa = Spread.of(values_a) if values_a else None
    sb = Spread.of(values_b) if values_b else None
    if sa is None or sb is None:
        return Verdict(a, b, sa, sb, "not decided", None, None, None, unit, min_n)
    diff = sa.median - sb.median
    gap = max(0.0, sa.lo - sb.hi, sb.lo - sa.hi)
    if sa.n < min_n or sb.n < min_n:
        return Verdict(a, b, sa, sb, "not decided", None, diff, gap, unit, min_n)
    if sa.overlaps(sb):
        return Verdict(a, b, sa, sb, "no difference", None, diff, 0.0, unit, min_n)
    return Verdict(a, b, sa, sb, "lower", a if sa.hi < sb.lo else b, diff, gap, unit, min_n)


def interleave(modes: Sequence[str], repeat: int) -> list[tuple[int, str]]:
    """The run order of ``repeat`` repetitions of ``modes``: ``(repetition, mode)``, every mode
    once per repetition, ``A B A B A B`` (so slow drift of the machine hits every mode alike).

    Examples
    --------
    >>> interleave(["default", "reuse"], 3)  # doctest: +NORMALIZE_WHITESPACE
    [(1, 'default'), (1, 'reuse'), (2, 'default'), (2, 'reuse'), (3, 'default'),
     (3, 'reuse')]
    """
    if repeat < 1:
        raise SparkRuntimeError(f"--repeat must be at least 1, got {repeat}")
    if not modes or len(set(modes)) != len(modes):
        raise SparkRuntimeError(f"give each mode once, got {list(modes)}")
    return [(i, m) for i in range(1, repeat + 1) for m in modes]


def pairs(modes: Sequence[str], extra: Iterable[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The comparisons of a benchmark's modes: ``(mode, baseline)``.

    Every Reuse mode (a name not starting with ``default``) against every Default mode on the
    same engine (the shared query when ``inplace`` is in both names, else the query-per-DAG
    engine), then the ``extra`` pairs not already there.

    Examples
    --------
    >>> pairs(["default", "default-shared", "reuse", "default-inplace", "reuse-inplace+k1u1"],
    ...       extra=[("reuse-inplace+k1u1", "reuse")])  # doctest: +NORMALIZE_WHITESPACE
    [('reuse', 'default'), ('reuse', 'default-shared'),
     ('reuse-inplace+k1u1', 'default-inplace'), ('reuse-inplace+k1u1', 'reuse')]
    """
    def engine(m: str) -> bool:
        return "inplace" in m

    out = [(m, d) for m in modes if not m.startswith("default")
           for d in modes if d.startswith("default") and engine(d) == engine(m)]
    for p in extra:
        unknown = [m for m in p if m not in modes]
        if unknown:
            raise SparkRuntimeError(f"cannot compare {p[0]}:{p[1]}: {unknown[0]} is not among "
                                    f"the modes run ({', '.join(modes)})")
        if p not in out:
            out.append(p)
    return out
