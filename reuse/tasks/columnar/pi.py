"""The PiTask kernel (issue 35).

The per-event task computes Viete's product over ``iterations`` factors for every event
(1600 by default): the configurable CPU cost the paper substituted for OPMW task bodies, the
stand-in for each event's work. Its value depends on the config alone, so computing it once
per batch would be exact, and would remove the stand-in rather than do the work faster: an
OPMW floor measured that way would say nothing of the work the paper's tasks model. So the
kernel keeps one product per row and runs them side by side, each factor one numpy operation
over every row of the batch: the same floating-point operations in the same order per row
(``sqrt``, add, multiply, divide are exactly rounded), so each row's value is bit-identical to
:func:`~reuse.tasks.pi.viete_pi`'s, and the work per event stays, done in C.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from reuse.tasks.columnar.batch import Batch
from reuse.tasks.columnar.kernel import Kernel
from reuse.tasks.pi import PiTask

__all__ = ["PiTaskKernel", "viete_pi_rows"]


def viete_pi_rows(iterations: int, n: int) -> np.ndarray:
    """:func:`~reuse.tasks.pi.viete_pi` for ``n`` rows at once, each row its own product.

    >>> from reuse.tasks.pi import viete_pi
    >>> v = viete_pi_rows(1600, 3)
    >>> v.tolist() == [viete_pi(1600)] * 3
    True
    """
    term = np.zeros(n)
    prod = np.ones(n)
    for _ in range(max(1, iterations)):
        np.sqrt(2.0 + term, out=term)
        prod *= term / 2.0
    return 2.0 / prod


class PiTaskKernel(Kernel):
    """PiTask a batch at a time: one product per row, computed side by side; the other columns
    are the ones ``derive`` keeps (accounting keys, ``sensor``, ``meta``), as they are."""

    type_name = "PiTask"

    def run(self, batch: Batch) -> Batch:
        if not batch.n:
            return Batch.empty()
        cols = {k: batch.cols[k] for k in ("src", "seq", "ts", "sensor", "meta")
                if k in batch.cols}
        cols["value"] = viete_pi_rows(cast(PiTask, self.task).iterations, batch.n)
        return Batch(batch.n, cols)
