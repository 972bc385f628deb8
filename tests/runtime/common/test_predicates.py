"""Shared predicate evaluation (issue 25, item 4): the grouping decision, and fused == unfused.

The shard runs filter tasks of one type that read the same parents as one pass
(:mod:`reuse.runtime.common.predicates`). Checked on the real RIoTBench SYS and TAXI
streams with the real task code: over random ranges, modes, Bloom training samples, windows and
record flags, ``run_shard`` gives the same sink lines, states and counts with the groups as
without (every member feeds a sink, and one feeds a stateful task); on a many-tenant deployment
the fused shard's records equal the reference execution's. Each on both paths of the shard
(issue 35): columnar, a group runs through its kernels' ``fuse`` (one bool mask per member over
the batch) and must give what the per-event shard gives unfused. Then the decision on edge
cases, and each type's predicates against its own ``process`` on odd values.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from reuse.core.errors import ReuseError
from reuse.core.paths import riotbench_dir
from reuse.runtime.accounting import reference_records
from reuse.runtime.common.predicates import PredicateGroup, predicate_groups, split_cpu
from reuse.runtime.engines.shared.shard import run_shard
from reuse.tasks.filters import BloomFilterCheck, RangeFilter
from reuse.testing import deployed_at_zero, missing
from reuse.workloads.riotbench import source_configs
from reuse.workloads.tenants import observed_values

DATA = riotbench_dir(None)
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=missing("data", "no data/riotbench"))
OPTS = {"data_dir": str(DATA), "pi_iterations": 10, "record": "digest", "limit": None}
SEQS = 40


def _spec(tid: str, type_: str, config: Any, parents: list[str], kind: str = "task",
          start: int = 0, end: int | None = None, record: bool = False) -> dict[str, Any]:
    return {"id": tid, "type": type_, "config": config, "parents": parents, "kind": kind,
            "start": start, "end": end, "record": record, "replica_of": None,
            "stream": type_ if kind == "source" else None}


def _run(tasks: list[dict[str, Any]], bounds: list[int], fuse: bool, columnar: bool = False,
         ) -> tuple[dict[str, list[str]], dict[str, Any], list[dict[str, int]], list[Any]]:
    """Sink lines per task (batches concatenated), final states, counts and groups per batch."""
    opts = {**OPTS, "fuse_predicates": fuse, "columnar": columnar}
    states: dict[str, Any] = {}
    lines: dict[str, list[str]] = {}
    counts, groups = [], []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        res = run_shard(tasks, lo, hi, states, opts, t0=0, rate=10.0, now_ms=lambda: 0.0)
        for tid, recs in res["sinks"].items():
            lines.setdefault(tid, []).extend(recs)
        states = json.loads(json.dumps(res["states"]))
        counts.append(res["counts"])
        groups.append(res["groups"])
        assert set(res["cpu"]) == set(res["counts"])
    return lines, states, counts, groups


def _stream(src: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Source -> SenMLParse, and -> Join of the parsed observations; the source's configs."""
    cfg = source_configs(src, DATA, keying="field")
    return [_spec("src", src, "source", [], kind="source"),
            _spec("parse", "SenMLParse", cfg["SenMLParse"], ["src"]),
            _spec("join", "Join", cfg["Join"], ["parse"])], cfg


def _window(data: st.DataObject) -> tuple[int, int | None]:
    start = data.draw(st.integers(0, SEQS - 1))
    end = data.draw(st.one_of(st.none(), st.integers(start, SEQS + 5)))
    return start, end


def _ranges(data: st.DataObject, src: str, fields: list[str]) -> dict[str, list[float]]:
    """Bounds from the field's observed values (a value the stream holds, so the ends are hit),
    on a random subset of the fields; sometimes an empty range."""
    seen = observed_values(src, DATA, fields)
    out = {}
    for f in data.draw(st.lists(st.sampled_from(fields), min_size=1, unique=True)):
        a, b = sorted(data.draw(st.sampled_from(seen[f])) for _ in range(2))
        out[f] = [b, a] if data.draw(st.booleans()) and a < b else [a, b]
    return out


def _members(data: st.DataObject, src: str, cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Random RangeFilters on the parsed and the joined stream, random Bloom filters on the
    parsed one, each feeding a sink; the first parsed RangeFilter feeds a stateful task."""
    fields = list(cfg["RangeFilter.drop"]["valid_range"])
    tasks = []
    for parent, least in (("parse", 2), ("join", 1)):
        for i in range(data.draw(st.integers(least, 5))):
            conf = {"valid_range": _ranges(data, src, fields),
                    "mode": data.draw(st.sampled_from(["drop", "null"]))}
            start, end = _window(data)
            tasks.append(_spec(f"r-{parent}-{i}", "RangeFilter", conf, [parent], start=start,
                               end=end, record=data.draw(st.booleans())))
    for i in range(data.draw(st.integers(0, 4))):
        stride = data.draw(st.sampled_from([1, 2, 4]))
        conf = {**cfg["BloomFilterCheck"], "train_stride": stride,
                "train_offset": data.draw(st.integers(0, stride - 1)),
                "expected_insertions": data.draw(st.sampled_from([50, 200_000]))}
        start, end = _window(data)
        tasks.append(_spec(f"b-{i}", "BloomFilterCheck", conf, ["parse"], start=start, end=end,
                           record=data.draw(st.booleans())))
    order = data.draw(st.permutations(tasks))
    sinks = [_spec(f"sink-{t['id']}", "Sink", "sink", [t["id"]], kind="sink") for t in tasks]
    bwa = _spec("bwa", "BlockWindowAverage", cfg["BlockWindowAverage"], ["r-parse-0"])
    return [*order, bwa, *sinks]


@needs_data
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=st.sampled_from(["SYS", "TAXI"]), data=st.data())
def test_fused_shard_equals_unfused_on_random_filters(src: str, data: st.DataObject) -> None:
    head, cfg = _stream(src)
    tasks = head + _members(data, src, cfg)
    cut = data.draw(st.integers(1, SEQS - 1))
    bounds = [0, cut, SEQS]
    fused = _run(tasks, bounds, True)
    plain = _run(tasks, bounds, False)
    columnar = _run(tasks, bounds, True, columnar=True)
    assert fused[:3] == plain[:3]
    assert columnar[:3] == plain[:3] and columnar[3] == fused[3]
    assert all(g == [] for g in plain[3])
    members = {m for g in predicate_groups(tasks) for m in g.members}
    assert {m for gs in fused[3] for g in gs for m in g} == members
    assert members >= {t["id"] for t in tasks if t["id"].startswith("r-parse-")}
    # filters drawn so that nothing passes compare nothing: such a case counts as not drawn
    # (asserting outputs failed on one in a randomized run, 2026-11-28; too many such cases
    # fail the test as unsatisfiable)
    assume(sum(map(len, fused[0].values())) > 0)


@needs_data
def test_disjoint_windows_and_an_idle_member() -> None:
    """Members whose windows do not meet, and one that has ended before the batch, still
    run as one group; each takes its own window, the ended one nothing (no counts, no CPU)."""
    head, cfg = _stream("TAXI")
    ranges = cfg["RangeFilter.drop"]["valid_range"]
    members = [_spec("a", "RangeFilter", {"valid_range": ranges}, ["parse"], end=10),
               _spec("b", "RangeFilter", {"valid_range": ranges, "mode": "null"}, ["parse"],
                     start=20, end=30, record=True),
               _spec("c", "RangeFilter", {"valid_range": {"fare_amount": [7, 9]}}, ["parse"],
                     start=32),
               _spec("d", "RangeFilter", {"valid_range": ranges}, ["parse"], end=1)]
    tasks = head + members + [_spec(f"s{m['id']}", "Sink", "sink", [m["id"]], kind="sink")
                              for m in members]
    fused, plain = _run(tasks, [5, 25, SEQS], True), _run(tasks, [5, 25, SEQS], False)
    columnar = _run(tasks, [5, 25, SEQS], True, columnar=True)
    assert fused[:3] == plain[:3] == columnar[:3]
    assert fused[3] == columnar[3] == [[["a", "b", "c", "d"]]] * 2
    assert "d" not in fused[2][0] and fused[2][0]["a"] > 0 and fused[2][1]["b"] > 0
    assert fused[0]["b"] and {json.loads(r)["q"] for r in fused[0]["sc"]} <= set(range(32, SEQS))


@needs_data
@pytest.mark.parametrize("columnar", [False, True], ids=["per-event", "columnar"])
def test_fused_tenant_shard_equals_the_reference_execution(columnar: bool) -> None:
    """Twenty tenants of the many-tenant workload, exact matching, on one shard: the fused
    shard runs Bloom and RangeFilter groups, and every sink's records are the reference
    execution's."""
    from reuse.core.dataflow import parse_dataflow
    from reuse.workloads.tenants import build_tenants

    dep, ledger = deployed_at_zero(
        (parse_dataflow(d) for d in build_tenants(DATA, tenants=20, seed=3)), 1, OPTS)
    tasks = ledger["tasks"]
    shard = list(dep.snapshot().shards[0])
    lines, _, _, groups = _run(shard, [0, 13, 30], True, columnar)
    assert {tasks[g[0]]["type"] for g in groups[0]} == {"BloomFilterCheck", "RangeFilter"}
    ref = reference_records(ledger, 30)
    assert set(lines) == set(ref)
    for tid, expected in ref.items():
        assert Counter((r["q"], r["d"]) for r in map(json.loads, lines[tid])) == expected, tid


def _t(tid: str, parents: list[str], type_: str = "RangeFilter", kind: str = "task",
       ) -> dict[str, Any]:
    return _spec(tid, type_, {}, parents, kind=kind)


def test_groups_need_a_fusable_stateless_type_and_the_same_parents() -> None:
    tasks = [_t("s", [], "SYS", "source"), _t("p", ["s"], "SenMLParse"),
             _t("a", ["p"]), _t("b", ["p"]), _t("k", ["p"], "KalmanFilter"),
             _t("q", ["p", "s"], "Join"), _t("c", ["q"]), _t("d", ["p", "q"]),
             _t("e", ["q", "p"]), _t("f", ["p"], "BloomFilterCheck"),
             _t("g", ["p"], "BloomFilterCheck"), _t("h", ["p"], "SenMLParse"),
             _t("o", ["a"], "Sink", "sink"), _t("x", ["p"])]
    assert predicate_groups(tasks) == [
        PredicateGroup("RangeFilter", ("p",), ("a", "b", "x")),
        PredicateGroup("BloomFilterCheck", ("p",), ("f", "g"))]
    assert predicate_groups(tasks[:3]) == []  # one member only
    assert predicate_groups([_t("a", ["p"]), _t("b", ["p"], kind="sink")]) == []


def test_a_group_is_checked_on_construction() -> None:
    with pytest.raises(ReuseError, match="two or more distinct members"):
        PredicateGroup("RangeFilter", ("p",), ("a",))
    with pytest.raises(ReuseError, match="two or more distinct members"):
        PredicateGroup("RangeFilter", ("p",), ("a", "a"))


def test_cpu_shares_sum_to_the_group() -> None:
    shares = split_cpu(0.3, [10, 0, 5])
    assert math.isclose(sum(shares), 0.3) and shares[1] == 0 and shares[0] == 2 * shares[2]


ODD = [0, 10, 3.5, "3.7", "abc", "", None, True, False, math.nan, math.inf, -math.inf, -1,
       [1], {"v": 2}, 10 ** 6]


@settings(max_examples=200, deadline=None)
@given(configs=st.lists(st.fixed_dictionaries({
    # "": a field named so, which an empty joined message must not be taken to hold
    "valid_range": st.dictionaries(st.sampled_from(["t", "h", "x", ""]), st.lists(
        st.one_of(st.floats(-20, 20), st.integers(-20, 20), st.just(math.nan)),
        min_size=2, max_size=2)),
    "mode": st.sampled_from(["drop", "null", "other"])}), min_size=1, max_size=6),
    events=st.lists(st.one_of(
        st.fixed_dictionaries({"obs": st.sampled_from(["t", "h", "y", ""]),
                               "value": st.one_of(st.sampled_from(ODD), st.floats())}),
        st.fixed_dictionaries({"value": st.sampled_from(ODD)}),
        st.fixed_dictionaries({"fields": st.dictionaries(
            st.sampled_from(["t", "h", "x", "y"]),
            st.one_of(st.sampled_from(ODD), st.floats(-30, 30)))})), max_size=20))
def test_range_predicates_are_each_members_own(configs: list[dict[str, Any]],
                                               events: list[dict[str, Any]]) -> None:
    """Selected exactly when the member's own ``process`` returns the very event; a ``drop``
    member returns nothing for the others."""
    members = [RangeFilter(c) for c in configs]
    pred = RangeFilter.fuse(members)
    sel = pred.select(events)
    for m, s, drops in zip(members, sel, pred.drops, strict=True):
        got = [m.process(ev) for ev in events]
        assert list(s) == [int(len(r) == 1 and r[0] is ev) for r, ev in zip(got, events,
                                                                            strict=True)]
        if drops:
            assert all(r == [] for r, k in zip(got, s, strict=True) if not k)


@needs_data
def test_bloom_predicates_are_each_members_own() -> None:
    cfg = source_configs("SYS", DATA, keying="field")["BloomFilterCheck"]
    configs = [{**cfg, "train_stride": s, "train_offset": o, "expected_insertions": n}
               for s, o, n in ((2, 0, 50), (2, 1, 50), (1, 0, 50), (2, 0, 50), (4, 3, 5000))]
    members = [BloomFilterCheck(c, data_dir=DATA) for c in configs]
    ids = sorted({ln.split('"sv":"')[1].split('"')[0]
                  for ln in (DATA / cfg["train_file"]).read_text().splitlines()
                  if '"sv":"' in ln})[:40]
    events = [{"sensor": s} for s in ids + ["nobody", "x"] + ids[:5]] + [{}]
    sel = BloomFilterCheck.fuse(members).select(events)
    for m, s in zip(members, sel, strict=True):
        assert list(s) == [int(m.process(ev) == [ev]) for ev in events]
    assert len(set(sel)) > 1 and any(0 < sum(s) < len(events) for s in sel)
    with pytest.raises(ReuseError, match="is not a BloomFilterCheck"):
        BloomFilterCheck.fuse([*members, RangeFilter({"valid_range": {}})])
