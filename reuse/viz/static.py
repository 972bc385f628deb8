"""Static rendering of a :class:`~reuse.viz.scene.SceneData` with matplotlib (PNG for batch runs).

Papermill does not keep widget state, so a notebook run in batch shows nothing of the widget; it
can show (and save) these pictures instead. They draw the same scene data as the SVG, in the same
pixel coordinates, so the two agree: boxes coloured by state, reuse counts in an orange badge,
the step and the delta summary as the title, and a legend.
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch

from reuse.viz.scene import SceneData

__all__ = ["draw_scene", "save_png", "png_bytes", "png_size"]

_EDGE = {"stream": ("#555555", 1.0, "-"), "new": ("#2e7d32", 1.8, "-"),
         "stopped": ("#b71c1c", 1.2, "--")}
_GROUP_FILL = {"running": "#f7f9fc", "removed": "#fbeaea", "submitted": "#fafafa"}
MARGIN = 20.0
HEADER_PX = 70.0  # room for the title and the legend above the scene


def draw_scene(scene: SceneData, *, dpi: int = 100) -> Figure:
    """Draw ``scene`` on a new figure at 100 scene units per inch (one pixel each at 100 dpi).

    Uses :class:`matplotlib.figure.Figure` directly (not pyplot), so neither the backend nor any
    global figure state is touched; a notebook shows the returned figure as a PNG.
    """
    width = max(scene.width, 720.0) + 2 * MARGIN
    height = scene.height + 2 * MARGIN + HEADER_PX
    fig = Figure(figsize=(width / 100, height / 100), dpi=dpi)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(-MARGIN, width - MARGIN)
    ax.set_ylim(scene.height + MARGIN, -MARGIN - HEADER_PX)  # y down, as in the scene data
    ax.set_axis_off()
    ax.text(0, -HEADER_PX - MARGIN / 2 + 12, scene.title, fontsize=12, fontweight="bold",
            va="top")
    ax.text(0, -HEADER_PX + 20, scene.subtitle, fontsize=9.5, color="#444444", va="top")
    for g in scene.groups:
        ax.add_patch(FancyBboxPatch((g.x, g.y), g.w, g.h, boxstyle="round,pad=0,rounding_size=8",
                                    facecolor=_GROUP_FILL[g.kind], edgecolor="#9999aa",
                                    linestyle="-" if g.kind == "running" else "--", zorder=0))
        ax.text(g.x + 8, g.y + 15, g.label, fontsize=9, color="#333355", zorder=1)
    for e in scene.edges:
        colour, lw, ls = _EDGE[e.kind]
        ax.add_patch(FancyArrowPatch((e.x1, e.y1), (e.x2, e.y2), arrowstyle="-|>",
                                     mutation_scale=10, color=colour, linewidth=lw,
                                     linestyle=ls, shrinkA=0, shrinkB=0, zorder=2))
    for n in scene.nodes:
        stopped = n.state in ("stopped", "paused")
        ax.add_patch(FancyBboxPatch(
            (n.x, n.y), n.w, n.h, boxstyle="round,pad=0,rounding_size=6", facecolor=n.colour,
            edgecolor="#e65100" if n.reused_now else "#333333",
            linewidth=2.2 if n.reused_now else 0.9,
            linestyle="--" if stopped or n.kind == "submitted" else "-." if n.residual else "-",
            zorder=3))
        ax.text(n.x + 7, n.y + 14, n.label, fontsize=8.5, fontweight="bold", zorder=4,
                clip_on=True)
        ax.text(n.x + 7, n.y + 29, n.sublabel, fontsize=7.5, color="#333333", zorder=4)
        if n.kind == "task" and n.reuse_count > 1:
            ax.scatter([n.x + n.w], [n.y], s=170, color="#e65100", zorder=5)
            ax.text(n.x + n.w, n.y, str(n.reuse_count), fontsize=8, color="white",
                    fontweight="bold", ha="center", va="center", zorder=6)
    handles = [Patch(facecolor=c, edgecolor="#333333", label=label) for _, c, label in scene.legend]
    fig.legend(handles=handles, loc="upper left", ncol=len(handles), fontsize=8, frameon=False,
               bbox_to_anchor=(MARGIN / width, 1 - (MARGIN + 40) / height))
    return fig


def save_png(scene: SceneData, path: str | Path, *, dpi: int = 100) -> Path:
    """Write ``scene`` as a PNG (``width x height`` pixels as :func:`png_size` says)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    draw_scene(scene, dpi=dpi).savefig(path, dpi=dpi)
    return path


def png_bytes(scene: SceneData, *, dpi: int = 100) -> bytes:
    """The PNG of ``scene`` in memory (for ``IPython.display.Image``, which papermill keeps)."""
    buf = io.BytesIO()
    draw_scene(scene, dpi=dpi).savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def png_size(scene: SceneData, *, dpi: int = 100) -> tuple[int, int]:
    """The pixel size :func:`save_png` writes at ``dpi`` (tests check it)."""
    scale = dpi / 100
    return (round((max(scene.width, 720.0) + 2 * MARGIN) * scale),
            round((scene.height + 2 * MARGIN + HEADER_PX) * scale))
