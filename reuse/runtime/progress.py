"""Step progress of a live run: one line per step, and in a notebook a bar as well.

:func:`reuse.runtime.run.run_trace` calls its ``progress`` with one line per step; when the
callable also has a ``step(n, total, row)`` method it gets each step's CSV row too. In Jupyter,
:class:`StepBar` draws that as an ipywidgets progress bar with the last step's figures beside
it, so a user sees the engine at work without reading the log; under papermill (or with no
widget front end) the lines still go to stderr, as before.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reuse.runtime.rows import StepRow

__all__ = ["StepBar"]


class StepBar:
    """A progress callable for :func:`reuse.runtime.run.live_run` (lines plus a bar).

    Parameters
    ----------
    label
        Shown before the bar (e.g. the trace and mode).
    widgets
        Draw the ipywidgets bar (default: when ipywidgets imports); lines are printed always.

    Examples
    --------
    >>> bar = StepBar("riot seq reuse-inplace", widgets=False)
    >>> bar.step(1, 4, {"running_tasks": 7, "cores": 0.31, "p50_latency_ms": 950.0})
    >>> bar.done, bar.total, bar.text
    (1, 4, 'riot seq reuse-inplace: step 1/4, 7 tasks, 0.31 cores, p50 950.0 ms')
    """

    def __init__(self, label: str, *, widgets: bool | None = None) -> None:
        self.label = label
        self.done = 0
        self.total = 0
        self.text = label
        self._bar: Any = None
        self._note: Any = None
        if widgets is None or widgets:
            try:
                import ipywidgets as w
                from IPython.display import display
            except ImportError:
                return
            self._bar = w.IntProgress(min=0, max=1, value=0, description="steps",
                                      bar_style="info")
            self._note = w.Label(label)
            display(w.HBox([self._bar, self._note]))

    def __call__(self, line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def step(self, n: int, total: int, row: StepRow) -> None:
        self.done, self.total = n, total
        self.text = (f"{self.label}: step {n}/{total}, {row.get('running_tasks')} tasks, "
                     f"{row.get('cores')} cores, p50 {row.get('p50_latency_ms')} ms")
        if self._bar is not None:
            self._bar.max = total
            self._bar.value = n
            self._bar.bar_style = "success" if n == total else "info"
            self._note.value = self.text
