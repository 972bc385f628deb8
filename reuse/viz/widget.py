"""The JupyterLab visualizer: step through a trace and watch dataflows merge and unmerge.

Controls choose a workload (Figure 1, RIoTBench, OPMW), a trace kind and seed; a ``Play`` linked
to an ``IntSlider`` steps through it. The scene is the SVG of :mod:`reuse.viz.svg`, shown by
:class:`SceneView`, a small anywidget whose front-end sends the id of a clicked task back to the
kernel (a plain ``widgets.HTML`` cannot); the details panel then shows that task's type, config,
users, reuse count and each user's share of its cost. Everything shown is computed by the
kernel-free modules (:mod:`~reuse.viz.model`, :mod:`~reuse.viz.scene`, :mod:`~reuse.viz.panels`).

Papermill keeps no widget state, so for batch runs use :meth:`Visualizer.figure` or
:meth:`Visualizer.save_png` (static matplotlib pictures of the same scene).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets
from matplotlib.figure import Figure

from reuse.analysis.billing import UNIT_COSTS, TaskCosts
from reuse.core.dataflow import Dataflow
from reuse.core.matching import EXACT, MatchPolicy
from reuse.core.traces import Op
from reuse.viz.model import Snapshot, Timeline
from reuse.viz.panels import delta_html, details_html
from reuse.viz.scene import SceneData, render_data
from reuse.viz.sources import TRACE_KINDS, WORKLOADS, Paths, load_scenario
from reuse.viz.static import draw_scene, png_bytes, save_png
from reuse.viz.svg import to_svg

__all__ = ["SceneView", "Visualizer", "show"]

_ESM = r"""
function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "reuse-scene-box";
  box.style.overflow = "auto";
  box.style.maxHeight = "640px";
  box.style.border = "1px solid #ddd";
  el.appendChild(box);
  const mark = () => {
    const sel = model.get("selected");
    box.querySelectorAll("[data-task]").forEach(
      (g) => g.classList.toggle("selected", g.dataset.task === sel));
    box.querySelectorAll("[data-maps-to]").forEach(
      (g) => g.classList.toggle("selected", g.dataset.mapsTo === sel));
  };
  const fit = () => {
    const svg = box.querySelector("svg");
    if (!svg) return;
    svg.style.width = model.get("fit") ? "100%" : "";
    svg.style.height = model.get("fit") ? "auto" : "";
  };
  const draw = () => { box.innerHTML = model.get("svg"); fit(); mark(); };
  const onClick = (ev) => {
    const g = ev.target.closest("[data-task], [data-maps-to]");
    if (!g) return;
    model.set("selected", g.dataset.task || g.dataset.mapsTo);
    model.save_changes();
  };
  box.addEventListener("click", onClick);
  model.on("change:svg", draw);
  model.on("change:selected", mark);
  model.on("change:fit", fit);
  draw();
  return () => {
    box.removeEventListener("click", onClick);
    model.off("change:svg", draw);
    model.off("change:selected", mark);
    model.off("change:fit", fit);
  };
}
export default { render };
"""


class SceneView(anywidget.AnyWidget):
    """Shows an SVG scene and reports the clicked task through the ``selected`` trait.

    The front-end looks up the nearest element with ``data-task`` (a running task) or
    ``data-maps-to`` (a submitted task: its running task is selected) and sets ``selected``;
    the kernel observes it. Setting ``selected`` from Python outlines the task in the browser.
    ``fit`` scales the picture to the output's width (large workloads) instead of scrolling.
    """

    _esm = _ESM
    svg = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    fit = traitlets.Bool(False).tag(sync=True)


class Visualizer:
    """The whole UI; display ``visualizer.ui`` (or the object itself) in a notebook.

    Parameters
    ----------
    workload, trace, seed, subset
        Initial choices (see :mod:`reuse.viz.sources`); ``subset``: a seeded sample of that many
        DAGs (:func:`reuse.workloads.trace_registry.select_subset`), ``None`` for all.
    flows, ops
        Show these dataflows and this trace instead of a named workload (the controls are then
        still there to switch to a named one).
    paths
        Where the named workloads live (default: this source checkout).
    paused
        ``step -> task ids`` a runtime paused instead of stopping (shown ``paused``).
    show_submitted
        Draw the submitted dataflows below the running DAGs (default: only for workloads of up
        to 8 dataflows, where they fit).
    static
        When displayed, also show a PNG of the current step: the output a papermill run keeps.
    costs
        Task prices for the details panel's cost share (default: 1 per task per step; see
        :mod:`reuse.analysis.billing`).
    match
        The manager's match policy (default ``exact``); under one with containment a residual
        task is drawn with a dashed outline and says which wide task it reads.
    """

    def __init__(self, workload: str = "figure1", trace: str = "file", seed: int = 1,
                 subset: int | None = None, *, flows: Mapping[str, Dataflow] | None = None,
                 ops: Sequence[Op] | None = None,
                 paths: Paths | None = None, paused: Mapping[int, Iterable[str]] | None = None,
                 show_submitted: bool | None = None, static: bool = False,
                 costs: TaskCosts = UNIT_COSTS, match: MatchPolicy = EXACT) -> None:
        self.paths = paths or Paths.default()
        self.match = match  # the manager's policy; residual tasks are drawn dashed
        self.costs = costs
        self.static_too = static
        self._paused = paused
        self._auto_submitted = show_submitted is None
        self.workload = widgets.Dropdown(options=list(WORKLOADS), value=workload,
                                         description="workload")
        self.trace_kind = widgets.Dropdown(options=list(TRACE_KINDS), value=trace,
                                           description="trace")
        self.seed = widgets.IntText(value=seed, description="seed",
                                    layout=widgets.Layout(width="140px"))
        self.subset = widgets.IntText(value=subset or 0, description="DAGs (0: all)",
                                      layout=widgets.Layout(width="180px"))
        self.show_submitted = widgets.Checkbox(value=bool(show_submitted),
                                               description="show submitted dataflows")
        self.fit = widgets.Checkbox(value=False, description="fit width")
        self.status = widgets.HTML()
        self.play = widgets.Play(value=0, min=0, max=0, step=1, interval=1200,
                                 description="play")
        self.slider = widgets.IntSlider(value=0, min=0, max=0, description="step",
                                        continuous_update=True,
                                        layout=widgets.Layout(width="420px"))
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.scene = SceneView(layout=widgets.Layout(width="100%"))
        widgets.link((self.fit, "value"), (self.scene, "fit"))
        self.delta = widgets.HTML(layout=widgets.Layout(width="50%"))
        self.details = widgets.HTML(layout=widgets.Layout(width="50%"))
        self.details.add_class("reuse-details-panel")
        self.delta.add_class("reuse-delta-panel")
        self.ui = widgets.VBox([
            widgets.HBox([self.workload, self.trace_kind, self.seed, self.subset]),
            widgets.HBox([self.show_submitted, self.fit]),
            widgets.HBox([self.play, self.slider, self.status]),
            self.scene,
            widgets.HBox([self.delta, self.details]),
        ])
        self.ui.add_class("reuse-visualizer")
        self.flows: dict[str, Dataflow] = {}
        self.timeline: Timeline | None = None
        if flows is not None:
            if ops is None:
                flows, ops = load_scenario(workload, trace, seed=seed, subset=subset,
                                           paths=self.paths, flows=flows)
            self.load(flows, ops)
        else:
            self.reload()
        for w in (self.workload, self.trace_kind, self.seed, self.subset):
            w.observe(lambda _change: self.reload(), names="value")
        self.show_submitted.observe(lambda _change: self.render(), names="value")
        self.slider.observe(lambda _change: self.render(), names="value")
        self.scene.observe(lambda _change: self._show_details(), names="selected")

    # --- state ---------------------------------------------------------------------------------

    def reload(self) -> None:
        """Load the chosen workload and trace (errors are shown in the status line)."""
        name = self.workload.value
        self.status.value = f"<i>loading {name}\u2026</i>"
        try:
            flows, ops = load_scenario(name, self.trace_kind.value, seed=self.seed.value,
                                       subset=self.subset.value or None, paths=self.paths)
        except Exception as exc:  # a missing data dir or a bad trace must not kill the UI
            self.status.value = (f'<span style="color:#b71c1c">cannot load {name}: '
                                 f"{type(exc).__name__}: {exc}</span>")
            return
        if self._auto_submitted:
            self.show_submitted.value = len(flows) <= 8
        self.load(flows, ops)

    def load(self, flows: Mapping[str, Dataflow], ops: Sequence[Op]) -> None:
        """Replay ``ops`` over ``flows`` and show step 0."""
        self.flows = dict(flows)
        self.timeline = Timeline(self.flows, ops, paused=self._paused, match=self.match)
        self.status.value = f"{len(self.flows)} dataflows, {self.timeline.steps} steps"
        self.slider.value = 0
        self.play.value = 0
        self.slider.max = self.play.max = self.timeline.steps
        self.render()

    @property
    def step(self) -> int:
        return int(self.slider.value)

    @property
    def snapshot(self) -> Snapshot:
        assert self.timeline is not None, "nothing loaded"
        return self.timeline[min(self.step, self.timeline.steps)]

    def scene_data(self, step: int | None = None) -> SceneData:
        """The scene of ``step`` (default: the current one), as drawn."""
        assert self.timeline is not None, "nothing loaded"
        snap = self.timeline[self.step if step is None else step]
        flows = self.flows if self.show_submitted.value else None
        return render_data(snap, flows, total_steps=self.timeline.steps)

    # --- drawing -------------------------------------------------------------------------------

    def render(self) -> None:
        """Redraw the scene and both panels for the current step."""
        if self.timeline is None:
            return
        snap = self.snapshot
        self.scene.svg = to_svg(self.scene_data(), self.scene.selected or None)
        self.delta.value = delta_html(snap, self.timeline.steps)
        self._show_details()

    def _show_details(self) -> None:
        if self.timeline is not None:
            self.details.value = details_html(self.snapshot, self.scene.selected, self.costs)

    def select(self, task_id: str) -> None:
        """Select a task as a click would."""
        self.scene.selected = task_id

    def figure(self, step: int | None = None, *, dpi: int = 100) -> Figure:
        """A static matplotlib picture of ``step`` (for papermill / batch runs)."""
        return draw_scene(self.scene_data(step), dpi=dpi)

    def save_png(self, path: str | Path, step: int | None = None, *, dpi: int = 100) -> Path:
        """Write the picture of ``step`` as a PNG."""
        return save_png(self.scene_data(step), path, dpi=dpi)

    def image(self, step: int | None = None, *, dpi: int = 100) -> Any:
        """``step`` as an ``IPython.display.Image``: a PNG output that papermill saves.

        Unlike a bare matplotlib figure, this displays as a PNG whether or not pyplot's inline
        backend is active.
        """
        from IPython.display import Image

        return Image(data=png_bytes(self.scene_data(step), dpi=dpi), format="png")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.ui)
        if self.static_too:
            display(self.image())


def show(workload: str = "figure1", trace: str = "file", seed: int = 1,
         **kwargs: Any) -> Visualizer:
    """Build a :class:`Visualizer` (display the returned object as a cell's last line)."""
    return Visualizer(workload, trace, seed, **kwargs)
