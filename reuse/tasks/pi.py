"""PiTask: the generic CPU-bound task logic the paper substituted for OPMW task bodies.

Each input event triggers Viete's product for pi over ``iterations`` factors (RIoTBench's
``MATH.PI_VIETE.ITERS`` is 1600), so cost per event is configurable and the output is a number.
"""

from __future__ import annotations

import math
from typing import Any

from reuse.tasks.base import Event, Task, derive, to_int

__all__ = ["PiTask", "viete_pi"]


def viete_pi(iterations: int) -> float:
    """Viete's formula: 2/pi = prod sqrt(2 + sqrt(2 + ...))/2; converges after ~26 factors."""
    term = 0.0
    prod = 1.0
    for _ in range(max(1, iterations)):
        term = math.sqrt(2.0 + term)
        prod *= term / 2.0
    return 2.0 / prod


class PiTask(Task):
    """Compute pi iteratively once per input event and emit it as ``value``.

    Config: a dict with ``iterations`` (default 1600), or anything else (an OPMW task's config is
    opaque) which means the default.
    """

    type_name = "PiTask"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``iterations`` as :func:`viete_pi` runs it (``max(1, int)``, default 1600 written
        out); a config that is not a dict means the default."""
        c = dict(config) if isinstance(config, dict) else {}
        c["iterations"] = max(1, to_int(c.get("iterations", 1600)))
        return c

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.iterations = int(self._cfg("iterations", 1600))

    def process(self, event: Event) -> list[Event]:
        return [derive(event, value=viete_pi(self.iterations))]
