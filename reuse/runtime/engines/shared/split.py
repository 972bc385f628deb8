"""Key parallelism: which tasks of a running DAG run split over partitions, and where events move.

A running DAG lives whole in one shard (:mod:`reuse.runtime.engines.shared.deploy`), so the
more users share, the less the engine can spread (issue 22). This module decides how one
running DAG runs over ``N`` *partitions* instead, as plain data and pure functions, tested
without Spark against the unsplit shard worker and the reference execution
(``tests/runtime/engines/shared/test_split.py``).

How each task type partitions (:attr:`reuse.tasks.base.Task.partitioning`, next to its code)
---------------------------------------------------------------------------------------------
=========================  =========  =====================================================
type                       role       why (read from its ``process``)
=========================  =========  =====================================================
sources (SYS, TAXI, FIT,   source     generated from ``seq``: each partition makes the
OPMW inputs)                          ``seq`` whose message key ``src|seq`` it owns
SenMLParse, RangeFilter,   stateless  each event mapped on its own (the bloom filter, the
BloomFilterCheck,                     metadata table and the models are built at start-up
Annotate, CsvToSenML,                 and only read): any partition of the events gives
DecisionTreeClassify,                 the same outputs
MultiVarLinearRegression
PiTask, every OPMW type    stateless  run as PiTask (Viete's pi per event)
MQTTPublish, Sink          stateless  one record per input event; the count and tail they
                                      keep are not task state
Interpolation,             keyed      a map from ``group_key(event, obs, group_by)`` to that
KalmanFilter,                         series' state; an event reads and writes only its own
SlidingLinearRegression,              series (``obs`` is the field with ``"field"`` keying,
BlockWindowAverage,                   ``sensor|field`` with ``"sensor"`` keying)
SecondOrderMoment
Join                       gathered   keyed by message, but ``max_pending`` evicts the
                                      oldest incomplete message over all messages
DistinctApproxCount        gathered   one sketch over all events; each output is the
                                      estimate after its event
ErrorEstimation            gathered   a join: one input writes the latest average that
                                      every event of the other reads
=========================  =========  =====================================================

A keyed task fed joined messages (``fields``) touches one series per listed field; it is split
only when that is one key per message (``group_by`` without ``obs``, or a single field, as
PRED's BlockWindowAverage of the regression's target), and gathered otherwise. With ``"field"``
keying that BlockWindowAverage has a single series, so it is gathered too (a split would move
its events for no parallelism).

The plan (:func:`plan_split`)
------------------------------
Every stream has a *layout*: partitioned by a :class:`KeySpec` (each event in the partition
owning its key), gathered in one partition, or *mixed* (somewhere, no known key). Sources are
partitioned by the message key. A stateless task runs in every partition on what is there (no
exchange). A keyed task needs its input partitioned by its own key: an edge whose layout is
that key is *forward*, any other a *shuffle* (re-keyed). A gathered task runs in one partition,
its *group*'s: it joins the group of its first gathered parent, else starts one; other inputs
are *gathered* there. A task's outputs keep its input's key when they keep the attributes the
key reads (a filter keeps ``obs``, every task keeps ``src`` and ``seq``), so Kalman -> SLR, both
keyed by ``obs``, needs one shuffle. A task's *stage* counts the exchanges above it.

Why it is exact
---------------
- Order. In the shard worker a task takes its parents' outputs in parent order, stably sorted
  by ``seq``. An event can carry an order tag: a task's input at position ``key =
  (seq, parent, tag)`` emits its ``j``-th output with tag ``(*key, j)``, nested (a task whose
  outputs of one ``seq`` are all made in one partition may tag them with their place in its
  outputs there instead). Sorting any subset of a task's inputs by key gives the unsplit
  order restricted to it: keys at one input are distinct, and two tags of one parent at one
  ``seq`` and parent index compare as their inputs' keys, then ``j``. The staged executor
  tags only where a parent's events of one ``seq`` meet from several partitions
  (:func:`reuse.runtime.engines.shared.stages._tags`); elsewhere the sort by ``seq`` alone is
  the unsplit order.
- A keyed task's outputs for an event depend on the event and its key's state only, and that
  state on the key's earlier events only; all of a key's events reach one partition, in order.
  Stateless tasks depend on the event only; gathered tasks see every event, in order.
- Windows: a task takes the events with ``start <= seq < end``, as in the shard worker.

Key ranges, re-splits and state (:class:`KeyRanges`)
-----------------------------------------------------
A key's place is ``stable_hash64(key)`` (the same in every process; ``hash()`` is salted), cut into
``R`` fixed *ranges* (64: a power of two, the top bits of the hash). A table gives each range its
partition; every exchange of the DAG uses it. A keyed task's state in a partition holds the keys of
that partition's ranges: :func:`~reuse.runtime.engines.shared.split_moves.merge_states` unions them
back into the unsplit state (what a checkpoint keeps: a restart with any ``N`` is exact),
:func:`~reuse.runtime.engines.shared.split_moves.split_states` cuts one by the table. A re-split
(:meth:`KeyRanges.resplit`, ``N`` to ``M``: the fewest ranges move) and a rebalance
(:func:`~reuse.runtime.engines.shared.split_moves.rebalance`: from the measured CPU per range and
per gathered group, whole ranges and groups move from the most to the least loaded partition, kept
only if they lower the largest load by a margin, as :meth:`Deployment.rebalance`) move whole ranges
and groups, and their state with them, at a batch boundary (a cut at the frontier).

Gathered groups are the other grain: a DAG's Join, DistinctApproxCount and ErrorEstimation
groups may sit in different partitions, a form of pipeline parallelism. What no plan splits is
one key: with ``"field"`` keying a keyed task has as many keys as fields it reads (2 to 11 in
the workload), and its hottest field bounds its balance; ``"sensor"`` keying gives hundreds on
SYS and TAXI (782 taxis, one of them in 6% of the messages), but FIT has one subject.

How the engine uses it
----------------------
:mod:`reuse.runtime.engines.shared.split_batch` (``reuse run --split``) plans the deployment's
tasks at every version under the current layout (the table and the groups' partitions, kept across
plans), runs a batch stage by stage as one Spark job (Spark's shuffle between stages,
:func:`reuse.runtime.engines.shared.stages.run_stage` in each), and measures CPU per range and per
group for :func:`~reuse.runtime.engines.shared.split_moves.rebalance`. It keeps task states whole
between batches (cut with :func:`~reuse.runtime.engines.shared.split_moves.split_states` and merged
with :func:`~reuse.runtime.engines.shared.split_moves.merge_states` around each batch) instead of
per partition: a move is then nothing but a new table, at the cost of cutting and merging about
20 KB of state per batch at the RIoT peak.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import task_kind
from reuse.runtime.engines.shared.deploy import REPLICA_MARK, replica_level
from reuse.runtime.engines.shared.key_ranges import (
    RANGES,
    GroupMove,
    KeyRanges,
    RangeMove,
    SplitAction,
)
from reuse.tasks import TASK_TYPES
from reuse.tasks.base import Task
from reuse.tasks.pi import PiTask
from reuse.tasks.sinks import Sink

__all__ = ["RANGES", "KeySpec", "MESSAGE", "TypeSplit", "type_split", "KeyRanges", "RangeMove",
           "GroupMove", "SplitAction", "Layout", "Exchange", "Step", "SplitPlan", "plan_split",
           "emptiest", "order_key"]


Role = Literal["source", "stateless", "keyed", "gathered"]

#: The shape of an event: one observation (``obs``), a joined message (``fields``) or neither.
OBS, MSG, BARE = "obs", "msg", "bare"
_SAME = ("RangeFilter", "BloomFilterCheck")  # the event itself (or a copy with its obs, fields)
_KEEP_OBS = _SAME + ("Interpolation", "Annotate", "KalmanFilter", "SlidingLinearRegression",
                     "BlockWindowAverage", "SecondOrderMoment")
#: types whose outputs carry their input's ``sensor`` (by :func:`reuse.tasks.base.derive`, or as
#: is); SenMLParse reads it from the payload, and a type not listed is assumed not to
_KEEP_SENSOR = _KEEP_OBS + ("Join", "CsvToSenML", "DistinctApproxCount", "DecisionTreeClassify",
                            "MultiVarLinearRegression", "ErrorEstimation", "PiTask")
_TO_OBS = ("SenMLParse", "KalmanFilter", "SlidingLinearRegression", "BlockWindowAverage",
           "SecondOrderMoment", "DistinctApproxCount", "DecisionTreeClassify",
           "MultiVarLinearRegression", "ErrorEstimation")


@dataclass(frozen=True)
class KeySpec:
    """How an event's key is read: :func:`reuse.tasks.base.group_key` over ``attrs``.

    ``field`` stands in for ``obs`` on an event with no ``obs`` (a joined message whose only
    field the task reads), so the routing key is the task's own state key. ``shift``: a
    k-safe replica of level ``r`` keys by ``shift = r``, so each key's replica work runs ``r``
    partitions after its owner (mod ``N``), never where its primary's does.

    Examples
    --------
    >>> KeySpec(("sensor", "obs")).key({"sensor": "s1", "obs": "temp"})
    's1|temp'
    >>> KeySpec(("obs",), "fare").key({"fields": {"fare": 3.0}}), MESSAGE.key({"src": "S", "seq": 7})
    ('fare', 'S|7')
    """

    attrs: tuple[str, ...]
    field: str | None = None
    shift: int = 0

    def __post_init__(self) -> None:
        if not self.attrs:
            raise SparkRuntimeError("a key reads at least one attribute")

    def key(self, event: Mapping[str, Any]) -> str:
        obs = event.get("obs")
        if not isinstance(obs, str):
            obs = self.field or ""
        attrs = self.attrs
        if len(attrs) == 1:  # the common key, read per event on every exchange: no join
            return obs if attrs[0] == "obs" else str(event.get(attrs[0], ""))
        return "|".join([obs if a == "obs" else str(event.get(a, "")) for a in attrs])


#: The key of a message: its source and ``seq`` (how sources and stateless stages split).
MESSAGE = KeySpec(("src", "seq"))


@dataclass(frozen=True)
class TypeSplit:
    """What a task type's code says about splitting it (see the module's table)."""

    role: Role
    #: keyed: the ``group_by`` its state keys read, and the fields it keys (``None``: all)
    group_by: tuple[str, ...] = ()
    fields: frozenset[str] | None = None
    state_map: str = ""


def _task_class(type_name: str, config: Any) -> type[Task]:
    """The class :func:`reuse.runtime.common.execution.build_task` runs for a type."""
    if type_name in TASK_TYPES:
        return TASK_TYPES[type_name]
    return Sink if task_kind(type_name, config) == "sink" else PiTask


def type_split(type_name: str, config: Any) -> TypeSplit:
    """How a task of this type and config splits.

    Examples
    --------
    >>> type_split("KalmanFilter", {"process_noise": 1, "sensor_noise": 1, "estimated_error": 1,
    ...            "fields": ["t"], "group_by": ["obs"]})
    TypeSplit(role='keyed', group_by=('obs',), fields=frozenset({'t'}), state_map='series')
    >>> type_split("Join", {"fields": ["t"]}).role, type_split("SomeOpmwStep", "default").role
    ('gathered', 'stateless')
    """
    if task_kind(type_name, config) == "source":
        return TypeSplit("source")
    cls = _task_class(type_name, config)
    if cls.partitioning == "stateless":
        return TypeSplit("stateless")
    if cls.partitioning == "keyed":
        c = cls.canonical(config)
        group = c.get("group_by") if isinstance(c, dict) else None
        fields = c.get("fields") if isinstance(c, dict) else None
        if isinstance(group, list) and group and (fields is None or isinstance(fields, list)):
            return TypeSplit("keyed", tuple(group), None if fields is None else frozenset(fields),
                             cls.state_map)
    return TypeSplit("gathered")  # global, join, or a keyed config it cannot read


# --- the plan -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """Where a stream's events are: by ``key``, all in ``group``'s partition, or mixed."""

    key: KeySpec | None = None
    group: str | None = None


MIXED = Layout()


@dataclass(frozen=True)
class Exchange:
    """How one input of a task reaches it: ``forward`` (stays in its partition), ``shuffle``
    (to the partition owning ``key``) or ``gather`` (to ``group``'s partition)."""

    parent: str
    kind: Literal["forward", "shuffle", "gather"]
    key: KeySpec | None = None
    group: str | None = None


@dataclass(frozen=True)
class Step:
    """One task of a plan: its role, its inputs in parent order, its output layout, its stage."""

    task: str
    role: Role
    inputs: tuple[Exchange, ...]
    layout: Layout
    stage: int
    key: KeySpec | None = None
    group: str | None = None
    state_map: str = ""


@dataclass(frozen=True)
class SplitPlan:
    """A running DAG over ``ranges.partitions`` partitions: steps parents first, the key
    ranges, and the partition of each gathered group (``(group, partition)`` pairs)."""

    steps: tuple[Step, ...]
    ranges: KeyRanges
    groups: tuple[tuple[str, int], ...] = ()
    _by_id: dict[str, Step] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {s.task: s for s in self.steps})
        for g, p in self.groups:
            if not 0 <= p < self.partitions:
                raise SparkRuntimeError(f"group {g} is in partition {p} of {self.partitions}")

    @property
    def partitions(self) -> int:
        return self.ranges.partitions

    def step(self, task: str) -> Step:
        """The step of a task (a :class:`SparkRuntimeError` for a task not in the plan)."""
        if task not in self._by_id:
            raise SparkRuntimeError("is not in the split plan", task=task)
        return self._by_id[task]

    def __contains__(self, task: object) -> bool:
        return task in self._by_id

    def group_at(self, group: str) -> int:
        return dict(self.groups)[group]

    def group_tasks(self, group: str) -> list[str]:
        return [s.task for s in self.steps if s.role == "gathered" and s.group == group]

    def exchanges(self) -> list[tuple[str, Exchange]]:
        """Every input edge that moves events: ``(task, exchange)``."""
        return [(s.task, e) for s in self.steps for e in s.inputs if e.kind != "forward"]

    def partition_of(self, key: str, shift: int = 0) -> int:
        """The partition that owns ``key`` for a copy of level ``shift`` (its range's, shifted;
        a :class:`KeySpec`'s ``shift``). :class:`~reuse.runtime.engines.shared.routing.Router`
        does the same per event from a memo of the ranges' owners."""
        return (self.ranges.partition_of(key) + shift) % self.partitions

    def destination(self, exchange: Exchange, event: Mapping[str, Any]) -> int | None:
        """The partition an event goes to over ``exchange`` (``None``: it stays where it is)."""
        if exchange.kind == "shuffle" and exchange.key is not None:
            return self.partition_of(exchange.key.key(event), exchange.key.shift)
        if exchange.kind == "gather" and exchange.group is not None:
            return self.group_at(exchange.group)
        return None

    def source_partition(self, stream: str, seq: int, shift: int = 0) -> int:
        """The partition that makes source event ``seq`` of ``stream`` (its message key's;
        ``shift``: a replica source's level)."""
        return self.partition_of(MESSAGE.key({"src": stream, "seq": seq}), shift)


def _shapes_out(type_name: str, shapes: frozenset[str]) -> frozenset[str]:
    """The shapes a type's outputs can have for inputs of ``shapes`` (an over-approximation)."""
    if type_name in _SAME:
        return shapes
    if type_name in ("Interpolation", "Annotate"):
        bare = BARE if type_name == "Annotate" else OBS  # Interpolation sets obs, even to None
        return frozenset(s if s in (OBS, MSG) else bare for s in shapes)
    if type_name in _TO_OBS:
        return frozenset({OBS})
    if type_name == "Join":
        return frozenset({MSG})
    if type_name in ("CsvToSenML", "PiTask"):
        return frozenset({BARE})
    if type_name in TASK_TYPES:
        return frozenset({OBS, MSG, BARE})
    return frozenset({BARE})  # an OPMW type, run as PiTask


def _keeps(type_name: str, key: KeySpec, shapes: frozenset[str]) -> bool:
    """Whether every output of the type has its input's ``key`` (so its layout carries over)."""
    for a in key.attrs:
        if a in ("src", "seq"):
            ok = type_name != "Join"  # an evicted message leaves with another event
        elif a == "sensor":
            ok = type_name in _KEEP_SENSOR or type_name not in TASK_TYPES  # OPMW: PiTask
        elif a == "obs":
            ok = type_name in _KEEP_OBS and all(_shapes_out(type_name, frozenset({s})) == {s}
                                                for s in shapes)
        else:
            ok = False
        if not ok:
            return False
    return True


def plan_split(tasks: Sequence[Mapping[str, Any]], ranges: KeyRanges | int, *,
               groups: Mapping[str, int] | None = None) -> SplitPlan:
    """The split plan of one running DAG (see the module doc).

    Parameters
    ----------
    tasks
        The DAG's tasks parents first, as :meth:`Deployment.snapshot` lists them (``id``,
        ``type``, ``config``, ``parents``, ``kind``); every parent must be listed.
    ranges
        The key ranges (a :class:`KeyRanges`), or a number of partitions for even ones.
    groups
        Partitions of the gathered groups of the previous plan: they stay there. A new group
        goes to the partition with the fewest groups (the lowest of those).

    Examples
    --------
    Parse, then Kalman -> SLR keyed by field: one shuffle, SLR forward.

    >>> cfg = {"process_noise": 1, "sensor_noise": 1, "estimated_error": 1, "fields": ["t"],
    ...        "group_by": ["obs"]}
    >>> dag = [{"id": "s", "type": "SYS", "config": "source", "parents": [], "kind": "source"},
    ...        {"id": "p", "type": "SenMLParse", "config": {}, "parents": ["s"], "kind": "task"},
    ...        {"id": "k", "type": "KalmanFilter", "config": cfg, "parents": ["p"], "kind": "task"},
    ...        {"id": "r", "type": "SlidingLinearRegression", "config": {
    ...            "train_window": 5, "predict_window": 1, "group_by": ["obs"]},
    ...         "parents": ["k"], "kind": "task"}]
    >>> plan = plan_split(dag, 2)
    >>> [(s.task, s.role, [e.kind for e in s.inputs], s.stage) for s in plan.steps]
    [('s', 'source', [], 0), ('p', 'stateless', ['forward'], 0), ('k', 'keyed', ['shuffle'], 1), ('r', 'keyed', ['forward'], 1)]
    """
    kr = ranges if isinstance(ranges, KeyRanges) else KeyRanges.even(ranges)
    steps: dict[str, Step] = {}
    shapes: dict[str, frozenset[str]] = {}
    for t in tasks:
        tid, typ = str(t["id"]), str(t["type"])
        for p in t["parents"]:
            if p not in steps:
                raise SparkRuntimeError(f"reads {p}, which is not listed before it", task=tid)
        level = replica_level(tid) if t.get("replica_of") else 0
        if t["kind"] == "source":
            steps[tid] = Step(tid, "source", (), Layout(key=KeySpec(MESSAGE.attrs, shift=level)),
                              0)
            shapes[tid] = frozenset({BARE})
            continue
        parents = [steps[p] for p in t["parents"]]
        ins = frozenset().union(*(shapes[p] for p in t["parents"]))
        shapes[tid] = _shapes_out(typ, ins)
        ts = type_split(typ, t["config"])
        role: Role = "gathered" if ts.role in ("gathered", "source") else ts.role
        key: KeySpec | None = None
        if role == "keyed":
            key = KeySpec(ts.group_by, shift=level)
            if "obs" in ts.group_by and MSG in ins:
                if ts.fields is None or len(ts.fields) != 1:
                    role, key = "gathered", None  # a message touches several series
                elif ts.group_by == ("obs",) and ins == {MSG}:
                    role, key = "gathered", None  # one series: splitting it gains nothing
                else:
                    key = KeySpec(ts.group_by, next(iter(ts.fields)), level)
        group = None
        if role == "gathered":
            group = next((p.layout.group for p in parents if p.layout.group is not None), tid)
        inputs = tuple(_exchange(p, role, key, group) for p in parents)
        stage = max((p.stage + (e.kind != "forward") for p, e in zip(parents, inputs, strict=True)),
                    default=0)
        if role == "gathered":
            layout = Layout(group=group)
        elif role == "keyed" and key is not None:
            layout = Layout(key=key) if _keeps(typ, key, ins) else MIXED
        else:
            layout = _carried(typ, [p.layout for p in parents], ins)
        steps[tid] = Step(tid, role, inputs, layout, stage, key, group, ts.state_map)
    return SplitPlan(tuple(steps.values()), kr, _place_groups(steps, kr, groups or {}))


def _place_groups(steps: Mapping[str, Step], kr: KeyRanges, groups: Mapping[str, int],
                  ) -> tuple[tuple[str, int], ...]:
    """Groups (named by their first task) stay where ``groups`` had them, a new one goes to
    the emptiest partition; a replica's group goes where :func:`replicas_apart` puts it."""
    named = list(dict.fromkeys(s.group for s in steps.values() if s.group is not None))
    placed = {g: p for g, p in groups.items() if g in named and 0 <= p < kr.partitions}
    for g in named:
        if g not in placed:
            placed[g] = emptiest(placed.values(), kr.partitions)
    return tuple(sorted(replicas_apart(placed, steps, kr.partitions).items()))


def replicas_apart(groups: Mapping[str, int], steps: Mapping[str, Step], n: int,
                   ) -> dict[str, int]:
    """``groups`` with each replica's group at its primary's group's partition plus its
    level (mod ``n``), wherever moves put either: a replica's group is named by its first
    task, a replica whose primary heads the primary's group (their DAGs are copies)."""
    out = dict(groups)
    for g in groups:
        base, level = g.rpartition(REPLICA_MARK)[0], replica_level(g)
        if level and base in steps and steps[base].group in out:
            out[g] = (out[str(steps[base].group)] + level) % n
    return out


def emptiest(taken: Iterable[int], partitions: int) -> int:
    """The partition with the fewest gathered groups (the lowest of those)."""
    held = list(taken)
    return min(range(partitions), key=lambda q: (held.count(q), q))


def _exchange(parent: Step, role: Role, key: KeySpec | None, group: str | None) -> Exchange:
    if role == "keyed" and parent.layout != Layout(key=key):
        return Exchange(parent.task, "shuffle", key=key)
    if role == "gathered" and parent.layout != Layout(group=group):
        return Exchange(parent.task, "gather", group=group)
    return Exchange(parent.task, "forward")


def _carried(type_name: str, layouts: list[Layout], shapes: frozenset[str]) -> Layout:
    """A stateless task's output layout: its inputs' common one, if its outputs keep it."""
    if not layouts or any(lay != layouts[0] for lay in layouts):
        return MIXED
    lay = layouts[0]
    if lay.group is not None:
        return lay
    if lay.key is not None and _keeps(type_name, lay.key, shapes):
        return lay
    return MIXED


def order_key(seq: int, parent: int, tag: Any) -> tuple[Any, ...]:
    """An event's place in its consumer's input: its ``seq``, its parent's index, its tag.

    The consumer's ``j``-th output of that input has tag ``(*order_key(...), j)``, the input's
    tag nested, so a tag is built in constant time whatever its depth. Sorting by it is the
    shard worker's order (see the module doc).

    Examples
    --------
    >>> sorted([order_key(4, 0, (4, 0, 7, 1)), order_key(3, 1, 2), order_key(4, 0, (4, 0, 7, 0))])
    [(3, 1, 2), (4, 0, (4, 0, 7, 0)), (4, 0, (4, 0, 7, 1))]
    """
    return (seq, parent, tag)
