"""The visualizer bound to a running :class:`~reuse.live.engine.Engine` (``eng.view()``).

The scene is the visualizer's own (:class:`~reuse.viz.widget.Visualizer`): the operations the
engine enacted so far, replayed through the same manager the engine's planner uses, so the
running DAGs, task ids and reuse counts are the engine's. Around it, refreshed about once per
trigger by a background thread:

- a status line (running tasks, the source, malformed messages per broker topic, the last
  error);
- the live tasks: shard, users, events/s, cores, CPU share and each user's bill;
- the dataflows: join point, tasks started and reused, recent outputs, output latency;
- cores over time, measured from the engine's processes;
- in a task's details, its live numbers and bill share.

A picker submits one of the workload's dataflows; the remove control lists the submitted
dataflows (a click in the scene selects a task, as in the trace visualizer, so removal has its
own control rather than a click that could be a mistake). Errors of a submit or remove are
shown in the status line; the kernel never sees a traceback.

Papermill keeps no widget state: :meth:`LiveView.still` is the static picture (PNG of the
scene and the panels' HTML) a batch run keeps.

Only Reuse is drawn as merged: a Default engine's picture is the Reuse plan of the same
dataflows (the tables show what the engine really runs).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from reuse.live.panels import (
    cores_svg,
    dataflows_html,
    live_task_html,
    status_html,
    tasks_html,
)
from reuse.viz.panels import details_html
from reuse.viz.widget import Visualizer

if TYPE_CHECKING:
    from reuse.core.dataflow import Dataflow

__all__ = ["LiveView"]


class LiveView(Visualizer):
    """The live UI; display the object (or ``view.ui``) in a notebook.

    Parameters
    ----------
    engine
        The running :class:`~reuse.live.engine.Engine` (not imported here: the engine imports
        this module when asked for its view).
    refresh_s
        Seconds between refreshes (default: the engine's trigger, at least 0.5 s).
    static
        When displayed, also show the scene's PNG and :meth:`still` (what papermill keeps).
    """

    def __init__(self, engine: Any, *, refresh_s: float | None = None,
                 static: bool = False) -> None:
        self.engine = engine
        self._metrics: dict[str, Any] = {}
        self._shown_ops = -1
        self._refreshing = threading.RLock()  # the thread's refresh and a button's
        from reuse.tasks.matching import match_policy

        # the engine's match policy: the same plans, ids and residual marks as the engine's
        super().__init__(flows={}, ops=[], show_submitted=False, static=False,
                         match=match_policy(getattr(engine.runtime, "match", "exact")))
        self.static_live = static
        self.refresh_s = refresh_s if refresh_s is not None else max(
            0.5, float(engine.runtime.trigger_s))
        choices = self._workload_flows()
        self.choices = choices
        self.picker = widgets.Dropdown(options=sorted(choices), description="dataflow",
                                       layout=widgets.Layout(width="320px"))
        self.submit_button = widgets.Button(description="submit", button_style="primary")
        self.removing = widgets.Dropdown(options=[], description="running",
                                         layout=widgets.Layout(width="320px"))
        self.remove_button = widgets.Button(description="remove", button_style="warning")
        self.live_status = widgets.HTML()
        self.live_status.add_class("reuse-live-status-line")
        self.tasks_panel = widgets.HTML()
        self.flows_panel = widgets.HTML()
        self.cores_panel = widgets.HTML()
        self.submit_button.on_click(lambda _b: self._act("submit"))
        self.remove_button.on_click(lambda _b: self._act("remove"))
        self.ui = widgets.VBox([
            widgets.HBox([self.picker, self.submit_button, self.removing, self.remove_button]),
            self.live_status,
            widgets.HBox([self.play, self.slider, self.status]),
            self.scene,
            widgets.HBox([self.delta, self.details]),
            widgets.HBox([self.flows_panel, self.cores_panel]),
            self.tasks_panel,
        ])
        self.ui.add_class("reuse-visualizer")
        self.ui.add_class("reuse-live")
        self._stop = threading.Event()
        self.refresh()
        self._thread = threading.Thread(target=self._loop, name="reuse-live-view", daemon=True)
        self._thread.start()

    def _workload_flows(self) -> dict[str, Dataflow]:
        if not self.engine.workload:
            return {}
        try:
            from reuse.workloads.registry import load_workload

            return {f.id: f for f in load_workload(self.engine.workload)}
        except Exception:  # noqa: BLE001 - a view without a picker is still a view
            return {}

    # --- actions -------------------------------------------------------------------------------

    def _act(self, what: str) -> None:
        try:
            if what == "submit" and self.picker.value:
                name = str(self.picker.value)
                flow = self.engine.flows.get(name) or self.choices[name]
                info = self.engine.submit(flow)
                self.status.value = (f"submitted {name}: {len(info['started'])} started, "
                                     f"{len(info['reused'])} reused, J = {info['J']}")
            elif what == "remove" and self.removing.value:
                name = str(self.removing.value)
                info = self.engine.remove(name)
                self.status.value = (f"removed {name}: {len(info['stop'])} stopped, "
                                     f"R = {info['R']}")
        except Exception as exc:  # noqa: BLE001 - shown, never a traceback in the kernel
            self.status.value = (f'<span style="color:#b71c1c">{what} failed: '
                                 f"{type(exc).__name__}: {exc}</span>")
        self.refresh()

    # --- refreshing ----------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.wait(self.refresh_s):
            if not self.engine.running:
                return
            try:
                self.refresh()
            except Exception as exc:  # noqa: BLE001 - the view must not die with a refresh
                self.live_status.value = (f'<span style="color:#b71c1c">refresh failed: '
                                          f"{type(exc).__name__}: {exc}</span>")

    def refresh(self) -> None:
        """Bring the scene and panels up to date with the engine (the thread calls this)."""
        with self._refreshing:
            self._refresh()

    def _refresh(self) -> None:
        eng = self.engine
        with eng.lock:
            flows, ops = dict(eng.flows), list(eng.ops)
        if len(ops) != self._shown_ops:
            self._shown_ops = len(ops)
            self.load(flows, ops)
            self.slider.value = self.play.value = self.timeline.steps if self.timeline else 0
            self.removing.options = eng.submitted
        m = eng.metrics()
        self._metrics = m
        self.live_status.value = status_html(m["counts"], m["malformed"], m["errors"],
                                             eng.runtime.source)
        self.tasks_panel.value = tasks_html(m["tasks"].to_dict("records"))
        self.flows_panel.value = dataflows_html(m["dataflows"].to_dict("records"))
        self.cores_panel.value = cores_svg(list(m["cores"].itertuples(index=False, name=None)))
        self._show_details()

    def _runtime_id(self, manager_id: str) -> str:
        planner = self.engine.runtime.planner
        rid = getattr(planner, "rid", None)
        return rid(manager_id) if rid is not None else manager_id

    def _show_details(self) -> None:
        if self.timeline is None:
            return
        sel = self.scene.selected
        html = details_html(self.snapshot, sel, self.costs)
        if sel and "tasks" in self._metrics:
            rows = {r["id"]: r for r in self._metrics["tasks"].to_dict("records")}
            html += live_task_html(rows.get(self._runtime_id(sel)))
        self.details.value = html

    # --- batch output and the end --------------------------------------------------------------

    def still(self) -> Any:
        """A static picture for papermill: the scene as a PNG and the panels as HTML."""
        from IPython.display import HTML

        self.refresh()
        return HTML(self.live_status.value + self.flows_panel.value + self.cores_panel.value
                    + self.tasks_panel.value)

    def close(self) -> None:
        """Stop refreshing (the engine goes on)."""
        self._stop.set()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.ui)
        if self.static_live:
            display(self.image())
            display(self.still())
