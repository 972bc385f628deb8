"""Results tables generated from their raw files, and the check that keeps them so (issue 33).

A table in BENCHMARKS.md, README.md or ``docs/*.md`` whose numbers come from a committed raw
file under ``docs/bench/`` lives between two markers::

    <!-- report:NAME -->
    (the table, written by this script)
    <!-- /report:NAME -->

``NAME`` is an entry of :func:`registry`: the raw files it reads and a pure function from
their JSON to Markdown. ``python benchmarks/report.py`` rewrites every marked block from its
files. ``python benchmarks/report.py --check`` rewrites nothing and exits 1 with one line per
problem:

- a block that differs from what its files render (a table edited by hand);
- a raw file an entry reads that is missing;
- a marker with no registry entry, or a block not closed;
- a ``docs/bench/*.json`` path cited in those files that does not exist (a path in a fenced
  or indented code block is a command to run, not a citation, and is not checked; a path with
  a ``*`` must match at least one file);
- a verdict word ("met", "not met", "missed", "decided", "not decided", "no difference")
  that disagrees with the spread rule (:func:`reuse.runtime.spread.compare`). Which comparison
  a word belongs to is said explicitly: a ``<!-- verdict:NAME -->`` marker on the word's line
  names an entry whose ``verdict`` function computes the outcome from its raw file, and every
  verdict word on that line (outside inline code) must agree with it. A verdict word on the
  same line as a cited raw file, without such a marker, is a problem too: the checker cannot
  tell which comparison it claims. Words inside a generated block are checked by regenerating
  the block.

Nothing here runs Spark or a benchmark; the registry is built when :func:`registry` is
called, not at import.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import statistics
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: the repo's ``reuse``
    sys.path.insert(0, str(ROOT))

from reuse.runtime.spread import Paired, Spread, compare, paired  # noqa: E402

__all__ = ["Entry", "check", "main", "markdown_files", "registry", "render_all"]

BENCH = "docs/bench"
NO_PROVENANCE = "raw file without provenance: written before issue 33"

#: the verdict a ``verdict`` function returns, and the words that may state it
VERDICT_WORDS = {
    "met": {"met", "decided"},
    "missed": {"missed", "not met", "decided"},
    "no difference": {"no difference", "decided"},
    "not decided": {"not decided"},
}
_WORD = re.compile(r"\b(not decided|not met|no difference|decided|missed|met)\b", re.I)
_START = re.compile(r"^(?P<indent>[ \t]*)<!-- report:(?P<name>[^ ]+) -->[ \t]*$")
_END = re.compile(r"^[ \t]*<!-- /report:(?P<name>[^ ]+) -->[ \t]*$")
_VERDICT = re.compile(r"<!-- verdict:(?P<name>[^ ]+) -->")
_CITE = re.compile(r"docs/bench/[A-Za-z0-9_.*\-]+\.json")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`]*`")


@dataclass(frozen=True)
class Entry:
    """One generated table and/or one verdict, from raw files under ``docs/bench/``.

    ``render`` takes the files' JSON, in the order of ``files``, and returns the table's
    Markdown (without the provenance footnote, which :func:`render_block` adds). ``verdict``
    takes the same and returns a key of :data:`VERDICT_WORDS`.
    """

    name: str
    files: tuple[str, ...]
    render: Callable[[list[Any]], str] | None = None
    verdict: Callable[[list[Any]], str] | None = None


# ---------------------------------------------------------------- formatting helpers

def _f(x: float | None, digits: int = 3) -> str:
    """``x`` to ``digits`` places as the benchmark scripts print it (Python's rounding of the
    binary value: 0.2425 -> 0.242)."""
    return "-" if x is None else f"{x:.{digits}f}"


def _sustained(cells: Sequence[dict[str, Any]]) -> str:
    """How many of a cell's runs sustained the rate: ``"2 of 3"``."""
    return f"{sum(1 for c in cells if c['sustained'])} of {len(cells)}"


def _n(x: int | float) -> str:
    return f"{int(round(x)):,}"


def _table(header: Sequence[str], align: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def row(cells: Sequence[str]) -> str:
        return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"

    return "\n".join([row(header), "|" + "|".join(align) + "|", *map(row, rows)])


def _left(n: int) -> list[str]:
    return ["---"] * n


def _spread(values: Sequence[float], digits: int = 3) -> str:
    """One value as itself; several as ``median [min, max]``."""
    if len(values) == 1:
        return _f(values[0], digits)
    return (f"{_f(statistics.median(values), digits)} [{_f(min(values), digits)}, "
            f"{_f(max(values), digits)}]")


def _cells(raw: dict[str, Any], mode: str, rate: float | None = None) -> list[dict[str, Any]]:
    return [c for c in raw["cells"] if c["mode"] == mode and not c.get("failed")
            and (rate is None or c["rate"] == rate)]


def _cores(raw: dict[str, Any], mode: str, rate: float | None = None) -> list[float]:
    return [float(c["cores"]) for c in _cells(raw, mode, rate)]


def _floor_cores(raw: dict[str, Any], mode: str, rate: float) -> float:
    """The floor's cores for ``mode``'s work at ``rate`` (Default's work for a default mode)."""
    side = "default" if mode.startswith("default") else "reuse"
    return float(raw["floor"][side]["ms_per_seq"]) * rate / 1000.0


def _lat(c: dict[str, Any]) -> str:
    return f"{c['p50_ms'] / 1000:.1f} / {c['p99_ms'] / 1000:.1f}"


def _modes(raw: dict[str, Any]) -> list[str]:
    seen: list[str] = []
    for c in raw["cells"]:
        if c["mode"] not in seen:
            seen.append(c["mode"])
    return seen


def _mode_label(mode: str) -> str:
    """``reuse-inplace+k1u2/apps`` -> ``reuse-inplace, K=1, U=2, apps``."""
    m = re.fullmatch(r"(.+)\+k(\d+)u(\d+)(/apps)?", mode)
    if not m:
        return mode
    return f"{m[1]}, K={m[2]}, U={m[3]}" + (", apps" if m[4] else "")


def _step(step: int) -> str:
    return {10: "10 (mid-trace)", 21: "21 (peak)"}.get(step, str(step))


def _target_lower(a: str, values_a: Sequence[float], b: str, values_b: Sequence[float]) -> str:
    """The verdict on the target "``a`` below ``b``" by the spread rule."""
    v = compare(a, values_a, b, values_b)
    if v.outcome == "lower":
        return "met" if v.lower == a else "missed"
    return v.outcome


# ---------------------------------------------------------------- renderers

def _rates_curve(raws: list[Any]) -> str:
    """runtime_rates.py's cost curve: every cell, then the savings against the work saved."""
    raw = raws[0]
    rows = []
    for c in raw["cells"]:
        fl = _floor_cores(raw, c["mode"], c["rate"])
        rows.append([c["mode"], f"{c['rate']:g}", _f(c["cores"]), _f(fl), f"{c['cores'] / fl:.1f}",
                     _lat(c), f"{c['backlog_start']} -> {c['backlog_end']}", str(c["queries"]),
                     "yes" if c["sustained"] else "no"])
    out = [_table(["mode", "rate/s", "cores", "floor (same work)", "x floor",
                   "p50 / p99 latency s", "backlog start -> end", "queries", "sustained"],
                  ["---", "---:", "---:", "---:", "---:", "---", "---", "---:", "---"], rows)]
    saved = []
    for rate in sorted({c["rate"] for c in raw["cells"]}):
        work = _floor_cores(raw, "default", rate) - _floor_cores(raw, "reuse", rate)

        def diff(a: str, b: str, rate: float = rate) -> float | None:
            ca, cb = _cores(raw, a, rate), _cores(raw, b, rate)
            return ca[0] - cb[0] if ca and cb else None

        inplace = diff("default-inplace", "reuse-inplace")
        saved.append([f"{rate:g}", _f(work), _f(inplace),
                      "-" if inplace is None else f"{inplace / work:.3f}",
                      _f(diff("default", "reuse")), _f(diff("default", "reuse-relaunch-lazy"))])
    out.append(_table(["rate/s", "work saved (floor Default - Reuse)",
                       "default-inplace - reuse-inplace", "ratio", "default - reuse",
                       "default - reuse-relaunch-lazy"], ["---:"] * 6, saved))
    return "\n\n".join(out)


def _rates_max(raws: list[Any]) -> str:
    """runtime_rates.py's ``--max-rate`` search, one line per mode as the script prints it."""
    lines = []
    for mode, m in raws[0]["max_rate"].items():
        probes = ", ".join(
            f"{p['rate']:g}/s {'ok' if p['sustained'] else 'no'} ({p['cores']:.2f} cores, "
            f"p99 {p['p99_ms'] / 1000:.1f} s)" for p in m["probes"])
        lines.append(f"- {mode}: highest sustained {m['sustained']:g}/s, not sustained at "
                     f"{m['failed_at']:g}/s; probes: {probes}")
    return "\n".join(lines)


def _rates_ksafe(raws: list[Any]) -> str:
    raw = raws[0]
    rows = []
    for c in raw["cells"]:
        fl = _floor_cores(raw, c["mode"], c["rate"])
        rows.append([_mode_label(c["mode"]), str(c["running_tasks"]), str(c["replica_tasks"]),
                     _f(c["cores"]), f"{c['cores'] / fl:.1f}", _lat(c),
                     "yes" if c["sustained"] else "no"])
    return _table(["mode", "tasks", "replicas", "cores", "x floor", "p50 / p99 latency (s)",
                   "sustained"], ["---", "---:", "---:", "---:", "---:", "---", "---"], rows)


#: the target row of issue 24's table (its ratio to Default is the headline)
_APPS_TARGET = "reuse-inplace+k1u2/apps"


def _rates_apps(raws: list[Any]) -> str:
    """Issue 24's cost at the RIoT SEQ peak: median [min, max] over the interleaved runs, the
    ratio to Default's median (with the range of every pair of runs), and the verdicts."""
    raw = raws[0]
    rate = float(raw["cells"][0]["rate"])
    base = _cores(raw, "default-inplace", rate)
    rows = []
    for mode in _modes(raw):
        cells = _cells(raw, mode, rate)
        vals = [float(c["cores"]) for c in cells]
        med = statistics.median(vals)
        if mode == "default-inplace":
            ratio = "1"
        else:
            r = f"{med / statistics.median(base):.2f}"
            if mode == _APPS_TARGET:
                r = f"**{r}**"
            ratio = (r if len(vals) < 2 else
                     f"{r} [{min(vals) / max(base):.2f}, {max(vals) / min(base):.2f}]")
        sus = sum(1 for c in cells if c["sustained"])
        rows.append([_mode_label(mode), str(cells[0]["running_tasks"]),
                     str(cells[0].get("replica_tasks", 0)), _spread(vals),
                     f"{med / _floor_cores(raw, mode, rate):.1f}", ratio,
                     f"{sus} of {len(raw['cells']) // len(_modes(raw))}"])
    table = _table(["mode", "tasks", "copies", "cores", "x floor", "against Default",
                    "sustained"], ["---", "---:", "---:", "---:", "---:", "---:", "---"], rows)
    verdicts = []
    pairs = [("reuse-inplace", "default-inplace")]
    for p in str(raw["args"].get("compare") or "").split(","):
        if p and tuple(p.split(":")) not in pairs:
            a, b = p.split(":")
            pairs.append((a, b))
    for a, b in pairs:
        verdicts.append(f"- {compare(a, _cores(raw, a, rate), b, _cores(raw, b, rate))}")
    return table + "\n\nBy the spread rule (`reuse.runtime.spread.compare`):\n\n" + "\n".join(
        verdicts)


def _floor_columnar(raw: dict[str, Any], mode: str, rate: float) -> float | None:
    """The columnar floor's cores for ``mode``'s work at ``rate`` (issue 35), if the file has
    it."""
    side = "default" if mode.startswith("default") else "reuse"
    col = raw["floor"][side].get("columnar")
    return None if not col else float(col["ms_per_seq"]) * rate / 1000.0


def _rates_issue35(raws: list[Any]) -> str:
    """Issue 35 on the shared query: each mode's cores and latency at one rate over the
    interleaved runs (median [min, max]), against both floors, and every verdict the run
    printed (each Reuse mode against each Default mode, and the ``--compare`` pairs)."""
    raw = raws[0]
    rate = float(raw["cells"][0]["rate"])
    rows = []
    for mode in _modes(raw):
        cells = _cells(raw, mode, rate)
        vals = [float(c["cores"]) for c in cells]
        med = statistics.median(vals)
        col = _floor_columnar(raw, mode, rate)
        p50 = [c["p50_ms"] / 1000 for c in cells if c["p50_ms"] is not None]
        p99 = [c["p99_ms"] / 1000 for c in cells if c["p99_ms"] is not None]
        rows.append([mode, str(cells[0]["running_tasks"]), _spread(vals),
                     f"{med / _floor_cores(raw, mode, rate):.1f}",
                     f"{med / col:.1f}" if col else "-",
                     _spread(p50, 2) if p50 else "-", _spread(p99, 2) if p99 else "-",
                     _sustained(cells)])
    table = _table(["mode", "tasks", "cores", "x floor (per event)", "x floor (columnar)",
                    "p50 latency (s)", "p99 latency (s)", "sustained"],
                   ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---"], rows)
    spread = raw["spread"][next(iter(raw["spread"]))]
    lines = [f"- {compare(v['a'], _cores(raw, v['a'], rate), v['b'], _cores(raw, v['b'], rate))}"
             for v in spread["verdicts"]]
    return (f"{rate:g} events/s per source, trigger {raw['args']['trigger']:g} s, "
            f"{raw['args']['repeat']} interleaved fresh-JVM runs per mode.\n\n" + table
            + "\n\nBy the spread rule (`reuse.runtime.spread.compare`):\n\n" + "\n".join(lines))


def _cores_latency(raws: list[Any]) -> str:
    """Issue 35, item 5: cores against latency per trigger (``/triggerS`` modes), Default and
    Reuse, at each rate: one row per (rate, mode, trigger), the runs' median [min, max]."""
    raw = raws[0]
    rows = []
    for rate in sorted({float(c["rate"]) for c in raw["cells"]}):
        for mode in sorted(_modes(raw), key=lambda m: (m.split("/")[0],
                                                      float(m.rpartition("trigger")[2]))):
            cells = _cells(raw, mode, rate)
            if not cells:
                continue
            p50 = [c["p50_ms"] / 1000 for c in cells if c["p50_ms"] is not None]
            p99 = [c["p99_ms"] / 1000 for c in cells if c["p99_ms"] is not None]
            rows.append([f"{rate:g}", mode.split("/")[0], f"{float(cells[0]['trigger_s']):g}",
                         str(cells[0]["running_tasks"]),
                         _spread([float(c["cores"]) for c in cells]),
                         _spread(p50, 2) if p50 else "-", _spread(p99, 2) if p99 else "-",
                         _sustained(cells)])
    table = _table(["rate/s", "mode", "trigger (s)", "tasks", "cores", "p50 latency (s)",
                    "p99 latency (s)", "sustained"],
                   ["---:", "---", "---:", "---:", "---:", "---:", "---:", "---"], rows)
    reps = int(raw["args"].get("repeat") or 1)
    runs = f"{reps} interleaved fresh-JVM runs per cell" if reps > 1 else (
        "one run per cell (a curve, not a decision: no spread)")
    return (f"The RIoT SEQ peak on the shared query (columnar), {runs}, a "
            f"{raw['args']['window']:g} s window after {raw['args']['settle']:g} s.\n\n"
            + table)


#: issue 11's bound on the shared query, judged against the columnar floor since issue 35
#: ("engine costs are judged against the columnar floor from then on")
_FLOOR_BOUND = 2.0


def _floor_cells(cells: dict[str, Any]) -> list[tuple[float, str, list[dict[str, Any]],
                                                       float, float | None]]:
    """(rate, mode, its runs' cells, the per-event floor's cores, the columnar floor's) for
    every rate and mode of a cell run, rates in order."""
    return [(rate, mode, _cells(cells, mode, rate), _floor_cores(cells, mode, rate),
             _floor_columnar(cells, mode, rate))
            for rate in sorted({float(c["rate"]) for c in cells["cells"]})
            for mode in _modes(cells)]


def _decided_floor(raws: list[Any]) -> str:
    """A decided cell against the floor (``decide.py rates-riot-floor``): per rate, the
    interleaved runs' cores (median [min, max]) and their ratio to both floors, run by run."""
    raw = raws[0]
    cells = raw["delegated"]
    rows = []
    for rate, mode, got, per_event, col in _floor_cells(cells):
        vals = [float(c["cores"]) for c in got]
        rows.append([f"{rate:g}", mode, _spread(vals), _f(per_event),
                     _spread([v / per_event for v in vals], 2), _f(col) if col else "-",
                     _spread([v / col for v in vals], 2) if col else "-",
                     _sustained(got)])
    table = _table(["rate/s", "mode", "cores", "floor per event", "x floor per event",
                    "floor columnar", "x floor columnar", "sustained"],
                   ["---:", "---", "---:", "---:", "---:", "---:", "---:", "---"], rows)
    return (f"{raw['reps']} interleaved fresh-JVM runs per rate (`benchmarks/decide.py "
            f"{raw['comparison']['name']}`), trigger {cells['args']['trigger']:g} s, a "
            f"{cells['args']['window']:g} s window after {cells['args']['settle']:g} s. "
            f"Both floors are `benchmarks/limit.py`'s, measured by the same run.\n\n" + table)


Extent = tuple[float, float] | None


def _extent(values: Sequence[float], min_n: int = 3) -> Extent:
    """The ``(min, max)`` of one group's runs; ``None`` (it decides nothing) for fewer than
    ``min_n`` of them."""
    return (min(values), max(values)) if values and len(values) >= min_n else None


def _bound_verdict(spans: Sequence[Extent], bound: float, *, at_most: bool) -> str:
    """A target that every run stays on one side of ``bound`` (``at_most``: at or below it;
    else at or above it), judged run by run in each group (a rate, a shard count...): met when
    every run of every group is on that side, missed when every run of some group is beyond
    it, else not decided (the runs straddle it, or a group has too few: ``None``).

    >>> _bound_verdict([(1.1, 1.9), (0.5, 2.0)], 2.0, at_most=True)
    'met'
    >>> _bound_verdict([(1.1, 1.9), (2.1, 3.0)], 2.0, at_most=True), _bound_verdict(
    ...     [(0.95, 1.2)], 0.9, at_most=False), _bound_verdict([(0.8, 1.2), None], 0.9, at_most=False)
    ('missed', 'met', 'not decided')
    """
    if not spans or any(s is None for s in spans):
        return "not decided"
    known = [s for s in spans if s is not None]
    if at_most:
        within, beyond = all(hi <= bound for _, hi in known), any(lo > bound for lo, _ in known)
    else:
        within, beyond = all(lo >= bound for lo, _ in known), any(hi < bound for _, hi in known)
    return "met" if within else "missed" if beyond else "not decided"


def _floor_bound_verdict(raws: list[Any]) -> str:
    """"At most 2x the floor" (issue 11) against the columnar floor (issue 35), run by run at
    each rate (:func:`_bound_verdict`; one run at a rate is enough to judge it)."""
    return _bound_verdict([_extent([float(c["cores"]) / col for c in got], 1) if col else None
                           for _, _, got, _, col in _floor_cells(raws[0]["delegated"])],
                          _FLOOR_BOUND, at_most=True)


#: issue 11's bound on the shared query's saving: cores saved at least this share of the work
#: saved (the floor's Default - Reuse), judged against the columnar floor's work since issue 35
_SAVING_BOUND = 0.9


def _saving_ratios(cells: dict[str, Any], rate: float, base: str = "default-inplace",
                   arm: str = "reuse-inplace") -> tuple[list[float], list[float]]:
    """Run by run (paired by repetition), ``(base - arm)`` cores over the work saved at
    ``rate``: against the per-event floor's work, and against the columnar floor's."""
    by = {(int(c.get("rep", 1)), c["mode"]): float(c["cores"])
          for c in _cells(cells, base, rate) + _cells(cells, arm, rate)}
    saved = [by[i, base] - by[i, arm] for i, m in sorted(by) if m == base and (i, arm) in by]
    floor = cells["floor"]
    work = float(floor["work_saved_cores"].get(f"{rate:g}") or
                 (float(floor["default"]["ms_per_seq"]) - float(floor["reuse"]["ms_per_seq"]))
                 * rate / 1000.0)
    dc, rc = (floor[s].get("columnar") for s in ("default", "reuse"))
    col = (float(dc["ms_per_seq"]) - float(rc["ms_per_seq"])) * rate / 1000.0 if dc and rc \
        else None
    return [s / work for s in saved], ([s / col for s in saved] if col else [])


def _decided_saving(raws: list[Any]) -> str:
    """A decided rate cell with Default and Reuse on the shared query (``decide.py
    rates-*-inplace``): per rate each mode's cores (median [min, max]) against both floors,
    then the cores Reuse saved over the work it saved, paired run by run, against both floors.
    The paired differences themselves are :func:`_decided`'s table."""
    raw = raws[0]
    cells = raw["delegated"]
    rows = []
    for rate, mode, got, per_event, col in _floor_cells(cells):
        vals = [float(c["cores"]) for c in got]
        if not vals:
            continue
        rows.append([f"{rate:g}", mode, _spread(vals), _spread([v / per_event for v in vals], 2),
                     _spread([v / col for v in vals], 2) if col else "-",
                     _sustained(got)])
    table = _table(["rate/s", "mode", "cores", "x floor per event", "x floor columnar",
                    "sustained"], ["---:", "---", "---:", "---:", "---:", "---"], rows)
    saving = []
    for rate in sorted({float(c["rate"]) for c in cells["cells"]}):
        per_event, col = _saving_ratios(cells, rate)
        if per_event:
            saving.append([f"{rate:g}", str(len(per_event)), _spread(per_event, 2),
                           _spread(col, 2) if col else "-"])
    table2 = _table(["rate/s", "pairs", "saved / work saved (per-event floor)",
                     "saved / work saved (columnar floor)"], ["---:", "---:", "---:", "---:"],
                    saving)
    return (f"{raw['reps']} interleaved fresh-JVM runs per mode and rate (`benchmarks/decide.py "
            f"{raw['comparison']['name']}`), trigger {cells['args']['trigger']:g} s, a "
            f"{cells['args']['window']:g} s window after {cells['args']['settle']:g} s; both "
            f"floors are `benchmarks/limit.py`'s, measured by the same run.\n\n" + table
            + "\n\nCores saved (default-inplace - reuse-inplace, run by run) over the work "
            "saved (the floor's Default - Reuse at the same rate):\n\n" + table2)


def _decided_partial(raws: list[Any]) -> str:
    """A decided cell of the paper's enactment (``decide.py rates-partial-*``, a query per
    partial DAG): per rate and mode, the queries, the cores (median [min, max]) against the
    per-event floor, the latency, the backlog over the window (medians) and how many runs
    sustained the rate. The paired differences are :func:`_decided`'s table."""
    raw = raws[0]
    cells = raw["delegated"]
    rows = []
    for rate, mode, got, per_event, _col in _floor_cells(cells):
        vals = [float(c["cores"]) for c in got]
        if not vals:
            continue
        med = statistics.median
        rows.append([f"{rate:g}", mode, _n(round(med(c["queries"] for c in got))), _spread(vals),
                     _spread([v / per_event for v in vals], 2),
                     f"{med(c['p50_ms'] for c in got) / 1000:.1f} / "
                     f"{med(c['p99_ms'] for c in got) / 1000:.1f}",
                     f"{_n(round(med(c['backlog_start'] for c in got)))} -> "
                     f"{_n(round(med(c['backlog_end'] for c in got)))}",
                     _sustained(got)])
    args = cells["args"]
    return (f"{raw['reps']} interleaved fresh-JVM runs per mode (`benchmarks/decide.py "
            f"{raw['comparison']['name']}`), trigger {args['trigger']:g} s, a "
            f"{args['window']:g} s window after {args['settle']:g} s; the floor is "
            "`benchmarks/limit.py`'s per-event floor, measured by the same run; latency and "
            "backlog are medians over the runs.\n\n"
            + _table(["rate/s", "mode", "queries", "cores", "x floor per event",
                      "p50 / p99 latency (s)", "backlog start -> end", "sustained"],
                     ["---:", "---", "---:", "---:", "---:", "---", "---", "---"], rows))


def _saving_verdict(raws: list[Any]) -> str:
    """"Cores saved at least 0.9x the work saved" (issue 11), against the columnar floor's work
    (issue 35), pair by pair at each rate (:func:`_bound_verdict`)."""
    cells = raws[0]["delegated"]
    return _bound_verdict([_extent(_saving_ratios(cells, rate)[1])
                           for rate in sorted({float(c["rate"]) for c in cells["cells"]})],
                          _SAVING_BOUND, at_most=False)


def _mode_floor_verdict(raws: list[Any], mode: str = "reuse-inplace") -> str:
    """"``mode`` at most 2x the floor" against the columnar floor, by
    :func:`_floor_bound_verdict`'s rule, on ``mode``'s runs only."""
    cells = raws[0]["delegated"]
    only = {**cells, "cells": [c for c in cells["cells"] if c["mode"] == mode]}
    return _floor_bound_verdict([{**raws[0], "delegated": only}])


def _seq_peak_savings(cells: dict[str, Any], arm: str, base: str = "default-shared",
                      ) -> list[tuple[float, float, float]]:
    """Run by run (paired by repetition): ``arm``'s core saving against ``base`` at the SEQ
    peak, and its ratio to the task saving with sources and without (``runtime_seq_peak.py``'s
    counts; sources are shared replay streams in both modes there, so the saving without
    sources is the like-for-like one)."""
    runs = cells.get("runs") or {}
    by_b = {int(r.get("rep", 1)): float(r["peak"]["cores"]) for r in runs.get(base, [])}
    task = 1 - cells["reuse_tasks"] / cells["default_tasks"]
    nonsource = 1 - cells["reuse_nonsource_tasks"] / cells["default_nonsource_tasks"]
    out = []
    for r in runs.get(arm, []):
        d = by_b.get(int(r.get("rep", 1)))
        if d:
            saving = 1 - float(r["peak"]["cores"]) / d
            out.append((saving, saving / task, saving / nonsource))
    return out


def _decided_seq_peak(raws: list[Any]) -> str:
    """A decided SEQ peak (``decide.py seq-peak-*``): each mode's peak cores and queries over
    the interleaved runs, then each Reuse mode's core saving against Default, run by run, and
    its ratio to the task saving (with and without sources)."""
    raw = raws[0]
    cells = raw["delegated"]
    runs = cells["runs"]
    rows = []
    for mode, rs in runs.items():
        vals = [float(r["peak"]["cores"]) for r in rs]
        queries = sorted({int(r["peak"]["queries"]) for r in rs})
        if vals:
            rows.append([mode, _spread(vals), "/".join(map(str, queries)), str(len(vals))])
    table = _table(["mode", "peak cores", "queries", "runs"], ["---", "---:", "---:", "---:"],
                   rows)
    task = 1 - cells["reuse_tasks"] / cells["default_tasks"]
    nonsource = 1 - cells["reuse_nonsource_tasks"] / cells["default_nonsource_tasks"]
    saving = []
    for arm in (a for a in runs if a.startswith("reuse")):
        s = _seq_peak_savings(cells, arm)
        if s:
            saving.append([arm, str(len(s)), _spread([x[0] for x in s]),
                           _spread([x[1] for x in s], 2), _spread([x[2] for x in s], 2)])
    table2 = _table(["against default-shared", "pairs", "core saving", "/ task saving",
                     "/ task saving without sources"], ["---", "---:", "---:", "---:", "---:"],
                    saving)
    a = cells["args"]
    return (f"{raw['reps']} interleaved fresh-JVM runs per mode (`benchmarks/decide.py "
            f"{raw['comparison']['name']}`): {a['rate']:g} events/s per source, trigger "
            f"{a['trigger']:g} s, every DAG submitted, then a {a['window']:g} s window after "
            f"{a['settle']:g} s. Tasks {cells['default_tasks']} -> {cells['reuse_tasks']} "
            f"({task:.1%} saved), without sources {cells['default_nonsource_tasks']} -> "
            f"{cells['reuse_nonsource_tasks']} ({nonsource:.1%}).\n\n" + table
            + "\n\nCore saving (1 - Reuse / Default, run by run) and its ratio to the task "
            "saving:\n\n" + table2)


#: issue 4's bound: the core saving at least this share of the task saving
_SEQ_SAVING_BOUND = 0.9


def _seq_saving_verdict(raws: list[Any], arm: str) -> str:
    """"``arm``'s core saving at least 90% of the task saving" (issue 4), against the task
    saving without sources (the like-for-like one, :func:`_seq_peak_savings`), pair by pair
    (:func:`_bound_verdict`)."""
    return _bound_verdict([_extent([x[2] for x in _seq_peak_savings(raws[0]["delegated"], arm)])],
                          _SEQ_SAVING_BOUND, at_most=False)


def _rates_apps_opmw(raws: list[Any]) -> str:
    raw = raws[0]
    base = _cores(raw, "default-inplace")[0]
    rows = []
    for c in raw["cells"]:
        rows.append([_mode_label(c["mode"]), str(c["running_tasks"]),
                     str(c.get("replica_tasks", 0)), _f(c["cores"]),
                     "1" if c["mode"] == "default-inplace" else f"{c['cores'] / base:.2f}"])
    return _table(["mode", "tasks", "copies", "cores", "against Default"],
                  ["---", "---:", "---:", "---:", "---:"], rows)


def _rates_partial(raws: list[Any]) -> str:
    """Issue 12's enactment table from its five invocations: (workload, file, mode, rate)."""
    riot, riot_shared, riot_slow, opmw, opmw_shared = raws
    plan = [("RIoT", riot_slow, "default", 100), ("RIoT", riot_shared, "default-shared", 100),
            ("RIoT", riot, "reuse", 100), ("RIoT", riot, "default", 300),
            ("RIoT", riot_shared, "default-shared", 300), ("RIoT", riot, "reuse", 300),
            ("OPMW", opmw, "default", 10), ("OPMW", opmw, "reuse", 10),
            ("OPMW", opmw_shared, "default-shared", 10)]
    rows = []
    first_default = True
    for workload, raw, mode, rate in plan:
        cell = next(c for c in raw["cells"] if c["mode"] == mode and c["rate"] == rate)
        label = mode
        if mode == "default" and first_default:
            label, first_default = "default (own sources, the paper's baseline)", False
        fl = _f(_floor_cores(raw, mode, rate))
        if cell.get("failed"):
            rows.append([workload, label, "-", f"{rate:g}", "failed to start", fl, "-", "-", "-"])
            continue
        trigger = float(raw["args"]["trigger"])
        if cell["sustained"]:
            sus = "yes"
        elif cell["backlog_end"] < cell["backlog_start"]:
            sus = "no (catching up)"
        elif cell["p99_ms"] / 1000 > 2.5 * trigger:
            sus = "p99 over"
        else:
            sus = "no"
        rows.append([workload, label, str(cell["queries"]), f"{rate:g}", _f(cell["cores"]), fl,
                     _lat(cell), f"{_n(cell['backlog_start'])} -> {_n(cell['backlog_end'])}",
                     sus])
    return _table(["workload", "mode", "queries", "rate/s", "cores", "floor (same work)",
                   "p50 / p99 latency (s)", "backlog start -> end", "sustained"],
                  ["---", "---", "---:", "---:", "---:", "---:", "---", "---", "---"], rows)


def _faults(raws: list[Any]) -> str:
    rows = []
    for run in raws[0]:
        for k in run["kills"]:
            rows.append([run["fault"], _step(k["step"]), str(k["killed"]), str(k["failures"]),
                         _f(k["gap_s"], 1), _f(run["normal_gap_s"], 1), _f(k["recover_s"], 1),
                         str(run["lost"]), str(run["duplicated"])])
    return _table(["fault", "step", "processes killed", "failures recorded",
                   "longest output pause (s)", "normal pause (s)", "time to recover (s)", "lost",
                   "duplicated"], _left(9), rows)


def _sink_gap(gap: float | None, n: int) -> str:
    return f"- ({n})" if not n or gap is None else f"{gap:.1f} ({n})"


def _ksafe_label(run: dict[str, Any]) -> str:
    return "no k-safety" if not run["k_safe"] else f"K={run['k_safe']}, U={run['min_users']}"


def _faults_ksafe(raws: list[Any]) -> str:
    rows = []
    for run in raws[0]:
        for k in run["kills"]:
            rows.append([_ksafe_label(run), _step(k["step"]), str(k["running_tasks"]),
                         str(k["replica_tasks"]), _f(k["gap_s"], 1),
                         _sink_gap(k["replicated_gap_s"], k["replicated_sinks"]),
                         _sink_gap(k["other_gap_s"], k["other_sinks"]), str(run["lost"]),
                         str(run["duplicated"])])
    return _table(["run", "step", "tasks", "replicas", "longest pause between batches (s)",
                   "replicated sinks: longest gap (s)", "other sinks: longest gap (s)", "lost",
                   "duplicated"], _left(9), rows)


def _chaos_table(raw: dict[str, Any]) -> str:
    """Per process type killed: the faults, how many were survived, the output pause and the
    time to recover (median and max), and the lost and duplicated outputs of their steps."""
    rows = []
    for kind, s in raw["by_type"].items():
        mine = [f for f in raw["faults"] if f["type"] == kind]
        lost = sum(f["lost"] or 0 for f in mine)
        dup = sum(f["duplicated"] or 0 for f in mine)
        rows.append([kind, str(s["faults"]), str(s["recovered"]),
                     f"{_f(s['pause_median_s'], 1)} / {_f(s['pause_max_s'], 1)}",
                     f"{_f(s['recover_median_s'], 1)} / {_f(s['recover_max_s'], 1)}",
                     f"{lost} / {dup}"])
    return _table(["killed", "faults", "survived", "output pause (s), median / max",
                   "time to recover (s), median / max", "lost / duplicated in their steps"],
                  ["---", "---:", "---:", "---:", "---:", "---:"], rows)


def _chaos(raws: list[Any]) -> str:
    """Issue 34's chaos run on a broker-fed run: the table, then the run's accounting."""
    raw = raws[0]
    table = _chaos_table(raw)
    counts = next(iter(raw["ingest"].values()), {}) if raw["ingest"] else {}
    return (table + f"\n\nSeed {raw['seed']}, {len(raw['faults'])} faults over "
            f"{raw['rows']} steps of {raw['step_s']:g} s at {raw['rate']:g} events/s; rc "
            f"{raw['rc']}; the whole run: lost {raw['lost']}, duplicated {raw['duplicated']}; "
            f"the recorded events ({_n(raw['recorded_events'])}) hold every `seq` once: "
            f"{'yes' if raw['recorded_contiguous'] else '**no**'}; the last ingest counted "
            f"{counts.get('missed', '-')} missed and {counts.get('stale', '-')} stale; "
            f"{len(raw['redis_restarts'])} Redis and {len(raw['mqtt_restarts'])} mosquitto "
            "restarts by their keepers.")


def _chaos_apps(raws: list[Any]) -> str:
    """Issue 34's chaos run across applications: the table, the pauses against two triggers,
    then the run's accounting."""
    raw = raws[0]
    pauses = [f["pause_s"] for f in raw["faults"] if f.get("pause_s") is not None]
    worst = max(pauses, default=None)
    return (_chaos_table(raw) + f"\n\nSeed {raw['seed']}, {len(raw['faults'])} faults over "
            f"{raw['rows']} steps of {raw['step_s']:g} s at {raw['rate']:g} events/s, K = "
            f"{raw['k_safe']}, U = {raw['replicate_min_users']} (every sink replicated), "
            f"trigger {raw['trigger_s']:g} s; rc {raw['rc']}; the whole run: lost "
            f"{raw['lost']}, duplicated {raw['duplicated']}. Output pauses within the target "
            f"of two triggers ({raw['target_pause_s']:g} s): {raw['pauses_within_target']} of "
            f"{len(pauses)} (the longest {_f(worst, 2)} s). {raw['instances']} instances in "
            f"all, {len(raw['replacements'])} replacements, {raw['coordinator_resumes']} "
            f"coordinator resumes, {len(raw['redis_restarts'])} Redis restarts by the "
            "coordinator's keeper.")


def _mmss(s: float | None) -> str:
    return "-" if s is None else f"{int(s) // 60}:{int(s) % 60:02d}"


def _wall_s(rec: dict[str, Any]) -> float:
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return (time.mktime(time.strptime(rec["ended"], fmt))
            - time.mktime(time.strptime(rec["started"], fmt)))


def _jvm_cds(raws: list[Any]) -> str:
    """A Spark JVM's start-up with and without the tests' class-data-sharing archive
    (``benchmarks/jvm_cds.py``): per arm, median [min, max] over the repetitions, and the
    spread rule's verdict."""
    r = raws[0]
    names = {"wall_s": "wall to the query's end (s)", "cpu_s": "CPU of Python and JVM (s)",
             "process_s": "the whole process (s)"}
    rows = []
    for key, name in names.items():
        by = {arm: [x[key] for x in r["runs"] if x["arm"] == arm] for arm in ("plain", "cds")}
        v = r["verdicts"][key]
        verdict = v["lower"] + " lower" if v["outcome"] == "lower" else v["outcome"]
        rows.append([name, _spread(by["plain"], 1), _spread(by["cds"], 1), verdict])
    args = r["args"]
    return (_table(["measure", "without the archive", "with it", "verdict"],
                   ["---", "---:", "---:", "---"], rows)
            + f"\n\n{args['reps']} runs per arm, interleaved, each a fresh process and JVM "
            f"(`{args['base_opts']}` in both); the archive: {args['archive_mb']} MB.")


def _gc_hold(raws: list[Any]) -> str:
    """The RIoT columnar floor with and without the collector's hold (``benchmarks/gc_hold.py``):
    per mode, median [min, max] ms per ``seq`` of each arm and the spread rule's verdict."""
    r = raws[0]
    rows = []
    for mode, v in r["verdicts"].items():
        by = {arm: [x["ms_per_seq"] for x in r["runs"] if x["mode"] == mode and x["arm"] == arm]
              for arm in ("without", "with")}
        verdict = (f"{v['lower']} lower by {_f(abs(v['diff']), 3)} ms/seq"
                   if v["outcome"] == "lower" else v["outcome"])
        rows.append([mode, _spread(by["without"]), _spread(by["with"]), verdict])
    a = r["args"]
    return (_table(["mode", "without the hold (ms/seq)", "with it (ms/seq)", "verdict"],
                   ["---", "---:", "---:", "---"], rows)
            + f"\n\n{a['reps']} runs per arm, interleaved, one process; {a['seqs']} `seq`, "
            f"batches of {a['batch']}; the first generation's threshold {a['held_threshold']:,} "
            f"with the hold, {a['default_threshold']:,} without.")


def _fresh_clone(raws: list[Any]) -> str:
    """The README's commands on fresh clones (``benchmarks/fresh_clone.py``): per pass, the
    result, each pytest lane's time (the Spark lane; the many-JVM lane, run beside it only
    in the passes of 2026-11-29 that tried it; the others beside them) and the whole
    command's wall time, set-up included."""
    recs = raws[0]
    rows = []
    for r in recs:
        kind = ("tests, loaded" if r.get("loaded") else "tests") if r["kind"] == "test" \
            else f"main job ({r['set']})"
        if r.get("shuffle") is not None:
            kind += f", shuffled (seed {r['shuffle']})"
        spark, jvms, other = r.get("spark_lane"), r.get("jvm_lane"), r.get("other_lane")
        failed = ", ".join(t.split("::")[-1] for t in r.get("failed_tests", []))
        result = "passed" if r["green"] else ("failed: " + failed if failed else
                                             f"failed (rc {r['rc']})")
        limit = "" if r["kind"] != "test" else ("yes" if r.get("within_limit") else "no")
        cpu = str((r.get("machine") or {}).get("cpu", ""))
        cpu = cpu.replace("(R)", "").replace(" Processor", "").strip() or "-"
        rows.append([r["started"][:16].replace("T", " "), f"`{r['commit'][:7]}`", cpu, kind,
                     result, _mmss(spark["seconds"]) if spark else "-",
                     _mmss(jvms["seconds"]) if jvms else "-",
                     _mmss(other["seconds"]) if other else "-", _mmss(_wall_s(r)), limit])
    # the machine per pass: the same 2 cores were an Intel Xeon one day and an AMD EPYC the
    # next, the same tests slower on the second (compare the rows of one commit)
    return _table(["started (UTC)", "commit", "machine", "what", "result", "Spark lane",
                   "many-JVM lane", "others", "wall, set-up included",
                   "each lane under 15 min"],
                  ["---", "---", "---", "---", "---", "---:", "---:", "---:", "---:", "---"],
                  rows)


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _tenants(raws: list[Any]) -> str:
    """Issue 25's many-tenants workload at the planner level (``benchmarks/tenants.py``): the
    running tasks where Default peaks, per trace, and the SEQ ratio over sizes and seeds."""
    r = raws[0]
    rows = [[t["trace"].upper(), str(t["step"]), str(t["default"]), str(t["exact"]),
             str(t["semantic"]), f"{t['rewrites']} ({t['rewritten_submits']})",
             str(t["saved_exact"]), str(t["saved_semantic"]), _ratio(t["ratio"])]
            for t in r["traces"]]
    sizes = "; ".join(f"{z['tenants']} tenants seed {z['seed']}: {_ratio(z['ratio'])}"
                      for z in r["sizes"])
    respell = "; ".join(f"{z['respell_p']:g}: {_ratio(z['ratio'])}" for z in r["respell"])
    return (_table(["trace", "step", "Default", "exact", "semantic",
                    "containment rewrites (submits)", "saved: exact", "saved: semantic",
                    "ratio"], ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:",
                               "---:"], rows)
            + f"\n\n{r['tenants']} tenants, seed {r['seed']}. The SEQ ratio over sizes and "
            f"seeds: {sizes}. Over the spelling knob (`respell_p`): {respell}.")


def _span(xs: Sequence[float]) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo:.0f}" if lo == hi else f"{lo:.0f}-{hi:.0f}"


def _containment_cost(raws: list[Any]) -> str:
    """Issue 25's planner cost per operation at 100k running tasks
    (``benchmarks/bench_containment.py --json``): per policy, the median of the runs' per-op
    medians [min, max], and the ratio to exact within a repetition."""
    r = raws[0]
    rows = []
    for label, m in r["summary"].items():
        us, ratio = m["median_us"], m["ratio_to_exact"]
        rows.append([label, f"{statistics.median(us):.0f} [{min(us):.0f}, {max(us):.0f}]",
                     f"{statistics.median(ratio):.2f} [{min(ratio):.2f}, {max(ratio):.2f}]"])
    rewritten = [run["rewritten"] for run in r["runs"]["semantic"]]
    return (_table(["policy", "us per op", "ratio to exact"], ["---", "---:", "---:"], rows)
            + f"\n\n{r['repeat']} interleaved runs per policy, each a fresh process; "
            f"{r['tasks']:,} running tasks, {r['ops']} timed submits (each with its removal), "
            f"seed {r['seed']}; semantic rewrote {_span(rewritten)} of them.")


def _faults_apps(raws: list[Any]) -> str:
    """Issue 24's driver kills beside issue 13's (``faults.json``'s driver run). The running
    tasks of issue 13's rows are the apps runs' at the same step: the same trace."""
    issue13 = next(r for r in raws[0] if r["fault"] == "driver")
    apps = [r for raw in raws[1:] for r in raw]
    tasks = {k["step"]: k["running_tasks"] for k in apps[0]["kills"]}
    rows = []
    for k in issue13["kills"]:
        rows.append(["issue 13: no k-safety, `--resume`", _step(k["step"]),
                     str(tasks.get(k["step"], "-")), "0", "resume", _f(k["gap_s"], 1), "- (0)",
                     _f(k["gap_s"], 1), "", str(issue13["lost"]), str(issue13["duplicated"])])
    for run in apps:
        masked = run["min_users"] == 1  # the target's runs: every sink replicated

        def bold(s: str, masked: bool = masked) -> str:
            return f"**{s}**" if masked else s

        for k in run["kills"]:
            replacement = {"join": "joins at a cut",
                           "restart": "restarts from its disk"}.get(k["replacement"],
                                                                     k["replacement"])
            rows.append([f"{_ksafe_label(run)}, apps", _step(k["step"]), str(k["running_tasks"]),
                         str(k["replica_tasks"]), replacement, bold(_f(k["gap_s"], 1)),
                         _sink_gap(k["replicated_gap_s"], k["replicated_sinks"]),
                         _sink_gap(k["other_gap_s"], k["other_sinks"]),
                         bold(_f(k["restored_s"], 1)), str(run["lost"]), str(run["duplicated"])])
    return _table(["run", "step", "tasks", "copies", "replacement",
                   "longest pause, all outputs (s)", "replicated sinks: longest gap (s)",
                   "other sinks: longest gap (s)", "K-safe again after (s)", "lost",
                   "duplicated"], _left(11), rows)


#: the sample times BENCHMARKS.md shows of the backpressure run (one every 30 s in the file)
_BACKPRESSURE_T = (30, 150, 210, 330, 360, 390, 450)


def _backpressure(raws: list[Any]) -> str:
    rows = []
    for s in raws[0]["steps"]:
        if s["t"] not in _BACKPRESSURE_T:
            continue
        rows.append([str(s["t"]), s["phase"], _n(s["slow_lag"]), "yes" if s["throttled"] else "no",
                     f"{_n(s['other_p50_ms'])} / {_n(s['other_p99_ms'])}",
                     f"{_n(s['producer_p50_ms'])} / {_n(s['producer_p99_ms'])}",
                     _n(s["topic_kb"]), _n(s["rss_mb"])])
    return _table(["t (s)", "phase", "slow consumer's lag (events)", "throttled",
                   "other consumer p50 / p99 (ms)", "producer's DAG p50 / p99 (ms)",
                   "shared topic (KB)", "RSS of the run (MB)"], _left(8), rows)


def _disk(raws: list[Any]) -> str:
    raw = raws[0]
    rows = raw["rows"]
    table = _table(["", "KiB"], ["---", "---"], [
        [f"maximum over {len(rows)} samples, one a minute (topics + checkpoints + runtime "
         "files)", _n(raw["max_bounded_kib"])],
        ["final", _n(raw["final_bounded_kib"])],
        ["maximum, first half / second half",
         f"{_n(raw['first_half_max_kib'])} / {_n(raw['second_half_max_kib'])}"],
        ["topics alone: maximum", _n(max(r["topics"] for r in rows))],
        ["checkpoints alone: maximum", _n(max(r["ckpt"] for r in rows))],
        ["sink records (outputs, grow by design), final", _n(raw["final_sinks_kib"])],
    ])
    picks = [r for r in rows if r["minute"] % 10 == 0 and r["minute"] > 0]
    picks = [rows[0], *picks]
    if rows[-1] not in picks:
        picks.append(rows[-1])
    per = "; ".join(f"{r['minute']:g}: {_n(r['bounded_kib'])}" for r in picks)
    return table + "\n\n" + textwrap.fill(f"Per ten minutes (minute: KiB): {per}.", 88)


def _compose(raws: list[Any]) -> str:
    axes = list(raws[0]["axes"])
    rows = []
    for r in raws[0]["rows"]:
        if r["status"] == "refused":
            tail = [f"refused ({r['kind']})", "", "", "", "", r["reason"]]
        else:
            tail = [r["status"], str(r["rc"]), f"{r['lost']} / {r['duplicated']}",
                    "yes" if r["outputs_equal_reference"] else "**no**",
                    _f(r["gap_s"], 1), f"{_n(r['wall_s'])} s"]
        rows.append([r[a] for a in axes] + tail)
    return _table([*axes, "status", "rc", "lost / duplicated", "outputs = reference",
                   "longest pause (s)", "wall"], _left(len(axes) + 6), rows)


def _trace_inplace(raws: list[Any]) -> str:
    rows_by_mode = raws[0]["rows"]
    d, r = rows_by_mode["default-inplace"], rows_by_mode["reuse-inplace"]
    rows = []
    for a, b in zip(d, r, strict=True):
        rows.append([str(a["step"]), a["op"], f"{a['running_tasks']}/{b['running_tasks']}",
                     _f(a["cores"]), _f(b["cores"])])
    return _table(["step", "op", "running tasks D/R (no sources)", "default-inplace",
                   "reuse-inplace"], ["---:", "---", "---", "---:", "---:"], rows)


def _decided_pairs(raw: dict[str, Any]) -> list[Paired]:
    """``decide.py``'s decisions, recomputed from the runs' values (the raw file's own
    ``decisions`` are not read, so a table cannot disagree with the runs)."""
    ok = {(r["rep"], r["arm"]): r["values"] for r in raw["runs"] if r["ok"]}
    windows = raw.get("windows") or {}
    out = []
    for a, b in raw["comparison"]["pairs"]:
        reps = [(ok[i, a], ok[i, b]) for i in range(1, int(raw["reps"]) + 1)
                if (i, a) in ok and (i, b) in ok]
        out.append(paired(a, b, reps, windows=windows, labels=raw["labels"],
                          unit=raw["statistic"]))
    return out


def _sp(s: Spread | None) -> str:
    return "-" if s is None else str(s)


def _steps_of(steps: Sequence[int]) -> str:
    lo, hi = steps[0] + 1, steps[-1] + 1
    return (f"step {lo}" if lo == hi else f"steps {lo}-{hi}" if len(steps) == hi - lo + 1
            else f"{len(steps)} steps")


def _decided(raws: list[Any]) -> str:
    """One decided comparison (``benchmarks/decide.py``): per step each arm's median [min,
    max] over the paired runs, their paired difference and its verdict; then each whole-run
    statistic decided paired and by the spread rule on the per-run values; then the counts."""
    raw = raws[0]
    col = "op" if raw["kind"] == "trace" else "at"
    parts = []
    for p in _decided_pairs(raw):
        a, b = p.a, p.b
        rows = [[str(i), s.label, _sp(s.spread_a), _sp(s.spread_b), _sp(s.diff), s.verdict]
                for i, s in enumerate(p.steps, 1)]
        parts.append(f"**{a} against {b}**: {p.n} paired runs ({raw['statistic']}; the "
                     f"difference is {a} - {b}, run by run).")
        parts.append(_table(["step", col, a, b, "paired difference", "verdict"],
                            ["---:", "---", "---:", "---:", "---:", "---"], rows))
        if p.windows:
            whole = [[f"{w.name} ({_steps_of(w.steps)})", _sp(w.paired.spread_a),
                      _sp(w.paired.spread_b), _sp(w.paired.diff), w.paired.verdict,
                      f"{w.whole.lower} lower" if w.whole.lower else w.whole.outcome]
                     for w in p.windows]
            parts.append(_table(["whole runs (mean of)", a, b, "paired difference",
                                 "paired verdict", "spread rule on the runs"],
                                ["---", "---:", "---:", "---:", "---", "---"], whole))
        n = len(p.steps)
        counts = ", ".join(f"{v} at {p.count(v)}" for v in
                           (f"{a} lower", f"{b} lower", "no difference", "not decided"))
        overall = "; ".join(f"{w.name}: {w.paired.verdict}" for w in p.windows)
        parts.append(f"Per step, of {n}: {counts}; by chance alone about {n * p.chance:.1f} "
                     f"each way (a step with no difference is called lower one given way with "
                     f"chance {p.chance:g} at {p.n} pairs)."
                     + (f" Overall, paired: {overall}." if overall else ""))
    return "\n\n".join(parts)


# ---------------------------------------------------------------- verdicts

def _apps_k1u2_below_default(raws: list[Any]) -> str:
    raw = raws[0]
    return _target_lower(_APPS_TARGET, _cores(raw, _APPS_TARGET), "default-inplace",
                         _cores(raw, "default-inplace"))


def _ksafe_k1u2_vs_reuse(raws: list[Any]) -> str:
    raw = raws[0]
    return _target_lower("reuse-inplace+k1u2", _cores(raw, "reuse-inplace+k1u2"),
                         "reuse-inplace", _cores(raw, "reuse-inplace"))


def _trace_never_above(raws: list[Any]) -> str:
    """"Reuse never above Default": the runs' mean cores over the trace, one value a run."""
    rows = raws[0]["rows"]
    means = {m: [statistics.mean(float(x["cores"]) for x in rs)] for m, rs in rows.items()}
    return _target_lower("reuse-inplace", means["reuse-inplace"], "default-inplace",
                         means["default-inplace"])


def _decided_verdict(raws: list[Any]) -> str:
    """The target "the first pair's arm below its baseline" on every whole-run statistic
    (:func:`_pair_verdict`)."""
    return _pair_verdict(raws, 0)


def _pair_verdict(raws: list[Any], index: int) -> str:
    """The target "pair ``index``'s arm below its baseline" on every whole-run statistic:
    met when both the paired rule and the spread rule on the runs name the arm on every one,
    missed when both name the baseline on one, not decided when a rule cannot decide, else no
    difference (either rule alone would be less strict)."""
    p = _decided_pairs(raws[0])[index]
    said = [(w.paired, w.whole) for w in p.windows]
    if not said or any("not decided" in (x.outcome, y.outcome) for x, y in said):
        return "not decided"
    if all(x.lower == y.lower == p.a for x, y in said):
        return "met"
    if any(x.lower == y.lower == p.b for x, y in said):
        return "missed"
    return "no difference"


def _steps_verdict(raws: list[Any], index: int) -> str:
    """The target "pair ``index``'s arm below its baseline at every step" (a cell comparison:
    a step is a rate), each step decided on its paired differences: met when every step says
    the arm is lower, missed when one says the baseline is, not decided when one cannot
    decide, else no difference."""
    p = _decided_pairs(raws[0])[index]
    said = [s.verdict for s in p.steps]
    if not said or "not decided" in said:
        return "not decided"
    if all(v == f"{p.a} lower" for v in said):
        return "met"
    if f"{p.b} lower" in said:
        return "missed"
    return "no difference"


def _window_verdict(raws: list[Any], index: int, window: str) -> str:
    """The target "pair ``index``'s arm below its baseline" on one whole-run statistic,
    ``window``, by the rules of :func:`_pair_verdict`."""
    p = _decided_pairs(raws[0])[index]
    (w,) = [w for w in p.windows if w.name == window]
    x, y = w.paired, w.whole
    if "not decided" in (x.outcome, y.outcome):
        return "not decided"
    if x.lower == y.lower == p.a:
        return "met"
    if x.lower == y.lower == p.b:
        return "missed"
    return "no difference"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x / 1000:.2f} s"


def _pace_phases(raws: list[Any]) -> str:
    """Issue 36: a broker-fed run with no rate through a publisher's schedule, per phase."""
    r = raws[0]
    rows = [[f"{p['rate']:g}/s for {p['seconds']:g} s", f"{p['seqs'][0]}-{p['seqs'][1]}",
             _n(p["claimed_median"] or 0), _f(p["batch_wall_median_s"], 2),
             _f(p["batch_wall_max_s"], 2), _ms(p["p50_ms"]), _ms(p["p99_ms"]),
             "yes" if p["within_2_triggers"] else "no"] for p in r["phases"]]
    table = _table(["phase (per source)", "seq measured", "seq per batch (median)",
                    "batch wall median (s)", "batch wall max (s)", "p50", "p99",
                    "p99 within 2 triggers + batch"], _left(8), rows)
    wins = r.get("last_phase_windows") or []
    if wins:
        table += ("\n\nThe last phase's p99 by 10 s of its events (from the phase's start): "
                  + ", ".join(f"{w['from_s']:g} s {_ms(w['p99_ms'])}" for w in wins) + ".")
    return (table + f"\n\nTrigger {r['trigger_s']:g} s; engine given no rate (its default, "
            f"{r['engine_rate_option']:g}, unused); lost {r['lost']}, duplicated "
            f"{r['duplicated']} of {_n(r['expected'])} expected outputs; drained "
            f"{r['drain_s']:g} s after the publisher stopped. Publisher: {r['publisher']}.")


def _pace_search(raws: list[Any]) -> str:
    """Issue 36: the highest sustained rate, generated replay against the broker path."""
    cells = [c for c in raws[0] if c.get("part") == "search"]
    rows = [[c["source"], f"{c['rate']:g}", "yes" if c["sustained"] else "no",
             f"{c['backlog_start']} -> {c['backlog_end']}", _ms(c["p50_ms"]), _ms(c["p99_ms"]),
             f"{c['arrival_rate']:g}", _f(c["cores"])] for c in cells]
    table = _table(["source", "rate (events/s per source)", "sustained", "backlog (seq)",
                    "p50", "p99", "arrived (seq/s)", "cores"], _left(8), rows)
    res = {c["source"]: c for c in raws[0] if c.get("part") == "search-result"}
    lines = [f"{s}: highest sustained {r['highest_sustained']:g}, lowest failed "
             f"{r['lowest_failed']}" for s, r in res.items()]
    ratio = next((c for c in raws[0] if c.get("part") == "search-ratio"), None)
    if ratio is not None:
        lines.append(f"broker path / replay: {ratio['mqtt_over_replay']:g} (target at least "
                     f"{ratio['target']:g})")
    return table + "\n\n" + "; ".join(lines) + "."


def _search_verdict(raws: list[Any]) -> str:
    """The broker path's highest sustained rate against replay's: a ratio from one search per
    source, compared with the target (a rate limit, not a cores comparison: no spread)."""
    ratio = next((c for c in raws[0] if c.get("part") == "search-ratio"), None)
    if ratio is None:
        return "not decided"
    return "met" if ratio["met"] else "missed"


#: the modes of ``benchmarks/limit.py``'s raw file, in the order its table lists them
_FLOOR_MODES = ("default", "reuse", "semantic")


def _floor_table(raws: list[Any]) -> str:
    """``benchmarks/limit.py``: both floors (issue 35) per workload and mode, ms of CPU per
    source ``seq``, and the work Reuse saves on each. A file from before the columnar floor
    shows ``-`` for it. With repetitions (``--repeat``), each cell is the median [min, max]
    and the verdicts (the spread rule) follow the tables."""
    rows, saved, verdicts = [], [], []
    for w, r in raws[0].items():
        if not isinstance(r, dict) or "default" not in r:
            continue
        for mode in (m for m in _FLOOR_MODES if m in r):
            m = r[mode]
            c = m.get("columnar")
            rows.append([w, mode, str(r["dags"]), str(r.get("seqs", "-")),
                         f"{m['tasks']} + {m['sources']}",
                         _spread_cell(m), _spread_cell(c) if c else "-",
                         f"{c['ms_per_seq'] / m['ms_per_seq']:.2f}" if c else "-",
                         str(c["batch"]) if c else "-"])
            if "verdict" in m:
                verdicts.append(f"- {w} {mode}: {m['verdict']['text']}")
        if "target" in r:
            t = r["target"]
            verdicts.append(f"- {w} target, Reuse's columnar floor at most {t['ms_per_seq']} "
                            f"ms per seq in every run: {'met' if t['met'] else 'missed'} "
                            f"(slowest run {_f(t['reuse_columnar_max'])} ms)")
        d, u = r["default"], r["reuse"]
        dc, uc = d.get("columnar"), u.get("columnar")
        saved.append([w, _f(d["ms_per_seq"] - u["ms_per_seq"]),
                      _f(dc["ms_per_seq"] - uc["ms_per_seq"]) if dc and uc else "-"])
    return "\n\n".join([
        _table(["workload", "mode", "DAGs", "seq measured", "tasks + sources",
                "per event (ms/seq)", "columnar (ms/seq)", "columnar / per event (medians)",
                "batch (seq)"],
               ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"], rows),
        _table(["workload", "work saved per event (Default - Reuse, ms/seq)",
                "work saved columnar (ms/seq)"], ["---", "---:", "---:"], saved),
        *(["\n".join(verdicts)] if verdicts else [])])


def _spread_cell(m: dict[str, Any]) -> str:
    """A floor's ms per seq: the median [min, max] of its runs, or its one run."""
    sp = m.get("spread")
    if not sp:
        return _f(m["ms_per_seq"])
    return f"{_f(sp['median'])} [{_f(sp['min'])}, {_f(sp['max'])}]"


def _manager(raws: list[Any]) -> str:
    """``bench_manager.py --json``: merge + unmerge per op as running tasks grow (fast manager
    and the literal reference, same DAGs, same run), then the fast manager's growth with the
    submitted DAG's size."""
    res = raws[0]
    rows = []
    for r in res["rows"]:
        ref = r["reference_mean_ms"]
        rows.append([_n(r["running_tasks"]), _n(r["submitted_dags"]),
                     f"{r['fast_mean_us']:.1f} / {r['fast_p99_us']:.1f}",
                     "not run" if ref is None else f"{ref:.2f}",
                     "-" if ref is None else f"{ref * 1e3 / r['fast_mean_us']:.0f}x"])
    growth = [[str(g["dag_tasks"]), f"{g['mean_us']:.1f}", f"{g['mean_us'] / g['dag_tasks']:.1f}"]
              for g in res["growth"]]
    n = res["growth"][0]["running_tasks"] if res["growth"] else 0
    return (_table(["running tasks", "submitted DAGs", "fast: us per op (mean / p99)",
                    "literal reference: ms per op", "reference / fast"],
                   ["---:"] * 5, rows)
            + f"\n\nGrowth with the submitted DAG's size, fast manager at {_n(n)} running "
            "tasks (same run):\n\n"
            + _table(["submitted DAG tasks", "us per op", "us per task"], ["---:"] * 3, growth))


#: issue 2's target: merge + unmerge of a 10-task DAG under 1 ms at 100,000 running tasks
_MANAGER_BOUND_US = 1000.0


def _manager_verdict(raws: list[Any]) -> str:
    """Met when the largest state measured holds at least 100,000 running tasks and its p99
    (not only its mean) is under the bound; missed when its mean is over it."""
    rows = raws[0]["rows"]
    big = max(rows, key=lambda r: r["running_tasks"])
    if big["running_tasks"] < 100_000:
        return "not decided"
    return ("met" if big["fast_p99_us"] < _MANAGER_BOUND_US else
            "missed" if big["fast_mean_us"] >= _MANAGER_BOUND_US else "not decided")


def _placement_speed(raws: list[Any]) -> str:
    """``placement_speed.py --json``: per configuration and strategy, the resolution time and
    the AL as a ratio to AELS+RP+LA's on the same application."""
    res = raws[0]
    names = res["strategies"]
    by = {(c["config"], c["strategy"]): c for c in res["cells"]}
    rows = []
    for cfg in sorted({c["config"] for c in res["cells"]}):
        row = [str(cfg)]
        for s in names:
            c = by[cfg, s]
            row.append(f"FAIL {c['constraint']}" if not c["ok"] else
                       f"{c['seconds']:.3f} s x{c['al_ratio']:.4f}")
        rows.append(row)
    la = [c["seconds"] for c in res["cells"] if c["strategy"] == "aels+rp+la" and c["ok"]]
    return (_table(["config", *names], ["---:", *["---"] * len(names)], rows)
            + f"\n\nAELS+RP+LA's worst time: {max(la):.3f} s over {len(la)} configurations "
            f"({res['infrastructure']}).")


#: issue 6's speed goal: a 50-operator application placed in under this many seconds
_PLACEMENT_BOUND_S = 10.0


def _placement_speed_verdict(raws: list[Any]) -> str:
    """Met when AELS+RP+LA placed every configuration, the slowest under the bound."""
    cells = [c for c in raws[0]["cells"] if c["strategy"] == "aels+rp+la"]
    if not cells:
        return "not decided"
    ok = all(c["ok"] for c in cells) and max(c["seconds"] for c in cells) < _PLACEMENT_BOUND_S
    return "met" if ok else "missed"


def _bus_frames(raws: list[Any]) -> str:
    """``bus_frames.py --json`` part (a): the entropy gate per stream and batch size."""
    rows = [[r["stream"], _n(r["batch"]), f"{r['entropy']:.2f}", _n(r["json_lines_b"]),
             _n(r["frame_b"]), _n(r["frame_lz4_b"]), f"{r['frame_b'] / r['frame_lz4_b']:.1f}",
             r["gate"].upper() if r["gate"] == "lz4" else r["gate"], _n(r["plain_ev_s"]),
             _n(r["lz4_ev_s"])] for r in raws[0]["entropy"]]
    return _table(["stream", "batch", "entropy (bits/B)", "JSON lines (B)", "frame (B)",
                   "frame + LZ4 (B)", "ratio", "gate", "plain ev/s", "LZ4 ev/s"],
                  ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---", "---:", "---:"],
                  rows)


#: issue 12's relay-hop target: events per second of CPU at ~200-byte events
_HOP_BOUND = 100_000


def _relay_hop(raws: list[Any]) -> str:
    """``bus_frames.py --json`` part (b): the relay hop's events per second of CPU."""
    names = {"pass": "pass-through", "field": "add a field"}
    rows = [[names.get(r["task"], r["task"]), _n(r["batch"]),
             "gated" if r["frames"] == "gate" else "plain", _n(r["frame_b"]), _n(r["ev_s"])]
            for r in raws[0]["relay"]]
    return _table(["task", "batch", "frames", "frame (B)", "events/s per core"],
                  ["---", "---:", "---", "---:", "---:"], rows)


def _relay_hop_verdict(raws: list[Any]) -> str:
    """Met when every cell reaches the bound, missed when none does (one run per cell:
    a throughput bound, not a comparison; :func:`_bound_verdict`)."""
    return _bound_verdict([_extent([r["ev_s"] for r in raws[0]["relay"]], 1)], _HOP_BOUND,
                          at_most=False)


def _frames_throughput_verdict(raws: list[Any]) -> str:
    """"No loss of throughput" from the gate: met when every gated (LZ4) cell encodes and
    decodes at least as fast as plain, missed when some RIoTBench cell is slower."""
    rows = [r for r in raws[0]["entropy"] if r["gate"] == "lz4"]
    return "met" if all(r["lz4_ev_s"] >= r["plain_ev_s"] for r in rows) else "missed"


def _placement_margins(raws: list[Any]) -> str:
    """``placement_eval.py --json``: AELS+RP+LA's AL margin over each other strategy, per
    topology class, on the pairs where both placed (mean, and the range over the pairs)."""
    res = raws[0]
    rows = [[m["strategy"], m["topo_class"], _n(m["pairs"]), f"{m['ratio']:.3f}",
             f"{m['better_pct']:.1f}% [{m['better_min']:.1f}, {m['better_max']:.1f}]"]
            for m in res["margins"]]
    return (f"Scale `{res['scale']}`: {_n(res['runs'])} runs in {res['wall_s']:.0f} s; runs "
            f"over the {res['time_limit_s']:g} s limit: "
            + ", ".join(f"{s} {v:.0f}%" for s, v in res["over_limit_pct"].items()) + ".\n\n"
            + _table(["strategy", "topologies", "pairs", "AL / AL of AELS+RP+LA",
                      "LA's AL lower by (mean [min, max] over the pairs)"],
                     ["---", "---", "---:", "---:", "---:"], rows))


_TOPO_ORDER = {"regular": 0, "large": 1, "extra-large": 2}


def _placement_search(raws: list[Any]) -> str:
    """``placement_eval.py --json``'s search: per strategy and topology class, the mean
    evaluations (the search's size), the mean / max resolution time and the mean AL."""
    res = raws[0]
    order = sorted(res["search"], key=lambda r: (r["strategy"], _TOPO_ORDER.get(r["topo_class"], 9)))
    rows = [[r["strategy"], r["topo_class"], _n(r["runs"]), _n(round(r["evaluations_mean"])),
             f"{r['time_mean_s']:.3f} / {r['time_max_s']:.2f}",
             "-" if r["al_mean_s"] is None else f"{r['al_mean_s']:.3f}"]
            for r in order]
    return _table(["strategy", "topologies", "runs", "mean evaluations",
                   "resolution time mean / max (s)", "mean AL (s)"],
                  ["---", "---", "---:", "---:", "---:", "---:"], rows)


def _placement_margin_verdict(raws: list[Any], strategy: str, bound_pct: float) -> str:
    """"AELS+RP+LA at least ``bound_pct``% better than ``strategy``" on regular topologies,
    read as a mean AL lower by that share (the seeded grid: one value, no spread)."""
    got = [m for m in raws[0]["margins"]
           if m["strategy"] == strategy and m["topo_class"] == "regular"]
    if not got:
        return "not decided"
    return "met" if got[0]["better_pct"] >= bound_pct else "missed"


def _spread_of(d: dict[str, Any], digits: int = 3) -> str:
    """A ``Spread.to_dict()`` as ``median [min, max]`` (one value as itself)."""
    if d["n"] == 1:
        return _f(d["median"], digits)
    return f"{_f(d['median'], digits)} [{_f(d['min'], digits)}, {_f(d['max'], digits)}]"


def _spread_extent(d: dict[str, Any], min_n: int = 3) -> Extent:
    """:func:`_extent` of a ``Spread.to_dict()`` (its runs' extremes and count)."""
    return (float(d["min"]), float(d["max"])) if d["n"] >= min_n else None


def _shard_cost(raws: list[Any]) -> str:
    """``shard_cost.py --json``, one file per shard count: the floor, the shard worker and
    their ratio, each repetition against the floor run just before it."""
    rows = [[str(r["shards"]), r["mode"], str(r["floor_ms"]["n"]), _spread_of(r["floor_ms"]),
             _spread_of(r["shard_ms"]), _spread_of(r["ratio"]), _spread_of(r["whole_ratio"])]
            for r in raws]
    return _table(["shards", "mode", "repetitions", "floor ms/`seq`", "shard ms/`seq`",
                   "shard / floor", "whole loop / floor"],
                  ["---:", "---", "---:", "---:", "---:", "---:", "---:"], rows)


#: issue 22's bound: the shard worker's CPU per ``seq`` at most this many times the floor's
_SHARD_BOUND = 1.3


def _shard_cost_verdict(raws: list[Any]) -> str:
    """Every repetition of every file (a shard count) against the bound
    (:func:`_bound_verdict`)."""
    return _bound_verdict([_spread_extent(x["ratio"]) for x in raws], _SHARD_BOUND, at_most=True)


def _stage_cost(raws: list[Any]) -> str:
    """``stage_cost.py --json``: the floor, the unsplit shard and the staged executor on 1 and
    2 partitions, interleaved per repetition."""
    res = raws[0]
    ways = [k for k in res if isinstance(res[k], dict) and "ms" in res[k]]
    rows = []
    for w in ways:
        r = res[w]
        rows.append([w, _spread_of(r["ms"]), _spread_of(r["ratio"]),
                     _spread_of(r["critical_ms"]) if "critical_ms" in r else "",
                     _spread_of(r["balance"]) if "balance" in r else "",
                     f"{_n(r['bytes']['median'])} ({_n(r['crossed']['median'])})"
                     if "bytes" in r else ""])
    return (f"{res['mode']}, {res['keying']} keying, batches of {res['batch']} `seq`.\n\n"
            + _table(["way", "CPU ms/`seq`", "x floor", "critical ms/`seq`", "balance",
                      "bytes/`seq` (to the other partition)"],
                     ["---", "---:", "---:", "---:", "---:", "---:"], rows))


#: issue 22's bound on the staged executor: the critical path on 2 partitions, ms per seq
_CRITICAL_BOUND_MS = 0.66


def _stage_cost_verdict(raws: list[Any]) -> str:
    """Every repetition's critical path on 2 partitions against the bound
    (:func:`_bound_verdict`)."""
    c = raws[0].get("staged-2", {}).get("critical_ms")
    return _bound_verdict([_spread_extent(c) if c else None], _CRITICAL_BOUND_MS, at_most=True)


def _window_slices(raws: list[Any]) -> str:
    """``window_slices.py --json``: CPU per batch of ``k`` block averages over one stream,
    each member alone (unfused) and as one window group (fused), at the kernel and at
    ``run_window``; the ratio is unfused over fused, repetition by repetition."""
    res = raws[0]
    rows = [[name.split()[0].split("=")[1], name.split()[1],
             ", ".join(map(str, r["windows"])), _spread_of(r["unfused"], 2),
             _spread_of(r["fused"], 2), _spread_of(r["ratio"], 2),
             _window_slices_verdict_of(r["ratio"])]
            for name, r in res.items() if name.startswith("k=")]
    return _table(["k", "level", "windows", "unfused ms/batch", "fused ms/batch",
                   "unfused / fused", "by the spread rule"],
                  ["---:", "---", "---", "---:", "---:", "---:", "---"], rows)


def _window_slices_verdict_of(ratio: dict[str, Any]) -> str:
    """Fused cheaper (every repetition's ratio above 1), dearer (every one below 1), no
    difference (the ratios straddle 1), or not decided (fewer than three)."""
    if ratio["n"] < 3:
        return "not decided"
    if ratio["min"] > 1.0:
        return "fused lower"
    return "unfused lower" if ratio["max"] < 1.0 else "no difference"


def _view_latency(raws: list[Any]) -> str:
    """Issue 36 (issue 23's open target): from a submit to the live view showing the tasks."""
    r = raws[0]
    subs = r["submits"]
    rows = [[s["dag"], str(s["started"]), str(s["reused"]), _f(s["scene_s"]), _f(s["live_s"])]
            for s in subs]
    live = [s["live_s"] for s in subs if s["live_s"] is not None]
    table = _table(["dataflow", "tasks started", "reused", "scene shows it (s)",
                    "task table shows its tasks running (s)"], _left(5), rows)
    summary = (f"Trigger {r['trigger_s']:g} s, view refresh {r['refresh_s']:g} s, "
               f"{r['rate']:g} events/s per source; running tasks shown within "
               f"{_spread(live, 2) if live else '-'} s (median [min, max]) of the submit, "
               f"{len(live)} of {len(subs)} submits")
    return table + "\n\n" + summary + "."


# ---------------------------------------------------------------- the registry

def registry() -> dict[str, Entry]:
    """Every generated table and verdict, by name (the name in the markers)."""
    entries = [
        Entry("rates_riot", ("rates_riot.json",), _rates_curve),
        Entry("rates_riot_max", ("rates_riot.json",), _rates_max),
        Entry("rates_opmw", ("rates_opmw.json",), _rates_curve),
        Entry("rates_ksafe", ("rates_ksafe.json",), _rates_ksafe,
              verdict=_ksafe_k1u2_vs_reuse),
        Entry("rates_apps", ("rates_apps.json",), _rates_apps,
              verdict=_apps_k1u2_below_default),
        Entry("rates_apps_opmw", ("rates_apps_opmw.json",), _rates_apps_opmw),
        Entry("rates_partial", ("rates_partial_riot.json", "rates_partial_riot_shared.json",
                                "rates_partial_riot_slowramp.json", "rates_partial_opmw.json",
                                "rates_partial_opmw_shared.json"), _rates_partial),
        Entry("faults", ("faults.json",), _faults),
        Entry("faults_ksafe", ("faults_ksafe.json",), _faults_ksafe),
        Entry("faults_apps", ("faults.json", "faults_apps_u1.json", "faults_apps_u2.json"),
              _faults_apps),
        Entry("backpressure", ("backpressure.json",), _backpressure),
        Entry("disk", ("disk.json",), _disk),
        Entry("trace_inplace", ("trace_inplace.json",), _trace_inplace,
              verdict=_trace_never_above),
        Entry("broker_pace_schedule", ("broker_pace_schedule.json",), _pace_phases),
        Entry("broker_pace_burst", ("broker_pace_burst.json",), _pace_phases),
        Entry("broker_pace_search", ("broker_pace_search.json",), _pace_search,
              verdict=_search_verdict),
        Entry("view_latency", ("view_latency.json",), _view_latency),
        Entry("compose", ("compose.json",), _compose),
        # benchmarks/chaos.py (issue 34, item 2)
        Entry("chaos", ("chaos.json",), _chaos),
        Entry("chaos-apps", ("chaos_apps.json",), _chaos_apps),
        Entry("chaos-apps-restart", ("chaos_apps_restart.json",), _chaos_apps),
        # benchmarks/runtime_rates.py, issue 35: a latency budget at 10 events/s
        Entry("rates_pace", ("rates_pace.json",), _rates_issue35),
        Entry("cores_latency", ("cores_latency.json",), _cores_latency),
        # benchmarks/runtime_rates.py, issue 35: the shards columnar or per event at 300/s
        Entry("rates_columnar", ("rates_columnar.json",), _rates_issue35),
        # benchmarks/limit.py --json docs/bench/floor.json: both floors (issue 35)
        Entry("floor", ("floor.json",), _floor_table),
        # benchmarks/gc_hold.py: the columnar floor with and without the collector's hold
        Entry("gc_hold", ("gc_hold.json",), _gc_hold),
        # decided by benchmarks/decide.py (issue 33, item 3): Figure 3, paired by step
        Entry("decide_fig3_riot", ("decide_fig3_riot.json",), _decided,
              verdict=_decided_verdict),
        Entry("decide_fig3_opmw", ("decide_fig3_opmw.json",), _decided,
              verdict=_decided_verdict),
        Entry("decide_trace_inplace_riot", ("decide_trace_inplace_riot.json",), _decided,
              verdict=_decided_verdict),
        Entry("decide_rates_riot_floor", ("decide_rates_riot_floor.json",), _decided_floor,
              verdict=_floor_bound_verdict),
        # the OPMW 8-DAG trace, relaunch with stop and with lazy unmerge against Default:
        # the table, the lazy arm's verdict against Default, and lazy against stop over the
        # removals
        Entry("decide_trace_lazy_opmw", ("decide_trace_lazy_opmw.json",), _decided,
              verdict=lambda raws: _pair_verdict(raws, 1)),
        Entry("decide_trace_lazy_opmw_removals", ("decide_trace_lazy_opmw.json",),
              verdict=lambda raws: _window_verdict(raws, 2, "removals")),
        # decided rate cells on the shared query (issue 11): the paired differences, the
        # saving against the work saved, and the floor bound on Reuse's runs
        *(e for w in ("riot", "opmw") for e in (
            Entry(f"decide_rates_{w}_inplace", (f"decide_rates_{w}_inplace.json",), _decided),
            Entry(f"decide_rates_{w}_inplace_saving", (f"decide_rates_{w}_inplace.json",),
                  _decided_saving, verdict=_saving_verdict),
            Entry(f"decide_rates_{w}_inplace_floor", (f"decide_rates_{w}_inplace.json",),
                  verdict=_mode_floor_verdict))),
        # decided SEQ peaks (issue 4): peak cores, the core saving against the task saving
        *(e for w in ("riot", "opmw") for e in (
            Entry(f"decide_seq_peak_{w}", (f"decide_seq_peak_{w}.json",), _decided_seq_peak),
            Entry(f"decide_seq_peak_{w}_relaunch", (f"decide_seq_peak_{w}.json",),
                  verdict=lambda raws: _seq_saving_verdict(raws, "reuse-relaunch")),
            Entry(f"decide_seq_peak_{w}_partial", (f"decide_seq_peak_{w}.json",),
                  verdict=lambda raws: _seq_saving_verdict(raws, "reuse")))),
        # the paper's enactment at the OPMW SEQ peak (issue 12): its cells, the paired
        # differences, and Reuse below Default with its own sources and with shared ones
        Entry("decide_rates_partial_opmw_cells", ("decide_rates_partial_opmw.json",),
              _decided_partial),
        Entry("decide_rates_partial_opmw", ("decide_rates_partial_opmw.json",), _decided,
              verdict=lambda raws: _steps_verdict(raws, 0)),
        Entry("decide_rates_partial_opmw_shared", ("decide_rates_partial_opmw.json",),
              verdict=lambda raws: _steps_verdict(raws, 1)),
        # benchmarks without Spark, raw files since issue 33: the manager (issue 2), placement
        # speed (issue 6), bus frames and the relay hop (issue 12), the shard worker and the
        # staged executor against the floor (issue 22)
        Entry("manager", ("manager.json",), _manager, verdict=_manager_verdict),
        Entry("placement_speed", ("placement_speed.json",), _placement_speed,
              verdict=_placement_speed_verdict),
        Entry("bus_frames", ("bus_frames.json",), _bus_frames,
              verdict=_frames_throughput_verdict),
        Entry("relay_hop", ("bus_frames.json",), _relay_hop, verdict=_relay_hop_verdict),
        Entry("shard_cost", ("shard_cost_1.json", "shard_cost_2.json"), _shard_cost,
              verdict=_shard_cost_verdict),
        Entry("stage_cost", ("stage_cost.json",), _stage_cost, verdict=_stage_cost_verdict),
        # benchmarks/window_slices.py --json (issue 35, item 3): window groups, fused or not
        Entry("window_slices", ("window_slices.json",), _window_slices),
        Entry("placement_margins", ("placement_eval.json",), _placement_margins),
        Entry("placement_search", ("placement_eval.json",), _placement_search),
        Entry("placement_cloud_only", ("placement_eval.json",),
              verdict=lambda raws: _placement_margin_verdict(raws, "cloud-only", 26.0)),
        Entry("placement_tcep", ("placement_eval.json",),
              verdict=lambda raws: _placement_margin_verdict(raws, "tcep", 50.0)),
        # benchmarks/tenants.py --json and bench_containment.py --json (issue 25)
        Entry("tenants", ("tenants.json",), _tenants),
        Entry("containment_cost", ("containment_cost.json",), _containment_cost),
        # benchmarks/fresh_clone.py (issues 33, 34): the README's commands on fresh clones
        Entry("fresh_clone", ("fresh_clone.json",), _fresh_clone),
        # benchmarks/jvm_cds.py (issue 34): the tests' JVMs with and without the archive
        Entry("jvm_cds", ("jvm_cds.json",), _jvm_cds),
    ]
    return {e.name: e for e in entries}


# ---------------------------------------------------------------- files and blocks

def markdown_files(root: Path) -> list[Path]:
    """README.md, BENCHMARKS.md and docs/*.md under ``root``, those that exist."""
    files = [root / "README.md", root / "BENCHMARKS.md", *sorted((root / "docs").glob("*.md"))]
    return [f for f in files if f.is_file()]


def _provenance_note(files: Sequence[str], raws: Sequence[Any]) -> str:
    cited = ", ".join(f"`{BENCH}/{f}`" for f in files)
    notes, bare = [], []
    for f, raw in zip(files, raws, strict=True):
        p = raw.get("provenance") if isinstance(raw, dict) else None
        if not isinstance(p, dict) or not p.get("commit") or not p.get("machine"):
            bare.append(f)
            continue
        m = p["machine"]
        notes.append(f"`{f}`: commit {str(p['commit'])[:10]}{' (dirty)' if p.get('dirty') else ''}"
                     f", {m.get('cpu', '?')}, {m.get('cores', '?')} cores, "
                     f"{m.get('memory_gib', '?')} GiB, Python {m.get('python', '?')}, "
                     f"PySpark {m.get('pyspark', '?')}, {p.get('time', '?')}")
    if len(bare) == len(files) > 1:
        notes.append(f"each a {NO_PROVENANCE}")
    elif bare:
        who = "" if len(files) == 1 else ", ".join(f"`{f}`" for f in bare) + ": "
        notes.append(f"{who}{NO_PROVENANCE}")
    text = f"Generated from {cited} by `benchmarks/report.py`; " + "; ".join(notes) + "."
    keep = NO_PROVENANCE.replace(" ", "\0")  # the phrase stays on one line, for grep
    text = textwrap.fill(text.replace(NO_PROVENANCE, keep), 96, break_long_words=False,
                         break_on_hyphens=False)
    return text.replace("\0", " ")


def body(raw: Any) -> Any:
    """A raw file's results: a file written by ``provenance.raw_file`` is
    ``{"provenance": ..., **extra, "results": ...}`` (extra keys merged into a dict of results);
    an older file is its results."""
    if isinstance(raw, dict) and "provenance" in raw and "results" in raw:
        extra = {k: v for k, v in raw.items() if k not in ("provenance", "results")}
        res = raw["results"]
        return {**extra, **res} if isinstance(res, dict) else res
    return raw


def render_block(entry: Entry, raws: list[Any], indent: str = "") -> list[str]:
    """The lines between an entry's markers: the table, its footnote, blank lines around."""
    assert entry.render is not None
    text = (entry.render([body(r) for r in raws]).rstrip("\n") + "\n\n"
            + _provenance_note(entry.files, raws))
    lines = [""] + [indent + ln if ln else "" for ln in text.split("\n")] + [""]
    return lines


class _Loader:
    """Reads each raw file once; records the missing and the unreadable."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict[str, Any] = {}
        self.problems: dict[str, str] = {}

    def load(self, entry: Entry) -> list[Any] | None:
        """The entry's files as written (with their provenance header, if any)."""
        out = []
        for f in entry.files:
            if f not in self.cache and f not in self.problems:
                p = self.root / BENCH / f
                if not p.is_file():
                    self.problems[f] = f"{BENCH}/{f}: raw file missing (read by report:{entry.name})"
                else:
                    try:
                        self.cache[f] = json.loads(p.read_text(encoding="utf-8"))
                    except (OSError, ValueError) as e:
                        self.problems[f] = f"{BENCH}/{f}: not readable JSON ({e})"
            if f in self.problems:
                return None
            out.append(self.cache[f])
        return out


def _code_lines(lines: list[str]) -> set[int]:
    """Indices of lines in fenced or indented code blocks."""
    out: set[int] = set()
    fence = False
    prev_blank_or_code = True
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            out.add(i)
            fence = not fence
            prev_blank_or_code = False
            continue
        if fence:
            out.add(i)
            continue
        if line.startswith("    ") and line.strip() and prev_blank_or_code:
            out.add(i)
            continue
        prev_blank_or_code = not line.strip()
    return out


def _strip_code_spans(text: str) -> str:
    """``text`` with inline code blanked (kept line for line): quoted commands and output are
    not claims."""
    return _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _process(path: Path, root: Path, reg: dict[str, Entry], loader: _Loader,
             problems: list[str]) -> str:
    """Check one Markdown file; return its text with every known block re-rendered."""
    rel = path.relative_to(root).as_posix()
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    code = _code_lines(lines)  # a marker shown in a code block is an example
    out: list[str] = []
    in_block: set[int] = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        end_m = None if i in code else _END.match(line)
        if end_m:
            problems.append(f"{rel}:{i + 1}: <!-- /report:{end_m['name']} --> without its start")
        m = None if i in code else _START.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        name, indent = m["name"], m["indent"]
        j = i + 1
        while j < len(lines) and not _END.match(lines[j]) and not _START.match(lines[j]):
            j += 1
        end = _END.match(lines[j]) if j < len(lines) else None
        if end is None or end["name"] != name:
            problems.append(f"{rel}:{i + 1}: report:{name} has no <!-- /report:{name} --> "
                            "before the next marker or the end of the file")
            out.append(line)
            i += 1
            continue
        in_block.update(range(i, j + 1))
        old = lines[i + 1:j]
        new = old
        entry = reg.get(name)
        if entry is None or entry.render is None:
            problems.append(f"{rel}:{i + 1}: report:{name}: no table of that name in the registry "
                            "(benchmarks/report.py)")
        else:
            raws = loader.load(entry)
            if raws is not None:
                new = render_block(entry, raws, indent)
                if new != old:
                    problems.append(f"{rel}:{i + 1}: report:{name} differs from its raw "
                                    f"files ({', '.join(entry.files)}): edited by hand? "
                                    "`python benchmarks/report.py` rewrites it")
        out.extend([line, *new, lines[j]])
        i = j + 1
    _check_citations(rel, lines, in_block, root, reg, loader, problems)
    return "\n".join(out)


def _check_citations(rel: str, lines: list[str], in_block: set[int], root: Path,
                     reg: dict[str, Entry], loader: _Loader, problems: list[str]) -> None:
    code = _code_lines(lines)
    prose = _strip_code_spans("\n".join(lines)).split("\n")
    for n, line in enumerate(lines):
        if n in code:
            continue
        cited = _CITE.findall(line)
        for c in cited:
            if "*" in c:
                if not glob.glob(str(root / c)):
                    problems.append(f"{rel}:{n + 1}: {c}: no raw file matches")
            elif not (root / c).is_file():
                problems.append(f"{rel}:{n + 1}: {c}: cited raw file missing")
        words = [w.lower() for w in _WORD.findall(prose[n])]
        marks = _VERDICT.findall(prose[n])  # one in inline code is an example
        if marks:
            for name in marks:
                _check_verdict(rel, n, name, words, reg, loader, problems)
        elif words and cited and n not in in_block:
            problems.append(f"{rel}:{n + 1}: verdict word {words[0]!r} beside {cited[0]} without "
                            "a <!-- verdict:NAME --> marker saying which comparison it states")


def _check_verdict(rel: str, n: int, name: str, words: list[str], reg: dict[str, Entry],
                   loader: _Loader, problems: list[str]) -> None:
    entry = reg.get(name)
    if entry is None or entry.verdict is None:
        problems.append(f"{rel}:{n + 1}: verdict:{name}: no verdict of that name in the "
                        "registry (benchmarks/report.py)")
        return
    if not words:
        problems.append(f"{rel}:{n + 1}: verdict:{name}: no verdict word on its line")
        return
    raws = loader.load(entry)
    if raws is None:
        return
    got = entry.verdict([body(r) for r in raws])
    wrong = [w for w in words if w not in VERDICT_WORDS[got]]
    if wrong:
        problems.append(f"{rel}:{n + 1}: verdict:{name}: the line says {wrong[0]!r}, the spread "
                        f"rule on {', '.join(entry.files)} gives {got!r}")


def render_all(root: Path = ROOT, *, write: bool = True,
               reg: dict[str, Entry] | None = None) -> list[str]:
    """Re-render every marked block under ``root`` (written back when ``write``) and return
    the problems found, one line each."""
    reg = registry() if reg is None else reg
    loader = _Loader(root)
    problems: list[str] = []
    for path in markdown_files(root):
        before = len(problems)
        new = _process(path, root, reg, loader, problems)
        if write and new != path.read_text(encoding="utf-8"):
            path.write_text(new, encoding="utf-8")
            # what was rewritten is no longer a problem; the rest still is
            problems[before:] = [p for p in problems[before:] if " differs from its raw " not in p]
    problems[:0] = sorted(loader.problems.values())
    return problems


def check(root: Path = ROOT, reg: dict[str, Entry] | None = None) -> list[str]:
    """The problems ``--check`` reports, writing nothing."""
    return render_all(root, write=False, reg=reg)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="rewrite nothing; exit 1 with one line per problem")
    ap.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    problems = render_all(args.root, write=not args.check)
    for p in problems:
        print(p)
    if args.check:
        n = len(registry())
        state = f"{len(problems)} problem(s)" if problems else "ok"
        print(f"report --check: {state} ({n} entries, {time.perf_counter() - t0:.2f} s)",
              file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
