"""The error the placement layer reports to a user (one line, via :class:`reuse.core.errors.ReuseError`)."""

from __future__ import annotations

from reuse.core.errors import ReuseError

__all__ = ["PlacementError"]


class PlacementError(ReuseError):
    """Bad placement input (unknown strategy, malformed size, inconsistent application).

    A strategy that cannot place an application does *not* raise this: it returns a
    :class:`reuse.placement.result.PlacementFailure` naming the constraint that failed, because a
    failed placement is a result to report, not a usage error.
    """
