"""The combinations of run settings that are refused, and why: one table, one row each.

:class:`~reuse.runtime.spec.RunSpec` checks it on construction, so a refused combination is
one line naming the options before anything starts. A row is ``"not built"`` (delete it once
the combination works: ``benchmarks/compose.py`` then runs it), ``"engine"`` (the
query-per-DAG engine, the paper's, lacks the capability) or ``"impossible"`` (it means
nothing). The composition matrix and each refusal's argument: ``docs/runtime.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from reuse.runtime.dataplane.mqtt import masked

if TYPE_CHECKING:
    from reuse.runtime.common.policy import Policy

__all__ = ["Refusal", "REFUSED", "RESUME_REFUSED", "first_refusal"]


class Asked(Protocol):
    """The settings a row reads (a :class:`~reuse.runtime.spec.RunSpec`, which checks this
    table on construction)."""

    @property
    def policy(self) -> Policy: ...
    @property
    def engine(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def broker_fed(self) -> bool: ...
    @property
    def split(self) -> bool: ...
    @property
    def k_safe(self) -> int: ...
    @property
    def replicas(self) -> str: ...
    @property
    def replicated_apps(self) -> bool: ...
    @property
    def match(self) -> str: ...
    @property
    def latency_budget_s(self) -> float | None: ...
    @property
    def shared_disk(self) -> bool: ...


class Refusal(NamedTuple):
    """One refused combination: when ``when`` holds, ``message`` (formatted with the spec's
    ``source``, ``policy``, ``match`` and ``k``). ``kind``: ``"not built"`` (a row to delete once
    the combination works), ``"engine"`` (the query-per-DAG engine, the paper's, does not
    have the capability) or ``"impossible"`` (it means nothing)."""

    when: Callable[[Asked], bool]
    message: str
    kind: Literal["not built", "engine", "impossible"]


#: Every refused combination of settings, checked in order on construction; the first that
#: holds is the error. Each row is one combination, so building one is deleting its row.
REFUSED: tuple[Refusal, ...] = (
    # the query-per-DAG engine (--merge partial or relaunch)
    Refusal(lambda s: s.engine == "queries" and s.broker_fed,
            "--source {source} needs the shared query (--merge inplace), not {policy}",
            "engine"),
    Refusal(lambda s: s.engine == "queries" and s.split,
            "--split needs the shared query (--merge inplace), not {policy}", "engine"),
    Refusal(lambda s: s.engine == "queries" and s.k_safe > 0 and s.replicas == "shards",
            "--k-safe needs the shared query (--merge inplace), not {policy}: a query per "
            "partial DAG cannot hold a replica", "engine"),
    Refusal(lambda s: s.engine == "queries" and s.replicated_apps,
            "--replicas apps needs the shared query (--merge inplace), not {policy}", "engine"),
    Refusal(lambda s: s.engine == "queries" and s.latency_budget_s is not None,
            "--latency-budget needs the shared query (--merge inplace), not {policy}",
            "engine"),
    Refusal(lambda s: s.engine == "queries" and not s.shared_disk,
            "--no-shared-disk needs the shared query (--merge inplace), not {policy}: its "
            "queries share a bus directory", "engine"),
    # meaningless
    Refusal(lambda s: not s.policy.shares and s.match != "exact",
            "--match {match} needs --mode reuse: Default shares no task", "impossible"),
    Refusal(lambda s: s.replicated_apps and s.k_safe < 1,
            "--replicas apps needs --k-safe K >= 1 (K+1 instances), got {k}", "impossible"),
)

#: What ``--resume`` refuses (resuming is a life event of a run, not one of its settings).
RESUME_REFUSED: tuple[Refusal, ...] = (
    Refusal(lambda s: s.engine == "queries",
            "--resume needs a run on the shared query (--merge inplace), not {policy}: only it "
            "keeps a journal", "engine"),
)


def first_refusal(spec: Asked, table: tuple[Refusal, ...] = REFUSED) -> str | None:
    """The message of the first row of ``table`` that holds (``None``: none)."""
    for row in table:
        if row.when(spec):
            return row.message.format(source=masked(spec.source), policy=spec.policy.label,
                                      match=spec.match, k=spec.k_safe)
    return None
