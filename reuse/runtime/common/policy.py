"""How a live run enacts the plan: one typed value instead of strings compared in many places.

Three choices make a live mode:

- ``mode``: what is decided. ``reuse`` merges equivalent tasks through the manager (the
  paper's Reuse); ``default`` runs every submitted dataflow on its own (the paper's baseline).
- ``merge``: how a merge is enacted. ``partial`` (the paper): new tasks form a new streaming
  query fed through the bus. ``relaunch``: the running DAG is handed over to one new query.
  ``inplace`` (ours): a fixed set of long-running shard queries runs every task; a merge or
  unmerge is a new deployment epoch, and no query starts or stops.
- ``unmerge``: how a removal is enacted by the query-per-DAG engine: ``pause`` (the paper),
  ``stop`` or ``lazy``. The inplace engine always frees removed tasks at the cut, so for it
  the choice is moot and is recorded as ``free``.
- ``sources`` (Default only): ``private``, the paper's baseline and Default's default, gives
  every Default dataflow its own replay of its sources; ``shared`` (the query-per-DAG engines
  only) feeds every Default dataflow from one replay per source stream, as Reuse does, which
  leaves out what Default's own sources cost. Reuse always shares equivalent sources: a source
  is a task like any other, and merging it is reuse.

Nothing here imports Spark: the policy is checked before a session starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from reuse.runtime import SparkRuntimeError

__all__ = ["Mode", "Merge", "Unmerge", "Sources", "Policy", "LIVE_MODES", "live_policy"]


class Mode(str, Enum):
    """What the planner decides: shared tasks (``reuse``) or none (``default``)."""

    REUSE = "reuse"
    DEFAULT = "default"


class Merge(str, Enum):
    """How a merge is enacted on Spark."""

    PARTIAL = "partial"
    RELAUNCH = "relaunch"
    INPLACE = "inplace"


class Unmerge(str, Enum):
    """How a removal is enacted on Spark."""

    PAUSE = "pause"
    STOP = "stop"
    LAZY = "lazy"
    FREE = "free"


class Sources(str, Enum):
    """Whose replay of a source stream a Default dataflow reads."""

    PRIVATE = "private"
    SHARED = "shared"


def _choice(enum: type[Enum], value: object, what: str) -> Enum:
    if isinstance(value, enum):
        return value
    try:
        return enum(value)
    except ValueError:
        names = ", ".join(str(m.value) for m in enum)  # type: ignore[var-annotated]
        raise SparkRuntimeError(f"unknown {what} {value!r} (use one of {names})") from None


@dataclass(frozen=True)
class Policy:
    """A live mode, checked on construction.

    Examples
    --------
    >>> Policy.of("reuse", "inplace").engine
    'inplace'
    >>> Policy.of("default", "partial", "pause").label
    'default'
    >>> Policy.of("reuse", "inplace", "pause").unmerge.value
    'free'
    >>> Policy.of("default").sources.value, Policy.of("reuse").sources.value
    ('private', 'shared')
    >>> Policy.of("default", sources="shared").label
    'default-shared'
    """

    mode: Mode = Mode.REUSE
    merge: Merge = Merge.PARTIAL
    unmerge: Unmerge = Unmerge.PAUSE
    #: ``None``: Default's own (``private``) for Default; Reuse always ``shared``
    sources: Sources | None = None

    def __post_init__(self) -> None:
        if self.mode is Mode.REUSE:
            object.__setattr__(self, "sources", Sources.SHARED)
        elif self.sources is None:
            object.__setattr__(self, "sources", Sources.PRIVATE)
        elif self.sources is Sources.SHARED and self.merge is Merge.INPLACE:
            raise SparkRuntimeError("default sources 'shared' needs a query-per-DAG engine "
                                    "(merge partial or relaunch); the shared query gives every "
                                    "Default dataflow its own sources")
        if self.merge is Merge.INPLACE and self.unmerge is not Unmerge.FREE:
            object.__setattr__(self, "unmerge", Unmerge.FREE)
        if self.merge is not Merge.INPLACE and self.unmerge is Unmerge.FREE:
            raise SparkRuntimeError("unmerge 'free' is the inplace engine's own; use pause, "
                                    "stop or lazy with merge partial or relaunch")

    @classmethod
    def of(cls, mode: str | Mode = "reuse", merge: str | Merge = "partial",
           unmerge: str | Unmerge = "pause", sources: str | Sources | None = None) -> Policy:
        """Build from the CLI's strings; an unknown one is a one-line error. ``sources``
        concerns Default only (``None``: private); Reuse ignores it."""
        return cls(_choice(Mode, mode, "mode"), _choice(Merge, merge, "merge"),  # type: ignore[arg-type]
                   _choice(Unmerge, unmerge, "unmerge"),  # type: ignore[arg-type]
                   None if sources is None else _choice(Sources, sources, "default sources"))  # type: ignore[arg-type]

    @property
    def private_sources(self) -> bool:
        """Whether every dataflow replays its own sources (Default, the paper's baseline)."""
        return self.sources is Sources.PRIVATE

    @property
    def shares(self) -> bool:
        """Whether equivalent tasks of different dataflows run once."""
        return self.mode is Mode.REUSE

    @property
    def engine(self) -> str:
        """``"inplace"`` (shard queries, epochs) or ``"queries"`` (a query per partial DAG)."""
        return "inplace" if self.merge is Merge.INPLACE else "queries"

    @property
    def label(self) -> str:
        """The :data:`LIVE_MODES` name of this policy (or a spelled-out one)."""
        for name, p in LIVE_MODES.items():
            if p == self:
                return name
        return f"{self.mode.value}-{self.merge.value}-{self.unmerge.value}"


#: The named ways of running a trace live (notebooks, benchmarks, ``reuse run``'s defaults).
#: ``reuse`` is the paper's enactment; ``reuse-inplace`` and ``default-inplace`` run on the
#: shared-query engine, which isolates what reuse saves from what the engine costs. ``default``
#: gives each dataflow its own sources, as the paper's baseline did; ``default-shared`` feeds
#: them from Reuse's shared replays (cheaper than the paper's Default).
LIVE_MODES: dict[str, Policy] = {
    "default": Policy(Mode.DEFAULT, Merge.PARTIAL, Unmerge.PAUSE),
    "default-shared": Policy(Mode.DEFAULT, Merge.PARTIAL, Unmerge.PAUSE, Sources.SHARED),
    "reuse": Policy(Mode.REUSE, Merge.PARTIAL, Unmerge.PAUSE),
    "reuse-stop": Policy(Mode.REUSE, Merge.PARTIAL, Unmerge.STOP),
    "reuse-relaunch": Policy(Mode.REUSE, Merge.RELAUNCH, Unmerge.STOP),
    "reuse-relaunch-lazy": Policy(Mode.REUSE, Merge.RELAUNCH, Unmerge.LAZY),
    "reuse-inplace": Policy(Mode.REUSE, Merge.INPLACE, Unmerge.FREE),
    "default-inplace": Policy(Mode.DEFAULT, Merge.INPLACE, Unmerge.FREE),
}


def live_policy(name: str) -> Policy:
    """The policy of a :data:`LIVE_MODES` name, or a one-line error listing them."""
    if name not in LIVE_MODES:
        raise SparkRuntimeError(f"unknown live mode {name!r} (use one of "
                                f"{', '.join(LIVE_MODES)})")
    return LIVE_MODES[name]
