"""The live workbench: an engine you drive from JupyterLab, and its view (issue 23).

Nothing is imported here but the names: Spark starts when an :class:`Engine` is built, and the
widget modules load when :meth:`Engine.view` is called.
"""

from __future__ import annotations

from reuse.live.engine import Engine, as_dataflow

__all__ = ["Engine", "as_dataflow"]
