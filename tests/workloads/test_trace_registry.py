"""The one trace registry: populate rule, subsets, and the same trace from every caller."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.cli import main
from reuse.core.errors import ReuseError
from reuse.core.paths import data_dir
from reuse.core.traces import Op, load_trace
from reuse.figures.traces import planner_run
from reuse.testing import missing
from reuse.viz.widget import Visualizer
from reuse.workloads.registry import load_workload
from reuse.workloads.trace_registry import build_trace, populate_for, select_subset

HAVE_RIOT = (data_dir() / "riotbench").is_dir()


def test_populate_is_the_papers_fraction() -> None:
    # 15 of 21 and 20 of 35 exactly; other sizes the same fraction, rounded half up
    assert populate_for("riot", 21) == 15 and populate_for("opmw", 35) == 20
    assert populate_for("riot", 7) == 5      # 7 * 15/21 = 5.0
    assert populate_for("opmw", 7) == 4      # 7 * 20/35 = 4.0
    assert populate_for("opmw", 14) == 8     # 8.0
    assert populate_for("riot", 3) == 2      # 2.14
    assert populate_for("figure1", 4) == 2 and populate_for(None, 3) == 2
    assert populate_for("riot", 1) == 1      # 0.71 rounds to 1


@given(st.sets(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=12),
       st.integers(1, 15), st.integers(0, 5))
def test_subset_is_a_sorted_sample_independent_of_order(ids: set[str], n: int, seed: int) -> None:
    a = select_subset(sorted(ids), n, seed)
    b = select_subset(sorted(ids, reverse=True), n, seed)
    assert a == b == sorted(a) and set(a) <= ids and len(a) == min(n, len(ids))


@given(st.integers(2, 12), st.integers(0, 30), st.integers(0, 100))
def test_walk_shape(n: int, walk: int, seed: int) -> None:
    from reuse.core.dataflow import parse_dataflow
    flows = [parse_dataflow({"id": f"d{i}", "tasks": [{"id": "t", "type": "T", "config": i}],
                             "streams": []}) for i in range(n)]
    t = build_trace(None, "rw", flows, seed=seed, walk=walk)
    populate = t.spec.populate
    assert populate == populate_for(None, n)
    assert [o.op for o in t.ops[:populate]] == ["submit"] * populate
    present = populate
    for o in t.ops[populate:populate + walk]:
        present += 1 if o.op == "submit" else -1
    assert [o.op for o in t.ops[populate + walk:]] == ["remove"] * present


def test_bad_names_are_one_line_errors() -> None:
    with pytest.raises(ReuseError, match="unknown trace 'rw3'"):
        build_trace("figure1", "rw3")
    with pytest.raises(ReuseError, match="unknown workload 'nope'"):
        build_trace("nope", "seq")
    with pytest.raises(ReuseError, match="cannot populate 9 of 4"):
        build_trace("figure1", "rw", populate=9)


def _cli(tmp_path: Path, workload: str, name: str, seed: int | None,
         subset: int | None) -> tuple[list[Op], dict[str, object]]:
    out = tmp_path / f"{workload}-{name}-{seed}-{subset}.json"
    argv = ["trace", "--workload", workload, "--kind", name, "--out", str(out)]
    argv += ["--seed", str(seed)] if seed is not None else []
    argv += ["--subset", str(subset)] if subset is not None else []
    assert main(argv) == 0
    return load_trace(out), json.loads(out.read_text())["meta"]


CASES = [("figure1", "seq", 3, None), ("figure1", "rw", 2, None), ("figure1", "rw", 4, 3)]
if HAVE_RIOT:
    CASES += [("riot", "rw", 1, None), ("riot", "rw", 7, 8), ("riot", "seq", 2, 6),
              ("opmw", "rw", 5, 10)]


@pytest.mark.parametrize("workload, name, seed, subset", CASES)
def test_cli_notebooks_and_visualizer_build_the_same_trace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], workload: str, name: str, seed: int,
        subset: int | None) -> None:
    cli_ops, meta = _cli(tmp_path, workload, name, seed, subset)
    flows = load_workload(workload)
    # the planner notebooks (workload_*.ipynb, seeds.ipynb) replay through planner_run
    run = planner_run(workload, name, flows, seed=seed, subset=subset)
    notebook_ops = [Op(r.op, r.dag) for r in run.records]
    # the live notebook builds the subset's trace from the whole workload
    live = build_trace(workload, name, flows, seed=seed, subset=subset)
    viz = Visualizer(workload, name, seed, subset)
    assert viz.timeline is not None, viz.status.value
    assert cli_ops == notebook_ops == list(live.ops) == list(viz.timeline.ops)
    assert set(viz.flows) == set(live.flows) and meta["n_dags"] == len(live.flows)
    if subset is not None:
        assert len(live.flows) == subset and {o.dag for o in cli_ops} <= set(live.flows)


@pytest.mark.skipif(not HAVE_RIOT, reason=missing("data", "data/ not set up (run scripts/setup.sh)"))
def test_named_walks_use_their_seeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rw1, meta = _cli(tmp_path, "riot", "rw1", None, None)
    assert meta["seed"] == 1 and meta["populate"] == 15 and meta["walk"] == 100
    assert rw1 == _cli(tmp_path, "riot", "rw", 1, None)[0]
    assert rw1 != _cli(tmp_path, "riot", "rw2", None, None)[0]
    assert rw1 == [Op(r.op, r.dag) for r in planner_run("riot", "rw1", load_workload("riot")).records]
