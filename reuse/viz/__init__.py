"""Visualizer for merging and unmerging dataflows: model, layout, SVG, static PNG and widget.

The first four are plain Python (tested without a kernel); the widget lives in
:mod:`reuse.viz.widget` and is imported from there, so this package imports neither
ipywidgets nor anywidget.
"""

from __future__ import annotations

from reuse.viz.model import TASK_STATES, Snapshot, TaskView, Timeline
from reuse.viz.panels import delta_html, details_html
from reuse.viz.scene import SceneData, SceneEdge, SceneGroup, SceneNode, render_data
from reuse.viz.sources import TRACE_KINDS, WORKLOADS, Paths, load_scenario
from reuse.viz.static import draw_scene, png_bytes, png_size, save_png
from reuse.viz.svg import to_svg

__all__ = [
    "TASK_STATES", "Snapshot", "TaskView", "Timeline",
    "SceneData", "SceneEdge", "SceneGroup", "SceneNode", "render_data",
    "to_svg", "draw_scene", "save_png", "png_bytes", "png_size", "delta_html", "details_html",
    "WORKLOADS", "TRACE_KINDS", "Paths", "load_scenario",
]
