"""The live workbench: an engine you drive from JupyterLab, and its view (issue 23).

Nothing is imported here but the names: Spark starts when an :class:`Engine` is built, and the
widget modules load when :meth:`Engine.view` is called. Both engines are imported, so that
``Engine(replicas="apps")`` finds :class:`~reuse.live.apps.AppsEngine` (issue 32).
"""

from __future__ import annotations

from reuse.live.apps import AppsEngine
from reuse.live.engine import Engine, as_dataflow

__all__ = ["AppsEngine", "Engine", "as_dataflow"]
