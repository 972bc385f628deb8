"""Plan deltas: what a runtime must do to enact one merge or unmerge.

The manager decides, a runtime (Spark, or nothing for planner-only runs) enacts. A delta lists the
new tasks ``T_x`` with their config and wiring, the streams inside them ``S*_x``, the boundary
streams ``S+_x`` from reused running tasks into new ones, the tasks ``T_t`` and streams ``S_t`` to
stop (a runtime may pause instead, as the paper's Storm binding did), and how running DAGs were
merged (``Y -> D_m``) or split (``D_i -> {D_mj}``).

A remove may also *re-plan* (issue 36, :mod:`reuse.core.replan`): the dataflows whose residuals
read a wide task that only they still need get new plans, and the delta then starts tasks too.
Why one delta and not a remove followed by submits: the stopped and the started tasks must
change at one cut ``R`` (the old ones take no event ``>= R``, the new ones every event from
``R`` on), exactly the cut rules of an unmerge and a merge, so that each re-planned dataflow's
sinks see every ``seq`` once; two deltas at two cuts would lose or repeat the ``seq`` between
them. ``handover`` says which stopped task each started one continues (same type, config and
output stream, so the started task takes its state at ``R``), ``absorbs`` which wide tasks'
states at ``R`` a started window task adds to that state (a stateful residual now reading its
inputs directly: the open block's values sat in the wide task), and ``replanned`` gives each
re-planned dataflow's sinks from ``R`` on (``sinks`` stays the submit's field).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunningTask", "PlanDelta"]


@dataclass(frozen=True)
class RunningTask:
    """A task of the running DAGs: one per equivalence class of submitted tasks.

    ``id`` is assigned when the task is first started (``<dag>.<task>`` of the submission that
    created it) and never changes while it runs, whoever else reuses it.
    """

    id: str
    signature: str
    type: str
    config: Any = field(compare=False, hash=False)
    parents: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "signature": self.signature, "type": self.type,
                "config": self.config, "parents": list(self.parents)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunningTask:
        return cls(d["id"], d["signature"], d["type"], d["config"], tuple(d["parents"]))


@dataclass(frozen=True)
class PlanDelta:
    """The effect of one ``submit`` or ``remove`` (all ids are running-task / running-DAG ids)."""

    op: str
    dag: str
    start: tuple[RunningTask, ...] = ()
    connect: tuple[tuple[str, str], ...] = ()
    boundary: tuple[tuple[str, str], ...] = ()
    reused: tuple[str, ...] = ()
    stop: tuple[str, ...] = ()
    disconnect: tuple[tuple[str, str], ...] = ()
    merged: tuple[str, ...] = ()
    running_dag: str | None = None
    split_into: tuple[str, ...] = ()
    sinks: Mapping[str, str] = field(default_factory=dict)
    handover: Mapping[str, str] = field(default_factory=dict)
    replanned: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    absorbs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for logs and progress output."""
        if self.op == "submit":
            return (f"submit {self.dag}: start {len(self.start)}, reuse {len(self.reused)}, "
                    f"boundary {len(self.boundary)}, merged {list(self.merged)} -> "
                    f"{self.running_dag}")
        replan = (f", start {len(self.start)} (re-plan {sorted(self.replanned)})"
                  if self.replanned else "")
        return (f"remove {self.dag}: stop {len(self.stop)}{replan}, "
                f"{self.running_dag} -> {list(self.split_into)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op, "dag": self.dag,
            "start": [t.to_dict() for t in self.start],
            "connect": [list(s) for s in self.connect],
            "boundary": [list(s) for s in self.boundary],
            "reused": list(self.reused), "stop": list(self.stop),
            "disconnect": [list(s) for s in self.disconnect],
            "merged": list(self.merged), "running_dag": self.running_dag,
            "split_into": list(self.split_into), "sinks": dict(self.sinks),
            "handover": dict(self.handover),
            "replanned": {d: dict(m) for d, m in self.replanned.items()},
            "absorbs": {t: list(w) for t, w in self.absorbs.items()},
        }
