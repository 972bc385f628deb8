"""SVG text for a :class:`~reuse.viz.scene.SceneData` (for the widget; no drawing library).

Every running task is one ``<g class="task ..." data-task="<id>">`` element, and every task of a
submitted dataflow one ``<g class="subtask" data-maps-to="<running id>">``: the widget's
front-end finds the clicked element by those attributes and sends the running task id to the
kernel, and the tests count them.
"""

from __future__ import annotations

from html import escape

from reuse.viz.scene import SceneData, SceneNode

__all__ = ["to_svg"]

_EDGE_STYLE = {
    "stream": 'stroke="#555" stroke-width="1.3"',
    "new": 'stroke="#2e7d32" stroke-width="2.2"',
    "stopped": 'stroke="#b71c1c" stroke-width="1.5" stroke-dasharray="5,3"',
}
_MARKER = {"stream": "#555", "new": "#2e7d32", "stopped": "#b71c1c"}
_STYLE = """
.task, .subtask { cursor: pointer; }
.task:hover rect.body, .subtask:hover rect.body { stroke-width: 2.5; }
.task.selected rect.body { stroke: #1565c0; stroke-width: 3.5; }
.subtask.selected rect.body { stroke: #1565c0; stroke-width: 2.5; }
text { font-family: sans-serif; }
"""
LEGEND_H = 26
TITLE_H = 44


def _a(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _node(n: SceneNode, selected: str | None) -> str:
    if n.kind == "task":
        attrs = f'class="task state-{n.state}{" residual" if n.residual else ""}' \
                f'{" selected" if n.id == selected else ""}" ' \
                f'data-task="{escape(n.id)}" data-state="{n.state}" ' \
                f'data-count="{n.reuse_count}"'
        dash = (' stroke-dasharray="4,3"' if n.state in ("stopped", "paused")
                else ' stroke-dasharray="7,2,2,2"' if n.residual else "")
        stroke = "#e65100" if n.reused_now else "#333"
        width = 3 if n.reused_now else 1.2
    else:
        attrs = f'class="subtask{" selected" if n.maps_to == selected else ""}" ' \
                f'data-sub="{escape(n.id)}" data-maps-to="{escape(n.maps_to)}"'
        dash, stroke, width = ' stroke-dasharray="2,2"', "#777", 1
    parts = [f'<g {attrs} transform="translate({_a(n.x)},{_a(n.y)})">',
             f"<title>{escape(n.tooltip)}</title>",
             f'<rect class="body" width="{_a(n.w)}" height="{_a(n.h)}" rx="6" '
             f'fill="{n.colour}" stroke="{stroke}" stroke-width="{width}"{dash}/>',
             f'<text x="8" y="15" font-size="11" font-weight="bold">{escape(n.label)}</text>',
             f'<text x="8" y="30" font-size="10.5" fill="#333">{escape(n.sublabel)}</text>']
    if n.kind == "task" and n.reuse_count > 1:
        parts.append(f'<circle cx="{_a(n.w)}" cy="0" r="10" fill="#e65100"/>'
                     f'<text class="count" x="{_a(n.w)}" y="4" font-size="11" fill="#fff" '
                     f'text-anchor="middle" font-weight="bold">{n.reuse_count}</text>')
    parts.append("</g>")
    return "".join(parts)


def to_svg(scene: SceneData, selected: str | None = None) -> str:
    """The scene as a standalone ``<svg>`` element (title, legend, DAG boxes, edges, tasks).

    ``selected`` (a running task id) is outlined, with the submitted tasks mapping to it.
    """
    w = max(scene.width, 720.0) + 20
    h = scene.height + TITLE_H + LEGEND_H + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="reuse-scene" width="{_a(w)}" '
           f'height="{_a(h)}" viewBox="0 0 {_a(w)} {_a(h)}">', f"<style>{_STYLE}</style>",
           "<defs>"]
    for kind, colour in _MARKER.items():
        out.append(f'<marker id="arrow-{kind}" viewBox="0 0 10 10" refX="10" refY="5" '
                   f'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                   f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>')
    out.append("</defs>")
    out.append(f'<text class="title" x="10" y="18" font-size="15" font-weight="bold">'
               f"{escape(scene.title)}</text>")
    out.append(f'<text class="subtitle" x="10" y="36" font-size="12" fill="#444">'
               f"{escape(scene.subtitle)}</text>")
    x = 10.0
    for state, colour, label in scene.legend:
        out.append(f'<rect class="legend legend-{state}" x="{_a(x)}" y="{TITLE_H}" width="14" '
                   f'height="14" rx="3" '
                   f'fill="{colour}" stroke="#333"/>'
                   f'<text x="{_a(x + 19)}" y="{TITLE_H + 11}" font-size="11">{escape(label)}'
                   "</text>")
        x += 26 + 6.2 * len(label)
    out.append(f'<g class="scene" transform="translate(10,{TITLE_H + LEGEND_H})">')
    for g in scene.groups:
        fill = {"running": "#f7f9fc", "removed": "#fbeaea", "submitted": "#fafafa"}[g.kind]
        dash = ' stroke-dasharray="6,4"' if g.kind != "running" else ""
        out.append(f'<g class="group group-{g.kind}" data-group="{escape(g.id)}">'
                   f'<rect x="{_a(g.x)}" y="{_a(g.y)}" width="{_a(g.w)}" height="{_a(g.h)}" '
                   f'rx="8" fill="{fill}" stroke="#99a"{dash}/>'
                   f'<text x="{_a(g.x + 8)}" y="{_a(g.y + 16)}" font-size="12" fill="#335">'
                   f"{escape(g.label)}</text></g>")
    for e in scene.edges:
        out.append(f'<line class="edge edge-{e.kind}" x1="{_a(e.x1)}" y1="{_a(e.y1)}" '
                   f'x2="{_a(e.x2)}" y2="{_a(e.y2)}" {_EDGE_STYLE[e.kind]} '
                   f'marker-end="url(#arrow-{e.kind})"/>')
    out.extend(_node(n, selected) for n in scene.nodes)
    out.append("</g></svg>")
    return "\n".join(out)
