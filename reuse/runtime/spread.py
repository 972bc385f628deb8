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

**Paired by step** (issue 33, item 3: :func:`paired`). Run ``i`` of ``A`` and of ``B`` (one
after the other, same trace) measure a step under the same machine state, so drift between
repetitions cancels in ``a_i - b_i``; per step the same rule judges those differences (range
containing 0: no difference). That decides steps :func:`compare` cannot, but is not stricter:
with ``n`` pairs and no real difference a step is called lower in a given direction with
probability ``2 ** -n`` (1/8 at three runs; 1/20 for :func:`compare`), so a count of such steps
means something only against that level (:attr:`Paired.chance`).

Nothing here runs Spark: ``benchmarks/runtime_rates.py``, ``runtime_seq_peak.py``,
``runtime_trace.py`` (``--repeat N``) and ``decide.py`` feed it the values their runs measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reuse.runtime import SparkRuntimeError

__all__ = ["MIN_REPEATS", "Paired", "PairedDiff", "Spread", "Verdict", "Window", "compare",
           "difference_range", "interleave", "paired", "paired_diff", "pairs"]

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


# ---------------------------------------------------------------- paired by step (issue 33)

@dataclass(frozen=True)
class PairedDiff:
    """``a`` against ``b`` on one step (or whole-run statistic), paired by repetition: ``diff``
    is the spread of ``a_i - b_i`` over the repetitions where both have a value; ``outcome``
    and ``lower`` are :func:`paired_diff`'s rule on it."""

    label: str
    a: str
    b: str
    spread_a: Spread | None
    spread_b: Spread | None
    diff: Spread | None
    outcome: str
    lower: str | None
    unit: str = "cores"
    min_n: int = MIN_REPEATS

    @property
    def verdict(self) -> str:
        """``"<arm> lower"``, ``"no difference"`` or ``"not decided"``."""
        return f"{self.lower} lower" if self.lower is not None else self.outcome

    def to_dict(self) -> dict[str, Any]:
        sp = {k: None if v is None else v.to_dict() for k, v in
              (("a_spread", self.spread_a), ("b_spread", self.spread_b), ("diff", self.diff))}
        return {"label": self.label, "a": self.a, "b": self.b, "outcome": self.outcome,
                "lower": self.lower, "verdict": self.verdict, **sp}


def paired_diff(label: str, a: str, b: str, pairs: Iterable[tuple[float | None, float | None]],
                *, min_n: int = MIN_REPEATS, unit: str = "cores") -> PairedDiff:
    """Decide one step from its ``(a_i, b_i)`` pairs, one per repetition (a pair with a
    ``None`` is left out): the spread rule on the differences ``a_i - b_i``.

    Examples
    --------
    >>> d = paired_diff("7", "reuse", "default", [(0.30, 0.32), (0.40, 0.43), (0.50, 0.52)])
    >>> d.verdict, str(d.diff)  # the ranges overlap, but every pair has reuse below
    ('reuse lower', '-0.020 [-0.030, -0.020]')
    >>> [paired_diff("8", "reuse", "default", p).verdict for p in
    ...  ([(0.30, 0.29), (0.40, 0.43), (0.5, 0.52)], [(0.3, 0.4), (0.3, None), (0.3, 0.4)])]
    ['no difference', 'not decided']
    """
    both = [(float(x), float(y)) for x, y in pairs if x is not None and y is not None]
    if not both:
        return PairedDiff(label, a, b, None, None, None, "not decided", None, unit, min_n)
    sa, sb = Spread.of(x for x, _ in both), Spread.of(y for _, y in both)
    d = Spread.of(x - y for x, y in both)
    if d.n < min_n:
        outcome, lower = "not decided", None
    elif d.lo <= 0.0 <= d.hi:
        outcome, lower = "no difference", None
    else:
        outcome, lower = "lower", (a if d.hi < 0.0 else b)
    return PairedDiff(label, a, b, sa, sb, d, outcome, lower, unit, min_n)


@dataclass(frozen=True)
class Window:
    """A whole-run statistic: each run's mean over ``steps`` (0-based), decided paired
    (``paired``) and by :func:`compare` on the per-run values (``whole``)."""

    name: str
    steps: tuple[int, ...]
    paired: PairedDiff
    whole: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "steps": list(self.steps), "paired": self.paired.to_dict(),
                "whole": self.whole.to_dict()}


@dataclass(frozen=True)
class Paired:
    """``a`` against ``b`` step by step over ``n`` paired repetitions (:func:`paired`)."""

    a: str
    b: str
    n: int
    steps: tuple[PairedDiff, ...]
    windows: tuple[Window, ...]

    @property
    def chance(self) -> float:
        """The probability that a step with no real difference is called lower in one given
        direction: ``2 ** -n`` (``n`` symmetric, continuous differences all on one side)."""
        return 2.0 ** -self.n if self.n else 1.0

    def count(self, verdict: str) -> int:
        """How many steps have ``verdict`` (``"<arm> lower"``, ``"no difference"``...)."""
        return sum(1 for s in self.steps if s.verdict == verdict)

    def lower_at(self, arm: str) -> list[int]:
        """The steps (1-based positions) where ``arm`` is lower."""
        return [i + 1 for i, s in enumerate(self.steps) if s.lower == arm]

    def to_dict(self) -> dict[str, Any]:
        verdicts = (f"{self.a} lower", f"{self.b} lower", "no difference", "not decided")
        return {"a": self.a, "b": self.b, "n": self.n, "chance": self.chance,
                "steps": [s.to_dict() for s in self.steps],
                "windows": [w.to_dict() for w in self.windows],
                "counts": {v: self.count(v) for v in verdicts}}


def _mean(values: Sequence[float | None], steps: Sequence[int]) -> float | None:
    vs = [v for i in steps if (v := values[i]) is not None]
    return sum(vs) / len(vs) if len(vs) == len(steps) else None


def paired(a: str, b: str, reps: Sequence[tuple[Sequence[float | None], Sequence[float | None]]],
           *, windows: Mapping[str, Sequence[int]] | None = None,
           labels: Sequence[str] | None = None, min_n: int = MIN_REPEATS,
           unit: str = "cores") -> Paired:
    """Decide ``a`` against ``b`` per step and over whole runs, pairing run ``i`` of each.

    ``reps`` holds one ``(values_a, values_b)`` per repetition in which both arms ran: each
    arm's value at every step of the same trace (``None`` where a step has none), all of one
    length. ``windows`` names the whole-run statistics: name -> the steps (0-based) whose mean
    is a run's value (``None``: ``{"mean": every step}``); each is decided paired and by
    :func:`compare` on the per-run values (the whole-run comparison). ``labels`` name the
    steps (default ``"1"``, ``"2"``, ...).

    Examples
    --------
    >>> p = paired("reuse", "default", [([0.20, 0.30], [0.25, 0.31]),
    ...                                 ([0.22, 0.28], [0.26, 0.27]),
    ...                                 ([0.21, 0.29], [0.24, 0.33])])
    >>> [s.verdict for s in p.steps], str(p.steps[0].diff)
    (['reuse lower', 'no difference'], '-0.040 [-0.050, -0.030]')
    >>> w = p.windows[0]
    >>> w.steps, w.paired.verdict, str(w.paired.diff), w.whole.outcome, w.whole.lower
    ((0, 1), 'reuse lower', '-0.030 [-0.035, -0.015]', 'lower', 'reuse')
    >>> p.count("reuse lower"), p.lower_at("default"), p.chance
    (1, [], 0.125)
    """
    n_steps = len(reps[0][0]) if reps else len(labels or ())
    for i, (va, vb) in enumerate(reps):
        if len(va) != n_steps or len(vb) != n_steps:
            raise SparkRuntimeError(f"repetition {i + 1}: {len(va)} steps of {a} and {len(vb)} "
                                    f"of {b}, {n_steps} expected (the same steps in every run)")
    names = list(labels) if labels is not None else [str(i + 1) for i in range(n_steps)]
    if len(names) != n_steps:
        raise SparkRuntimeError(f"{len(names)} labels for {n_steps} steps")
    steps = tuple(paired_diff(names[i], a, b, [(va[i], vb[i]) for va, vb in reps],
                              min_n=min_n, unit=unit) for i in range(n_steps))
    wins = []
    for name, idx in (windows if windows is not None else {"mean": range(n_steps)}).items():
        idx = tuple(idx)
        if not idx or any(not 0 <= i < n_steps for i in idx):
            raise SparkRuntimeError(f"window {name!r}: steps {list(idx)} not among the "
                                    f"{n_steps} steps")
        per = [(_mean(va, idx), _mean(vb, idx)) for va, vb in reps]
        wins.append(Window(name, idx, paired_diff(name, a, b, per, min_n=min_n, unit=unit),
                           compare(a, [x for x, _ in per if x is not None], b,
                                   [y for _, y in per if y is not None], min_n=min_n, unit=unit)))
    return Paired(a, b, len(reps), steps, tuple(wins))
