"""What a strategy returns: a :class:`Placement` or a :class:`PlacementFailure` naming why."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Placement", "PlacementFailure", "Outcome"]


@dataclass(frozen=True, eq=False)
class Placement:
    """A complete, constraint-satisfying placement.

    Parameters
    ----------
    hosts
        Resource index per operator (``1_<i,k>`` of Table 2 as an array).
    latency
        AL of eq 18 under the analytic model.
    resolution_time
        Wall seconds the strategy took (section 5.1 "resolution time").
    evaluations
        Number of (operator, resource) pairs whose cost or feasibility was evaluated: the
        machine-independent measure of the search space the paper's time limit punishes.
    """

    strategy: str
    hosts: np.ndarray
    latency: float
    resolution_time: float
    evaluations: int
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return True


@dataclass(frozen=True)
class PlacementFailure:
    """No placement: ``constraint`` is ``"eq9"``..``"eq15"``, ``"pinned"`` or ``"time_limit"``."""

    strategy: str
    constraint: str
    operator: str
    detail: str
    resolution_time: float
    evaluations: int

    @property
    def ok(self) -> bool:
        return False

    def __str__(self) -> str:
        return (f"{self.strategy}: cannot place '{self.operator}': {self.constraint} "
                f"({self.detail})")


Outcome = Placement | PlacementFailure
