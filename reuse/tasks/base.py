"""The task contract shared by every RIoTBench task, and event helpers.

An event is a plain JSON-able dict. Every task copies the accounting keys ``src`` (source name),
``seq`` (sequence number at the source, which doubles as RIoTBench's MSGID) and ``ts`` (emit time
in ms at the source) from its input to each output, so the runtime can measure end-to-end latency
and count events per source without knowing what the tasks do. After ``SenMLParse`` an event holds
one observation: ``sensor`` (the id field's value), ``meta`` (the message's meta fields), ``obs``
(field name) and ``value`` (float, str or ``None`` for a filtered value); after ``Join`` it holds
``fields`` (all observations of one message) instead of ``obs``/``value``.

Tasks are deterministic (same input sequence, same outputs: no wall clock, no salted ``hash()``,
no unseeded randomness) so a replayed or restored task reproduces its outputs.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

from reuse.core.errors import ReuseError

__all__ = [
    "ACCOUNTING_KEYS",
    "Event",
    "Partitioning",
    "Predicates",
    "Task",
    "StatefulTask",
    "TaskError",
    "derive",
    "observations",
    "group_key",
    "stable_hash64",
    "as_float",
    "snapshot",
    "config_dict",
    "require",
    "to_int",
    "to_float",
    "str_list",
    "str_set",
    "data_path",
]

Event = dict[str, Any]

#: Keys every task propagates from input to output.
ACCOUNTING_KEYS = ("src", "seq", "ts")

#: How a task's state divides over partitions of its events (issue 22; see
#: :attr:`Task.partitioning`).
Partitioning = Literal["stateless", "keyed", "global", "join"]


class TaskError(ReuseError):
    """A task cannot be built (unknown type, bad config) or cannot process an event."""


@dataclass(frozen=True)
class Predicates:
    """Many filter tasks' predicates, evaluated together (issue 25, item 4; AStream's one pass).

    What a type's :meth:`Task.fuse` gives the shard worker for a group of its tasks (the
    *members*, in order). ``select(events)`` returns one selector per member: ``bytes`` with
    one byte per event, 1 where the member's :meth:`~Task.process` returns ``[event]`` (the
    very event, unchanged), else 0. It is AStream's bitmask per event stored by member, since
    each member's output is a list of its own: ``itertools.compress(events, selector)`` is
    that list for a member whose ``drops[i]`` is true (an event it does not pass gives no
    output); for the others, an event not passed gives what ``process`` gives.
    """

    select: Callable[[Sequence[Event]], list[bytes]]
    drops: tuple[bool, ...]


class Task:
    """Base class: a task is built from its config and processes one event at a time.

    Subclasses set ``type_name`` and implement :meth:`process`. Stateless tasks need nothing
    else; the runtime may rebuild them at will.
    """

    type_name: str = "Task"
    stateful: bool = False
    #: Whether the task's inputs commute (issue 25): a stateless task maps each event on its own,
    #: so for one source ``seq`` it emits the same multiset of events whatever the order its
    #: inputs arrive in (it is a union of them). A stateful one sees that order.
    commutes: bool = True
    #: How the task's state divides over partitions of its events (issue 22, read by
    #: :mod:`reuse.runtime.engines.shared.split`): ``"stateless"`` maps each event on its own,
    #: so any partition of the events gives the same outputs; ``"keyed"`` keeps a map from
    #: :func:`group_key` (over its ``group_by``) to that key's state, so partitions that hold
    #: every event of a key each give that key's outputs; ``"global"`` keeps one state over all
    #: events, and ``"join"`` one state that one input writes and another reads: both need all
    #: their inputs in one partition.
    partitioning: Partitioning = "stateless"
    #: For a ``"keyed"`` task: the key of :meth:`StatefulTask.get_state` that holds the map
    #: from state key to that key's state (a re-split moves its entries with their key ranges).
    state_map: str = ""

    @classmethod
    def canonical(cls, config: Any) -> Any:
        """The canonical form of a config: equal forms build tasks with identical outputs.

        Each type reads its config the way its constructor does (numbers converted as the
        constructor converts them, defaults written out, lists the task only uses as sets
        sorted); keys the task does not read are kept as written. A config the form cannot
        read is returned as written, so it matches only its own spelling and the task reports
        it when built. The base form is the config itself (key order never counts: equivalence
        compares canonical JSON).
        """
        try:
            return cls._canonical(config)
        except (TypeError, ValueError, KeyError, OverflowError):
            return config

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """A type's canonical form; may raise on a config it cannot read."""
        return config

    @classmethod
    def contains(cls, wide: Any, narrow: Any) -> bool:
        """Whether a task of config ``narrow`` may read a task of config ``wide`` (issue 25,
        item 3): for every input, the narrow task fed the wide one's outputs emits exactly what
        it emits fed the input itself. For filters: whatever the narrow one keeps, the wide one
        keeps unchanged (or changed in a way the narrow one treats the same).

        True only when the configs prove it; a config the type cannot read, or any doubt, is
        false. The base type proves nothing.
        """
        try:
            return bool(cls._contains(wide, narrow))
        except (TypeError, ValueError, KeyError, IndexError, OverflowError):
            return False

    @classmethod
    def _contains(cls, wide: Any, narrow: Any) -> bool:
        """A type's containment proof; may raise on a config it cannot read."""
        return False

    @classmethod
    def absorb(cls, own: Any, wide: Any) -> Any:
        """The state of a task of this type reading its inputs directly, from the state of its
        residual (``own``: it read a wide task of its type, :meth:`contains`) and the wide
        task's state at the same ``seq`` (issue 36: a re-plan hands a stateful residual over
        to the dataflow's own task, :mod:`reuse.core.replan`). Only a type whose containment
        rule has ``fresh_inputs`` (a window) needs it; the base type has none.
        """
        raise TaskError(f"{cls.type_name} cannot absorb a wide task's state (no stateful "
                        "containment rule)")

    #: Whether :meth:`fuse` evaluates a group of this type's tasks in one pass (issue 25,
    #: item 4). Only a stateless filter declares it: its output for an event is that event or
    #: nothing (or what its own ``process`` makes of a rejected one).
    fusable: bool = False

    @classmethod
    def fuse(cls, members: Sequence[Task]) -> Predicates:
        """The predicates of built tasks of this type (``members``), for one pass over events
        that gives each member's decision per event (:class:`Predicates`). A fusable type
        overrides it; the shard runs a group through it only when ``fusable`` is true.
        """
        raise TaskError(f"{cls.type_name} declares no fusable predicate")

    def __init__(self, config: Any) -> None:
        self.config = config

    def process(self, event: Event) -> list[Event]:
        """Consume one event and return zero or more output events."""
        raise NotImplementedError

    def _cfg(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        """Read a config key, failing with a clear message when a required one is missing."""
        if not isinstance(self.config, dict):
            if required:
                raise TaskError(f"{self.type_name} needs a dict config, got {self.config!r}")
            return default
        if required and key not in self.config:
            raise TaskError(f"{self.type_name} config lacks '{key}': {self.config!r}")
        return self.config.get(key, default)


class StatefulTask(Task):
    """A task whose outputs depend on earlier inputs; its state can be checkpointed.

    ``get_state`` returns a JSON-able snapshot and ``set_state`` restores it, so a task built from
    the same config and given a snapshot continues exactly as the original would have.
    """

    stateful = True
    commutes = False
    #: A stateful task that declares nothing else is gathered whole (always exact).
    partitioning: Partitioning = "global"

    def get_state(self) -> Any:
        raise NotImplementedError

    def set_state(self, state: Any) -> None:
        raise NotImplementedError


def derive(event: Event, **changes: Any) -> Event:
    """Make an output event from an input one: keep accounting keys, sensor and meta, then update.

    Copying (not mutating) the input matters because the runtime duplicates one output to several
    downstream tasks (duplicate semantics) and they must not see each other's changes.
    """
    out: Event = {k: event[k] for k in ACCOUNTING_KEYS if k in event}
    for k in ("sensor", "meta"):
        if k in event:
            out[k] = event[k]
    out.update(changes)
    return out


def observations(event: Event) -> dict[str, Any]:
    """The observations an event carries: ``fields`` of a joined message, else ``{obs: value}``."""
    if "fields" in event:
        return dict(event["fields"])
    if "obs" in event:
        return {event["obs"]: event.get("value")}
    return {}


def group_key(event: Event, obs: str, group_by: list[str]) -> str:
    """String key of the keyed state an observation belongs to (JSON object keys must be str).

    ``group_by`` lists event attributes from ``sensor``, ``obs`` and ``src``, mirroring Storm's
    fields grouping ([SENSORID, OBSTYPE] etc.) in RIoTBench.
    """
    parts = []
    for g in group_by:
        if g == "obs":
            parts.append(obs)
        else:
            parts.append(str(event.get(g, "")))
    return "|".join(parts)


def stable_hash64(text: str, salt: int = 0) -> int:
    """A 64-bit hash that is the same in every process (``hash()`` of a str is salted per run)."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8, salt=salt.to_bytes(8, "little"))
    return int.from_bytes(digest.digest(), "little")


def as_float(value: Any) -> float | None:
    """Convert a SenML value to float, or ``None`` if it is missing or not numeric."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def snapshot(obj: Any) -> Any:
    """A deep, JSON-checked copy of state: restoring must not alias the live task's containers."""
    return json.loads(json.dumps(obj))


# --- canonical forms (issue 25): the constructors' own conversions, for Task._canonical ------

def config_dict(config: Any) -> dict[str, Any]:
    """A copy of a dict config; a ``TypeError`` for anything else."""
    if not isinstance(config, dict):
        raise TypeError("not a dict config")
    return dict(config)


def require(config: dict[str, Any], *keys: str) -> None:
    """A ``KeyError`` when a key the constructor requires is missing."""
    for key in keys:
        config[key]  # noqa: B018 - the lookup is the check


def to_int(value: Any) -> int:
    """``int(value)``, as the constructors convert (``5``, ``5.0`` and ``"5"`` are 5).

    >>> to_int("5"), to_int(5.0), to_int(5)
    (5, 5, 5)
    """
    return int(value)


def to_float(value: Any) -> float:
    """``float(value)``, as the constructors convert; a ``ValueError`` for NaN and infinities,
    which JSON cannot carry.

    >>> to_float("0.5"), to_float(1)
    (0.5, 1.0)
    """
    num = float(value)
    if not math.isfinite(num):
        raise ValueError("not finite")
    return num


def str_list(value: Any) -> list[str]:
    """A list of strings, as written (a ``TypeError`` for anything else)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("not a list of strings")
    return list(value)


def str_set(value: Any) -> list[str]:
    """A list of strings a task only uses as a set: sorted, without repeats.

    >>> str_set(["b", "a", "b"])
    ['a', 'b']
    """
    return sorted(set(str_list(value)))


def data_path(value: Any) -> str:
    """A resource file name relative to the data folder, as ``pathlib`` resolves it
    (``./x.csv`` and ``x.csv`` name one file).

    >>> data_path("./SYS_sample_data_senml.csv"), data_path("a//b/")
    ('SYS_sample_data_senml.csv', 'a/b')
    """
    if not isinstance(value, str):
        raise TypeError("not a path")
    return str(PurePosixPath(value))
