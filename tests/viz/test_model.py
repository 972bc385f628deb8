"""The visualizer's kernel-free part: timeline snapshots, layout, SVG and panel text."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reuse.core.dataflow import Dataflow
from reuse.core.traces import Op, load_trace
from reuse.testing import missing
from reuse.viz import Timeline, delta_html, details_html, render_data, to_svg
from reuse.viz.sources import Paths, load_scenario

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def timeline(figure1: dict[str, Dataflow]) -> Timeline:
    return Timeline(figure1, load_trace(FIXTURES / "figure1-trace.json"))


def test_step0_is_empty(timeline: Timeline) -> None:
    assert len(timeline) == 6 and timeline.steps == 5
    snap = timeline[0]
    assert snap.tasks == {} and snap.delta is None and snap.submitted == {}
    scene = render_data(snap)
    assert scene.nodes == () and scene.title == "step 0: start (nothing submitted)"


def test_reuse_after_step3(timeline: Timeline) -> None:
    snap = timeline[3]
    slr = snap.tasks["B.slr"]
    assert slr.reuse_count == 2 and slr.users == ("B", "C")
    assert slr.state == "reused" and slr.reused_now  # C's submission reused it
    assert slr.type == "SlidingLinearRegression" and slr.config == {"predict": 10, "train": 10}
    assert snap.tasks["A.src"].reuse_count == 3
    assert {t for t, v in snap.tasks.items() if v.state == "new"} == {"C.plot", "C.pub"}
    assert snap.tasks["A.avg"].state == "running"
    assert snap.submitted == {"A": "R1", "B": "R1", "C": "R1"}
    assert snap.mapping["C"]["reg"] == "B.slr"


def test_removed_task_marked_stopped_then_gone(timeline: Timeline) -> None:
    snap = timeline[5]
    assert snap.op == Op("remove", "B") and snap.stopped == ("B.out",)
    out = snap.tasks["B.out"]
    assert out.state == "stopped" and out.users == ("B",) and out.running_dag == "R1"
    assert snap.tasks["B.slr"].state == "running" and snap.tasks["B.slr"].users == ("C",)
    assert "B.out" not in timeline[4].stopped
    scene = render_data(snap)
    assert scene.node("B.out").state == "stopped"
    assert {(e.source, e.target, e.kind) for e in scene.edges if e.kind == "stopped"} == {
        ("B.slr", "B.out", "stopped")}


def test_paused_when_runtime_says_so(figure1: dict[str, Dataflow]) -> None:
    tl = Timeline(figure1, load_trace(FIXTURES / "figure1-trace.json"), paused={5: {"B.out"}})
    assert tl[5].tasks["B.out"].state == "paused"
    assert render_data(tl[5]).node("B.out").colour != render_data(tl[4]).node("B.out").colour


def test_removing_a_whole_running_dag_keeps_its_box(figure1: dict[str, Dataflow]) -> None:
    tl = Timeline(figure1, [Op("submit", "A"), Op("submit", "D"), Op("remove", "D")])
    snap = tl[3]
    assert {t.id for t in snap.tasks.values() if t.state == "stopped"} == {
        "D.src", "D.parse", "D.kalman", "D.avg", "D.out"}
    groups = {g.id: g.kind for g in render_data(snap).groups}
    assert groups == {"R1": "running", "R2": "removed"}


def test_layout_deterministic_and_non_overlapping(figure1: dict[str, Dataflow],
                                                  timeline: Timeline) -> None:
    again = Timeline(dict(reversed(list(figure1.items()))),
                     load_trace(FIXTURES / "figure1-trace.json"))
    for step in range(len(timeline)):
        a = render_data(timeline[step], figure1, total_steps=5)
        assert a == render_data(again[step], figure1, total_steps=5)
        boxes = [(n.x, n.y, n.x + n.w, n.y + n.h) for n in a.nodes]
        for i, p in enumerate(boxes):
            for q in boxes[i + 1:]:
                assert p[2] <= q[0] or q[2] <= p[0] or p[3] <= q[1] or q[3] <= p[1]
        for n in a.nodes:
            g = next(g for g in a.groups if g.id == n.group)
            assert g.x <= n.x and n.x + n.w <= g.x + g.w and g.y <= n.y <= g.y + g.h
    scene = render_data(timeline[3])
    # columns follow topological generations: source, parse, kalman, {avg, slr}, ...
    xs = {n.id: n.x for n in scene.nodes}
    assert xs["A.src"] < xs["A.parse"] < xs["A.kalman"] < xs["A.avg"] == xs["B.slr"]
    assert xs["B.slr"] < xs["C.plot"] < xs["C.pub"]


def test_edges_of_a_step(timeline: Timeline) -> None:
    kinds = {(e.source, e.target): e.kind for e in render_data(timeline[3]).edges}
    assert kinds[("B.slr", "C.plot")] == "new"  # boundary stream S+_x
    assert kinds[("C.plot", "C.pub")] == "new"  # inside T_x
    assert kinds[("A.src", "A.parse")] == "stream"


def test_svg_one_element_per_task(timeline: Timeline, figure1: dict[str, Dataflow]) -> None:
    for step in (3, 5):
        snap = timeline[step]
        svg = to_svg(render_data(snap, figure1), selected="B.slr")
        root = ET.fromstring(svg)  # well-formed XML
        tasks = [g for g in root.iter(f"{SVG}g") if "data-task" in g.attrib]
        assert sorted(g.attrib["data-task"] for g in tasks) == sorted(snap.tasks)
        by_id = {g.attrib["data-task"]: g for g in tasks}
        assert "selected" in by_id["B.slr"].attrib["class"]
        subs = [g for g in root.iter(f"{SVG}g") if "data-maps-to" in g.attrib]
        assert len(subs) == sum(len(figure1[d]) for d in snap.submitted)
    svg3 = ET.fromstring(to_svg(render_data(timeline[3])))
    slr = next(g for g in svg3.iter(f"{SVG}g") if g.attrib.get("data-task") == "B.slr")
    assert slr.attrib["data-count"] == "2" and "state-reused" in slr.attrib["class"]
    assert any(t.text == "2" for t in slr.iter(f"{SVG}text"))  # the reuse-count badge


def test_panels(timeline: Timeline) -> None:
    html = details_html(timeline[3], "B.slr")
    assert "SlidingLinearRegression" in html and "&quot;predict&quot;: 10" in html
    assert "<code>B</code>, <code>C</code>" in html and "C/reg" in html
    assert "not running at step 5" not in details_html(timeline[5], "B.out")
    assert "not running at step 1" in details_html(timeline[1], "B.slr")
    assert "Click a task" in details_html(timeline[1], "")
    delta = delta_html(timeline[5], 5)
    assert "Step 5 of 5: remove B" in delta and "<code>B.out</code>" in delta
    assert "<code>B.slr</code>" in delta_html(timeline[3])  # listed as reused


def test_sources_traces(figure1: dict[str, Dataflow]) -> None:
    flows, ops = load_scenario("figure1", "file")
    assert set(flows) == {"A", "B", "C", "D"}
    assert ops == load_trace(FIXTURES / "figure1-trace.json")
    _, seq = load_scenario("figure1", "seq", seed=3, flows=figure1)
    assert seq == load_scenario("figure1", "seq", seed=3)[1] and len(seq) == 8
    _, rw = load_scenario("figure1", "rw", seed=1, flows=figure1)
    assert Timeline(figure1, rw, check=True).steps == len(rw)
    sub, ops = load_scenario("figure1", "seq", subset=2, flows=figure1)
    assert len(sub) == 2 and {o.dag for o in ops} == set(sub)
    with pytest.raises(ValueError):
        load_scenario("figure1", "zigzag")


def test_riot_workload_replays() -> None:
    paths = Paths.default()
    if not paths.riot.is_dir():
        pytest.skip(missing("data", f"{paths.riot} missing (scripts/setup.sh copies it)"))
    flows, ops = load_scenario("riot", "rw", seed=1, paths=paths)
    tl = Timeline(flows, ops)
    assert len(flows) == 21 and tl.steps > 100
    assert max(t.reuse_count for s in tl for t in s.tasks.values()) >= 3
    for step in (1, tl.steps // 2, tl.steps):
        scene = render_data(tl[step], total_steps=tl.steps)
        assert len(scene.task_nodes()) == len(tl[step].tasks)


def test_details_show_the_cost_share(timeline: Timeline) -> None:
    """A clicked task shows each user's share of its cost: the Shapley share of reuse.analysis.billing,
    the same numbers ``reuse bill`` adds up."""
    from reuse.analysis.billing import TaskCosts, bills, planner_steps

    def share(html: str) -> float:
        node = ET.fromstring(html.replace("&ndash;", "-"))
        return float(next(e for e in node.iter() if e.get("class") == "cost-share").text or "")

    snap = timeline[3]  # A, B, C present; A.src serves all three
    assert share(details_html(snap, "A.src")) == pytest.approx(1 / 3, abs=1e-4)
    assert "to each of" in details_html(snap, "A.src")
    assert share(details_html(snap, "B.slr")) == pytest.approx(1 / 2)
    assert "paid by <code>A</code>" in details_html(snap, "A.avg")
    priced = TaskCosts({"SYS": 6.0}, default=1.0, unit="CPU-s")
    assert share(details_html(snap, "A.src", priced)) == pytest.approx(2.0)
    assert "6 CPU-s" in details_html(snap, "A.src", priced)
    # the step's shares of every running task add up to what reuse bill charges each dataflow
    steps, _ = planner_steps(timeline.flows, timeline.ops, priced)
    for dag in snap.submitted:
        mine = sum(share(details_html(snap, t, priced)) for t, v in snap.tasks.items()
                   if dag in v.users)
        billed = next(b for b in bills(steps) if b.dag == dag).per_step[3]
        assert mine == pytest.approx(billed, abs=1e-3)
    # a task stopped at this step is not billed for it
    assert "none: stopped at this step" in details_html(timeline[5], "B.out")
    assert "cost-share" not in details_html(timeline[5], "B.out")


# --- containment (issue 25): residual tasks are marked ------------------------------------------

def filter_flow(dag: str, ranges: dict[str, list[float]]) -> Dataflow:
    """``SYS -> SenMLParse -> RangeFilter -> MQTTPublish`` with the real SYS configs."""
    from reuse.core.dataflow import Task
    from reuse.core.paths import riotbench_dir
    from reuse.workloads.riotbench import source_configs

    if not riotbench_dir().is_dir():
        pytest.skip(missing("data", "data/riotbench is not set up"))
    cfg = source_configs("SYS", riotbench_dir())
    tasks = (Task("src", "SYS", cfg["source"]), Task("parse", "SenMLParse", cfg["SenMLParse"]),
             Task("range", "RangeFilter", {"valid_range": ranges}),
             Task("out", "MQTTPublish", {"topic": dag}))
    return Dataflow(dag, tasks, (("src", "parse"), ("parse", "range"), ("range", "out")))


@pytest.fixture
def contained() -> tuple[dict[str, Dataflow], list[Op]]:
    """``W`` keeps the real SYS temperature range, ``N`` a band inside it."""
    flows = {"W": filter_flow("W", {"temperature": [-12.5, 43.1]}),
             "N": filter_flow("N", {"temperature": [0, 30]})}
    return flows, [Op("submit", "W"), Op("submit", "N"), Op("remove", "W")]


def test_a_residual_and_the_wide_task_it_reads_are_marked(contained) -> None:
    from reuse.tasks.matching import SEMANTIC

    tl = Timeline(*contained, match=SEMANTIC, check=True)
    for step in (2,):  # with the wide task's owner (after it left: below)
        snap = tl[step]
        residual, wide = snap.tasks["N.range"], snap.tasks["W.range"]
        assert residual.residual and residual.residual_of == ("W.range", "range")
        assert residual.parents == ("W.range",) and residual.users == ("N",)
        assert not wide.residual and wide.residual_users == ("N",) and "N" in wide.users
        assert not snap.tasks["W.parse"].residual_users
        scene = render_data(snap)
        node = scene.node("N.range")
        assert node.residual and "residual of W.range (range)" in node.tooltip
        assert "\u2282" in node.label
        wide_node = scene.node("W.range")
        assert not wide_node.residual
        assert "shared with the residual's dataflow N" in wide_node.tooltip
        svg = ET.fromstring(to_svg(scene))
        groups = {g.get("data-task"): g for g in svg.iter(f"{SVG}g") if g.get("data-task")}
        assert "residual" in groups["N.range"].get("class").split()
        assert groups["N.range"].find(f"{SVG}rect").get("stroke-dasharray")
        assert "residual" not in groups["W.range"].get("class").split()
        assert groups["W.range"].find(f"{SVG}rect").get("stroke-dasharray") is None
        details = details_html(snap, "W.range")
        assert "read by residuals of" in details and "residual of" not in details
    # the owner left: N is re-planned as written (issue 36), its own filter reads the parser,
    # no residual is drawn and the wide filter is gone
    after = tl[3]
    assert after.tasks["W.range"].state == "stopped"  # drawn as it leaves
    own = next(t for t in after.tasks.values()
               if t.id.startswith("N.range") and t.state != "stopped")
    assert not own.residual and own.parents == ("W.parse",) and own.users == ("N",)
    assert not render_data(after).node(own.id).residual


def test_without_containment_nothing_is_a_residual(contained) -> None:
    tl = Timeline(*contained)
    snap = tl[2]
    assert not any(t.residual or t.residual_users for t in snap.tasks.values())
    assert not any(n.residual for n in render_data(snap).nodes)
    assert snap.tasks["N.range"].parents == ("W.parse",)
