"""Latency-aware placement of dataflows on cloud-edge infrastructure (Veith et al.).

Reuse decides *what* runs; placement decides *where*. Modules, one job each:

* :mod:`~reuse.placement.model` infrastructure and application (section 3.1-3.2)
* :mod:`~reuse.placement.latency` eqs 1-8 and 16-18 (AL)
* :mod:`~reuse.placement.constraints` eqs 9-15
* :mod:`~reuse.placement.sequence` Algorithm 1; :mod:`~reuse.placement.engine` Algorithm 2
* :mod:`~reuse.placement.aels`, :mod:`~reuse.placement.regions` (RP),
  :mod:`~reuse.placement.pruning` (LA), :mod:`~reuse.placement.baselines` (TCEP, Cloud-only)
* :mod:`~reuse.placement.registry` strategies by name
* :mod:`~reuse.placement.generators` Tables 3-4; :mod:`~reuse.placement.simulate` DES check;
  :mod:`~reuse.placement.evaluation` Tables 5-7 and the Figures 5-10 data (drawn by
  :mod:`reuse.figures.placement`; ``reuse place`` is :mod:`reuse.cli.placement`)
"""

from __future__ import annotations

from reuse.placement.errors import PlacementError
from reuse.placement.latency import aggregate_latency, propagate
from reuse.placement.model import Application, Infrastructure, Operator, Stream
from reuse.placement.registry import STRATEGIES, get_strategy, place
from reuse.placement.result import Placement, PlacementFailure

__all__ = [
    "Application", "Infrastructure", "Operator", "Stream", "Placement", "PlacementFailure",
    "PlacementError", "STRATEGIES", "get_strategy", "place", "aggregate_latency", "propagate",
]
