"""One exception root for the workbench, with a subclass per layer.

Every error carries the place it is about (file, DAG, task, trace step) and prints as one line, so
the CLI can show it as ``reuse: error: <line>`` with a non-zero exit and no traceback. Errors are
raised before any state changes: an operation that fails leaves the manager as it was.
"""

from __future__ import annotations

__all__ = [
    "ReuseError",
    "DataflowError",
    "TraceError",
    "ManagerError",
    "StateError",
    "CostError",
    "shown",
]


class ReuseError(Exception):
    """Root of every error the workbench reports to a user.

    Parameters
    ----------
    message
        What is wrong, without the location.
    file, dag, task
        Where it is wrong; each is optional and printed only when given.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        dag: str | None = None,
        task: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.dag = dag
        self.task = task

    def where(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(f"{self.file}")
        if self.dag is not None:
            parts.append(f"dag '{shown(self.dag)}'")
        if self.task is not None:
            parts.append(f"task '{shown(self.task)}'")
        return ": ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        text = f"{where}: {self.message}" if where else self.message
        # always one line, and always writable: a lone surrogate (from JSON's "\ud800") is
        # shown escaped, or printing the error would raise
        return " ".join(text.split()).encode("utf-8", "backslashreplace").decode("utf-8")


def shown(name: object, limit: int = 120) -> str:
    """An id as an error names it: cut to ``limit`` characters (an id can be megabytes long)."""
    text = str(name)
    return text if len(text) <= limit else text[:limit] + "..."


class DataflowError(ReuseError):
    """A dataflow file or object is not a valid de-dup DAG."""


class TraceError(ReuseError):
    """A trace is malformed or asks for an operation the manager cannot do."""

    def __init__(self, message: str, *, file: str | None = None, step: int | None = None,
                 dag: str | None = None) -> None:
        super().__init__(message, file=file, dag=dag)
        self.step = step

    def where(self) -> str:
        parts = [self.file] if self.file is not None else []
        if self.step is not None:
            parts.append(f"step {self.step}")
        if self.dag is not None:
            parts.append(f"dag '{shown(self.dag)}'")
        return ": ".join(parts)


class ManagerError(ReuseError):
    """A submit or remove that the manager refuses (nothing was changed)."""


class StateError(ReuseError):
    """The persisted manager state cannot be read back."""


class CostError(ReuseError):
    """A cost calibration file is malformed or does not price a task type (see reuse.analysis.billing)."""
