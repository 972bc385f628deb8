"""The strategies by name: an explicit dict, no registration at import time."""

from __future__ import annotations

from collections.abc import Callable

from reuse.placement.aels import place_aels
from reuse.placement.baselines import place_cloud_only, place_tcep
from reuse.placement.errors import PlacementError
from reuse.placement.model import Application, Infrastructure
from reuse.placement.pruning import place_aels_rp_la
from reuse.placement.regions import place_aels_rp
from reuse.placement.result import Outcome

__all__ = ["Strategy", "STRATEGIES", "get_strategy", "place"]

#: ``place(app, infra, *, time_limit=None) -> Placement | PlacementFailure``
Strategy = Callable[..., Outcome]

STRATEGIES: dict[str, Strategy] = {
    "aels": place_aels,
    "aels+rp": place_aels_rp,
    "aels+rp+la": place_aels_rp_la,
    "cloud-only": place_cloud_only,
    "tcep": place_tcep,
}


def get_strategy(name: str) -> Strategy:
    """The strategy called ``name`` (case-insensitive)."""
    try:
        return STRATEGIES[name.lower()]
    except KeyError:
        raise PlacementError(f"unknown strategy '{name}' (known: {', '.join(STRATEGIES)})") \
            from None


def place(app: Application, infra: Infrastructure, strategy: str = "aels+rp+la", *,
          time_limit: float | None = None) -> Outcome:
    """Place ``app`` on ``infra`` with the named strategy."""
    return get_strategy(strategy)(app, infra, time_limit=time_limit)
