"""Layout: a :class:`~reuse.viz.model.Snapshot` turned into plain rendered data (no drawing).

:func:`render_data` decides everything a picture needs - node boxes with positions, colours,
labels and reuse counts, edges with end points, and one box per running DAG (and, if asked, per
submitted dataflow) - so the SVG (:mod:`reuse.viz.svg`) and the PNG (:mod:`reuse.viz.static`)
only draw, and the tests check the picture's content on plain data.

Layout is deterministic: inside a DAG, a task's column is its topological generation (networkx
``topological_generations``, as ``multipartite_layout`` would place it) and its row is set by the
mean row of its parents, ties broken by id; DAG boxes are stacked top to bottom in id order
(running DAGs first, then the submitted dataflows if asked). Units are pixels, y pointing down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import networkx as nx

from reuse.core.dataflow import Dataflow
from reuse.viz.model import TASK_STATES, Snapshot

__all__ = ["SceneNode", "SceneEdge", "SceneGroup", "SceneData", "render_data", "STATE_COLOURS",
           "NODE_W", "NODE_H"]

STATE_COLOURS: Mapping[str, str] = {
    "new": "#93d393", "running": "#cfe0f3", "reused": "#f6b26b", "stopped": "#e8a0a0",
    "paused": "#f3e58c", "submitted": "#ffffff",
}
STATE_LABELS: Mapping[str, str] = {
    "new": "new (started this step)", "running": "running (1 DAG)",
    "reused": "reused (count = DAGs served)", "stopped": "stopped this step",
    "paused": "paused this step",
}
NODE_W, NODE_H = 138, 38
COL, ROW = 162, 50
PAD, HEADER, GAP = 12, 24, 16
SUB_W, SUB_COL = 112, 130  # submitted dataflows are drawn smaller: they are the reference
LABEL_CHARS = 19


@dataclass(frozen=True)
class SceneNode:
    """A task box. ``kind`` is ``task`` (a running or just-stopped task) or ``submitted`` (a task
    of a submitted dataflow; ``maps_to`` names the running task computing it)."""

    id: str
    label: str
    sublabel: str
    x: float
    y: float
    w: float
    h: float
    state: str
    colour: str
    reuse_count: int
    group: str
    kind: str = "task"
    reused_now: bool = False
    maps_to: str = ""
    tooltip: str = ""
    residual: bool = False  # a residual task: drawn with a dashed outline


@dataclass(frozen=True)
class SceneEdge:
    """A stream from the right middle of ``source`` to the left middle of ``target``; ``kind``
    is ``stream``, ``new`` (started this step) or ``stopped``."""

    source: str
    target: str
    x1: float
    y1: float
    x2: float
    y2: float
    kind: str = "stream"


@dataclass(frozen=True)
class SceneGroup:
    """A box around one DAG; ``kind`` is ``running``, ``removed`` (gone at this step) or
    ``submitted``."""

    id: str
    label: str
    x: float
    y: float
    w: float
    h: float
    kind: str = "running"


@dataclass(frozen=True)
class SceneData:
    """Everything needed to draw one step; ``legend`` is ``(state, colour, label)`` triples."""

    title: str
    subtitle: str
    width: float
    height: float
    nodes: tuple[SceneNode, ...]
    edges: tuple[SceneEdge, ...]
    groups: tuple[SceneGroup, ...]
    legend: tuple[tuple[str, str, str], ...]

    def node(self, node_id: str) -> SceneNode:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def task_nodes(self) -> list[SceneNode]:
        """The running (and just-stopped) task nodes, one per task of the snapshot."""
        return [n for n in self.nodes if n.kind == "task"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _short(text: str, n: int = LABEL_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _place(ids: Sequence[str], parents: Mapping[str, Sequence[str]],
           ) -> dict[str, tuple[int, int]]:
    """Column (topological generation) and row of each task of one DAG."""
    g: nx.DiGraph = nx.DiGraph()
    g.add_nodes_from(sorted(ids))
    g.add_edges_from((p, t) for t in sorted(ids) for p in parents.get(t, ()) if p in g)
    pos: dict[str, tuple[int, int]] = {}
    for col, gen in enumerate(nx.topological_generations(g)):
        def key(t: str) -> tuple[float, str]:
            rows = [pos[p][1] for p in g.predecessors(t) if p in pos]
            return (sum(rows) / len(rows) if rows else -1.0, t)
        for row, t in enumerate(sorted(gen, key=key)):
            pos[t] = (col, row)
    return pos


def _box(gid: str, label: str, kind: str, x0: float, y0: float,
         pos: Mapping[str, tuple[int, int]], node_w: float = NODE_W, col_w: float = COL,
         ) -> tuple[SceneGroup, dict[str, tuple[float, float]]]:
    cols = max((c for c, _ in pos.values()), default=0) + 1
    rows = max((r for _, r in pos.values()), default=0) + 1
    w = 2 * PAD + (cols - 1) * col_w + node_w
    h = HEADER + (rows - 1) * ROW + NODE_H + PAD
    xy = {t: (x0 + PAD + c * col_w, y0 + HEADER + r * ROW) for t, (c, r) in pos.items()}
    return SceneGroup(gid, label, x0, y0, w, h, kind), xy


def _edge(src: SceneNode, dst: SceneNode, kind: str) -> SceneEdge:
    return SceneEdge(src.id, dst.id, src.x + src.w, src.y + src.h / 2, dst.x, dst.y + dst.h / 2,
                     kind)


def render_data(snapshot: Snapshot, flows: Mapping[str, Dataflow] | None = None, *,
                total_steps: int | None = None) -> SceneData:
    """Lay out one snapshot: running DAGs (and, given ``flows``, the submitted dataflows).

    Parameters
    ----------
    snapshot
        The step to draw.
    flows
        The dataflows by id; when given, each submitted dataflow is drawn too, below the
        running DAGs (which stay in view first), its tasks pointing at the running tasks that
        compute them.
    total_steps
        For the title (``step k/n``).
    """
    nodes, edges, groups = _running(snapshot)
    if flows is not None and snapshot.submitted:
        top = max(g.y + g.h for g in groups) + 2 * GAP if groups else 0.0
        more = _submitted(snapshot, flows, top)
        nodes += more[0]
        edges += more[1]
        groups += more[2]
    width = max((g.x + g.w for g in groups), default=NODE_W)
    height = max((g.y + g.h for g in groups), default=NODE_H)
    step = f"step {snapshot.step}" + (f"/{total_steps}" if total_steps is not None else "")
    title = f"{step}: {snapshot.title}"
    legend = tuple((s, STATE_COLOURS[s], STATE_LABELS[s]) for s in TASK_STATES)
    return SceneData(title, snapshot.summary, width, height, tuple(nodes), tuple(edges),
                     tuple(groups), legend)


Parts = tuple[list[SceneNode], list[SceneEdge], list[SceneGroup]]


def _running(snapshot: Snapshot) -> Parts:
    """Running DAGs (with the tasks stopped at this step), stacked in id order from y = 0."""
    delta = snapshot.delta
    fresh = set(delta.connect) | set(delta.boundary) if delta is not None else set()
    members: dict[str, list[str]] = {d.id: [] for d in snapshot.running_dags}
    labels = {d.id: f"{d.id}: {', '.join(d.supports)}" for d in snapshot.running_dags}
    for t in snapshot.tasks.values():
        if t.running_dag not in members:
            members[t.running_dag] = []
            labels[t.running_dag] = f"{t.running_dag} (removed)"
        members[t.running_dag].append(t.id)
    y = 0.0
    groups: list[SceneGroup] = []
    placed: dict[str, SceneNode] = {}
    for gid in sorted(members, key=_dag_key):
        ids = members[gid]
        pos = _place(ids, {t: snapshot.tasks[t].parents for t in ids})
        kind = "running" if any(d.id == gid for d in snapshot.running_dags) else "removed"
        group, xy = _box(gid, labels[gid], kind, 0.0, y, pos)
        groups.append(group)
        for tid in sorted(ids, key=lambda t: (pos[t], t)):
            t = snapshot.tasks[tid]
            count = t.reuse_count
            sub = f"{tid} \u00d7{count}" if count > 1 else tid
            tip = (f"{tid}: {t.type}, {t.state}, serves {count}: {', '.join(t.users)}"
                   + (" (reused this step)" if t.reused_now else ""))
            label = t.type
            if t.residual_of:
                tip += f"; residual of {t.residual_of[0]} ({t.residual_of[1]})"
                label = f"{t.type} ⊂"  # the label says it too, where no tooltip shows
            if t.residual_users:
                tip += (f"; shared with the residual's dataflow{'s' * (len(t.residual_users) > 1)}"
                        f" {', '.join(t.residual_users)}")
            placed[tid] = SceneNode(tid, _short(label), _short(sub), *xy[tid], NODE_W, NODE_H,
                                    t.state, STATE_COLOURS[t.state], count, gid, "task",
                                    t.reused_now, tooltip=tip, residual=t.residual)
        y += group.h + GAP
    edges = []
    for t in snapshot.tasks.values():
        for p in t.parents:
            if p in placed:
                kind = ("stopped" if t.state in ("stopped", "paused")
                        else "new" if (p, t.id) in fresh else "stream")
                edges.append(_edge(placed[p], placed[t.id], kind))
    return list(placed.values()), edges, groups


def _submitted(snapshot: Snapshot, flows: Mapping[str, Dataflow], y: float) -> Parts:
    """The submitted dataflows (smaller boxes), stacked in submission order from ``y``."""
    nodes: list[SceneNode] = []
    edges: list[SceneEdge] = []
    groups: list[SceneGroup] = []
    for dag, rdag in snapshot.submitted.items():
        flow = flows[dag]
        pos = _place(flow.order, flow.parents)
        group, xy = _box(f"sub:{dag}", f"submitted {dag} \u2192 {rdag}", "submitted", 0.0, y,
                         pos, SUB_W, SUB_COL)
        groups.append(group)
        by_id: dict[str, SceneNode] = {}
        for tid in flow.order:
            task = flow.task(tid)
            rid = snapshot.mapping[dag][tid]
            by_id[tid] = SceneNode(
                f"{dag}/{tid}", _short(task.type, 15), _short(tid, 15), *xy[tid], SUB_W, NODE_H,
                "submitted", STATE_COLOURS["submitted"], 0, group.id, "submitted",
                maps_to=rid, tooltip=f"{dag}/{tid}: {task.type} (runs as {rid})")
        nodes.extend(by_id.values())
        edges.extend(_edge(by_id[u], by_id[d], "stream") for u, d in flow.streams)
        y += group.h + GAP
    return nodes, edges, groups


def _dag_key(gid: str) -> tuple[int, str]:
    digits = gid.lstrip("R")
    return (int(digits), "") if digits.isdigit() else (1 << 30, gid)
