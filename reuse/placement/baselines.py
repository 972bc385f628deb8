"""Baselines of section 5.1: Cloud-only and TCEP (Taneja's Cloud-Edge Placement)."""

from __future__ import annotations

import numpy as np

from reuse.placement.aels import Choice, best_of, greedy
from reuse.placement.engine import Engine
from reuse.placement.model import SOURCE, Application, Infrastructure
from reuse.placement.result import Outcome

__all__ = ["place_cloud_only", "place_tcep"]


def place_cloud_only(app: Application, infra: Infrastructure, *,
                     time_limit: float | None = None) -> Outcome:
    """Cloud-only: every non-pinned operator on the cloud resource with the best AL increment.

    The paper's Cloud-only "evaluates all cloud resources when assessing an operator" (its
    violations grow with the number of clouds), so it is Algorithm 2 restricted to clouds.
    Pinned sources and sinks stay where the application puts them.
    """
    return greedy(app, infra, "cloud-only",
                  lambda eng, op: best_of(eng, op, eng.infra.cloud_ids), time_limit=time_limit)


def _tcep_order(eng: Engine) -> list[int]:
    """The operator vector sorted by CPU requirement (``lambda_in * cpu``), largest first."""
    todo = eng.unplaced()
    app, fl = eng.app, eng.flows
    need = {i: (0.0 if app.operators[i].kind == SOURCE else fl.rate_in[i] * app.operators[i].cpu)
            for i in todo}
    return sorted(todo, key=lambda i: (-need[i], i))


def _tcep_choice(eng: Engine, op: int) -> Choice:
    """Best fit on the middle of the resource vector sorted by residual CPU, else a cloud.

    The vector is re-sorted for every operator (its residual CPU changes), as TCEP does; that
    sort is what makes TCEP slow on large infrastructures. Latency is ignored.
    """
    order = np.argsort(eng.res.cpu, kind="stable")
    mid = order[len(order) // 2: len(order) // 2 + 1]
    ev = eng.evaluate(op, mid)
    if ev.feasible[0]:
        return int(mid[0])
    clouds = eng.infra.cloud_ids
    ev = eng.evaluate(op, clouds)
    if not ev.feasible.any():
        return (ev.failed or "eq14", ev.detail or "no feasible cloud resource")
    fit = np.where(ev.feasible, eng.res.cpu[clouds], -np.inf)
    return int(clouds[int(np.argmax(fit))])


def place_tcep(app: Application, infra: Infrastructure, *,
               time_limit: float | None = None) -> Outcome:
    """TCEP: sorted operators, best fit on the median-CPU resource, the cloud otherwise."""
    return greedy(app, infra, "tcep", _tcep_choice, time_limit=time_limit, order=_tcep_order)
