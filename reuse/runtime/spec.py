"""What a live run is configured with: one frozen, validated value (issue 32).

Why: a live run's settings were some thirty keywords of :func:`reuse.runtime.run.live_run`,
passed on (renamed, defaulted again, partly dropped) to two engines, the apps coordinator and
:class:`reuse.live.Engine`, and checked in six places. A :class:`RunSpec` is built **once**
(:meth:`~RunSpec.from_cli`, :meth:`~RunSpec.of`, :meth:`~RunSpec.from_journal`), and a bad
value or a refused combination is a one-line :class:`~reuse.runtime.SparkRuntimeError` naming
the option, raised on construction: before any JVM, Redis or broker connection starts.

The refused combinations are one table, :data:`reuse.runtime.refusals.REFUSED`
(:data:`~reuse.runtime.refusals.RESUME_REFUSED` for ``--resume``, a life event rather than a
setting): building a combination is deleting its row.
Nothing here imports Spark or touches the disk or the network (a broker URL's syntax only).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict, TypeVar, get_args, overload

from reuse.core.errors import ReuseError, StateError, shown
from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.pacing import PACED_BATCH
from reuse.runtime.common.policy import LIVE_MODES, Policy, live_policy
from reuse.runtime.common.run_secrets import secret_file
from reuse.runtime.dataplane.mqtt import is_masked, masked, with_password
from reuse.runtime.refusals import RESUME_REFUSED, first_refusal

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; only read by the type checker

__all__ = ["RunSpec", "Settings", "OPTIONS", "local_cores", "EngineKind", "BusKind", "Replicas", "Record"]

#: The engine a policy runs on: the shared query, or a query per partial DAG (the paper's).
EngineKind = Literal["inplace", "queries"]
#: The query-per-DAG engines' stream bus.
BusKind = Literal["file", "redis"]
#: Where k-safety's copies run: shards of the one shared query, or K+1 applications.
Replicas = Literal["shards", "apps"]
#: What sinks record: ``seq`` and digest (the batch's runs), or whole events (the live view).
Record = Literal["digest", "full"]

#: The option (or keyword, where ``reuse run`` has none) that sets each field: what an error
#: names.
OPTIONS: Mapping[str, str] = {
    "policy": "--mode/--merge/--unmerge/--default-sources", "match": "--match",
    "source": "--source", "split": "--split", "k_safe": "--k-safe",
    "replicate_min_users": "--replicate-min-users", "replicas": "--replicas",
    "rate": "--rate", "trigger_s": "--trigger-seconds", "step_seconds": "--step-seconds",
    "warmup_s": "--warmup-seconds", "stall_s": "--stall-timeout", "shards": "--shards",
    "max_events": "--max-events", "bus": "--bus", "bus_max_events": "--bus-max-events",
    "shared_disk": "--no-shared-disk", "pi_iterations": "--pi-iterations",
    "defrag_every": "--defrag-every", "check": "--no-check", "master": "--master",
    "root": "--root", "data_dir": "--data-dir", "cluster_dir": "--cluster-dir", "ui": "ui",
    "record": "record", "columnar": "--per-event", "latency_budget_s": "--latency-budget", "rebalance_s": "rebalance_s", "first_message_s": "first_message_s",
    "dead_s": "dead_s", "limit": "limit",
}

_REUSE_INPLACE = LIVE_MODES["reuse-inplace"]  # live_run's default: mode reuse, merge inplace


@dataclass(frozen=True)
class RunSpec:
    """A live run's settings, checked on construction, so that no engine, driver or front has
    to check (or default) anything again. The defaults are those of
    :func:`~reuse.runtime.run.live_run` and ``reuse run``.

    Examples
    --------
    >>> spec = RunSpec.of(k_safe=1, shards=2)
    >>> spec.engine, spec.broker_fed, spec.label
    ('inplace', False, 'reuse-inplace, match exact')
    >>> RunSpec.of(merge="partial", source="mqtt://127.0.0.1:1883")
    Traceback (most recent call last):
    ...
    reuse.runtime.SparkRuntimeError: --source mqtt://127.0.0.1:1883 needs the shared query (--merge inplace), not reuse
    >>> RunSpec.of(rate=0)
    Traceback (most recent call last):
    ...
    reuse.runtime.SparkRuntimeError: --rate must be a positive number of events/s, got 0
    """

    # -- what is decided and how it is enacted (one Policy: mode, merge, unmerge, sources) --
    policy: Policy = _REUSE_INPLACE
    match: str = "exact"
    # -- the axes of issue 32: source, layout, safety --
    source: str = "replay"  # or mqtt://HOST:PORT
    split: bool = False
    k_safe: int = 0
    replicate_min_users: int = 2
    replicas: Replicas = "shards"
    # -- time: the replay's pace, the steps, the patience --
    rate: float = 10.0
    trigger_s: float = 2.0
    step_seconds: float = 60.0
    warmup_s: float = 10.0
    stall_s: float = 60.0
    # -- the engines' sizes and bounds (None: the engine's default, see resolved) --
    shards: int | None = None
    max_events: int | None = None
    bus: BusKind = "file"
    bus_max_events: int | None = None
    shared_disk: bool = True
    pi_iterations: int = 1600
    defrag_every: int = 0
    record: Record = "digest"
    # issue 35: the shared query's shards run the tasks a batch at a time on columns; False
    # (--per-event) runs them one event at a time, for comparison. Split stages' tagged
    # exchange and the query-per-DAG engine run per event either way
    columnar: bool = True
    # issue 35, item 5: a replayed shared query hands its sources' seq over once they make a
    # batch or the oldest would outwait this many seconds (reuse.runtime.common.pacing); None:
    # a batch at every trigger that has new data, as before
    latency_budget_s: float | None = None
    rebalance_s: float = 10.0
    first_message_s: float = 30.0
    dead_s: float | None = None  # --replicas apps: an instance's heartbeat older than this
    limit: int | None = None  # the sources stop at this seq (tests)
    # -- where: Spark, the run directory (None: a new temporary one), data, cluster PIDs --
    master: str = "local[2]"
    root: Path | None = None
    data_dir: Path | None = None
    cluster_dir: Path | None = None  # None: reuse.runtime.cluster.DEFAULT_DIR
    ui: bool = False
    check: bool = True

    def __post_init__(self) -> None:
        for name, value in _checked_values(self).items():
            object.__setattr__(self, name, value)
        _check_syntax(self)
        why = first_refusal(self)
        if why is not None:
            raise SparkRuntimeError(why)
        _check_sizes(self)

    # --- builders ------------------------------------------------------------------------------

    @classmethod
    def of(cls, *, mode: str = "reuse", merge: str = "inplace", unmerge: str | None = None,
           default_sources: str | None = None, policy: Policy | str | None = None,
           **settings: Unpack[Settings]) -> RunSpec:
        """A spec from :func:`~reuse.runtime.run.live_run`'s keywords: the policy from
        ``policy`` (a :class:`Policy` or a :data:`LIVE_MODES` name) or else from ``mode``,
        ``merge``, ``unmerge`` (``None``: ``pause``) and ``default_sources``; every other
        keyword is a field.

        >>> RunSpec.of(mode="default", merge="partial").policy.label
        'default'
        >>> RunSpec.of(merge="inplace", default_sources="shared", mode="default")
        Traceback (most recent call last):
        ...
        reuse.runtime.SparkRuntimeError: --default-sources: default sources 'shared' needs a query-per-DAG engine (merge partial or relaunch); the shared query gives every Default dataflow its own sources
        """
        if isinstance(policy, Policy):
            pol = policy
        elif policy is not None:
            try:
                pol = live_policy(policy)
            except ReuseError as exc:  # live_run's policy= keyword; reuse run has none
                raise SparkRuntimeError(f"policy: {exc.message}") from None
        else:
            pol = _policy_of(mode, merge, unmerge or "pause", default_sources)
        # replace() builds through __init__, so every field is checked once, together
        return replace(cls(policy=pol), **settings)

    @classmethod
    def from_cli(cls, args: argparse.Namespace) -> RunSpec:
        """The spec of ``reuse run``'s parsed options (a new run; ``--resume`` reads the
        journal instead: :meth:`from_journal`)."""
        return cls(
            policy=_policy_of(args.mode, args.merge, args.unmerge or "pause",
                              args.default_sources),
            match=args.match, source=args.source, split=args.split, k_safe=args.k_safe,
            replicate_min_users=args.replicate_min_users, replicas=args.replicas,
            rate=args.rate, trigger_s=args.trigger_seconds, step_seconds=args.step_seconds,
            warmup_s=args.warmup_seconds, stall_s=args.stall_timeout, shards=args.shards,
            max_events=args.max_events, bus=args.bus, bus_max_events=args.bus_max_events,
            shared_disk=not args.no_shared_disk, pi_iterations=args.pi_iterations,
            defrag_every=args.defrag_every, master=args.master,
            root=None if args.root is None else Path(args.root),
            data_dir=None if args.data_dir is None else Path(args.data_dir),
            cluster_dir=None if args.cluster_dir is None else Path(args.cluster_dir),
            check=not args.no_check, columnar=not args.per_event,
            latency_budget_s=args.latency_budget)

    # --- the journal -----------------------------------------------------------------------------

    def to_journal(self) -> dict[str, object]:
        """The start record's parameters (:mod:`reuse.runtime.journal`; the dataflows and the
        trace are added by the run). Journal a :meth:`resolved` spec: a resume must run with
        the shards, batch bound and data folder the dead driver ran with.

        >>> RunSpec.of(shards=2).to_journal()["shards"], RunSpec().to_journal()["policy"]
        (2, 'reuse-inplace')
        """
        budget = ({} if self.latency_budget_s is None
                  else {"latency_budget_s": self.latency_budget_s})
        if self.dead_s is not None:
            budget["dead_s"] = self.dead_s
        return {"policy": self.policy.label, "mode": self.policy.mode.value,
                "shards": self.shards, "max_events": self.max_events,
                "step_seconds": self.step_seconds, "rate": self.rate,
                "trigger_s": self.trigger_s, "pi_iterations": self.pi_iterations,
                "data_dir": None if self.data_dir is None else str(self.data_dir),
                "master": self.master, "check": self.check,
                "defrag_every": self.defrag_every, "k_safe": self.k_safe,
                "replicate_min_users": self.replicate_min_users,
                "source": masked(self.source),  # a broker's password: in secrets/broker
                "match": self.match, "split": self.split, "shared_disk": self.shared_disk,
                "stall_s": self.stall_s, "columnar": self.columnar,
                "replicas": self.replicas, "record": self.record, **budget}

    @classmethod
    def from_journal(cls, params: Mapping[str, object], *, file: str) -> RunSpec:
        """The spec of a journaled run (its start record's parameters), to resume it.

        The journal is the shared query's (or a run across applications' start record,
        ``apps-run.json``), so the policy is ``mode`` on ``inplace``. Keys added after the first
        journals (k-safety, the broker source, matching, split, shared disk, the stall timeout,
        columnar, replicas, what sinks record) take their defaults when missing: a run journaled before issue 35
        ran per event, and resumes columnar (a task's state is the same either way, and so are
        its outputs). The root is the journal's folder;
        a resume does not warm up; what a journal does not hold (``ui``, ``cluster_dir``...)
        is the default: set it with :func:`dataclasses.replace`. A record that lacks a key,
        holds a wrong type or a refused setting is a one-line
        :class:`~reuse.core.errors.StateError` naming ``file``.

        >>> old = {"mode": "reuse", "shards": 2, "max_events": 40, "step_seconds": 15.0,
        ...        "master": "local[2]", "rate": 10.0, "trigger_s": 2.0, "pi_iterations": 1600,
        ...        "defrag_every": 0, "data_dir": "data", "check": True}
        >>> s = RunSpec.from_journal(old, file="run/journal.jsonl")
        >>> s.root, s.k_safe, s.stall_s, s.warmup_s
        (PosixPath('run'), 0, 60.0, 0.0)
        """
        p = _Record(params, file)
        apps = p.get("replicas", str, "shards") == "apps"
        try:
            return cls(
                policy=_policy_of(p.get("mode", str), "inplace", "pause", None),
                # a run across applications records none of its own: its instances settle them
                shards=p.get("shards", int, null=apps), max_events=p.get("max_events", int,
                                                                        null=apps),
                step_seconds=p.get("step_seconds", float), master=p.get("master", str),
                rate=p.get("rate", float), trigger_s=p.get("trigger_s", float),
                pi_iterations=p.get("pi_iterations", int),
                defrag_every=p.get("defrag_every", int),
                data_dir=Path(p.get("data_dir", str)), check=p.get("check", bool),
                # added after the first journals: today's defaults when missing
                k_safe=p.get("k_safe", int, 0),
                replicate_min_users=p.get("replicate_min_users", int, 2),
                source=_unmasked(p.get("source", str, "replay"), Path(file).parent, file),
                match=p.get("match", str, "exact"),
                split=p.get("split", bool, False),
                shared_disk=p.get("shared_disk", bool, True),
                stall_s=p.get("stall_s", float, 60.0),
                columnar=p.get("columnar", bool, True),
                latency_budget_s=(p.get("latency_budget_s", float)
                                  if "latency_budget_s" in params else None),
                replicas=p.get("replicas", str, "shards"),  # type: ignore[arg-type]  # checked
                record=p.get("record", str, "digest"),  # type: ignore[arg-type]  # checked
                dead_s=p.get("dead_s", float) if "dead_s" in params else None,
                root=Path(file).parent, warmup_s=0.0)
        except SparkRuntimeError as exc:
            raise StateError(f"start record is refused: {exc.message}", file=file) from None

    # --- what the code needs to know -------------------------------------------------------------

    @property
    def engine(self) -> EngineKind:
        """``"inplace"`` (the shared query) or ``"queries"`` (a query per partial DAG)."""
        return "inplace" if self.policy.engine == "inplace" else "queries"

    @property
    def broker_fed(self) -> bool:
        """Whether the sources' events come from an MQTT broker (not the generated replay)."""
        return self.source != "replay"

    @property
    def replicated_apps(self) -> bool:
        """Whether k-safety's copies are K+1 applications (``--replicas apps``)."""
        return self.replicas == "apps"

    @property
    def label(self) -> str:
        """How ``reuse run`` names the run: the policy and what it merges by, or Default's
        sources."""
        if self.policy.shares:
            return f"{self.policy.label}, match {self.match}"
        sources = self.policy.sources.value if self.policy.sources is not None else "private"
        return f"{self.policy.label}, {sources} sources"

    @property
    def known_shards(self) -> int | None:
        """The shared query's shards as known before a session starts: ``shards``, else the
        cores of a ``local[N]`` master (``None``: only the session knows)."""
        return self.shards if self.shards is not None else local_cores(self.master)

    @property
    def batch_max_events(self) -> int:
        """The shared query's bound on a batch's source ``seq`` (0: none): ``max_events``,
        else two triggers' worth on a replay and none broker-fed (each batch claims what has
        arrived, whatever the publishers' rate). With a latency budget, a paced batch must fit:
        two budgets' worth, and at least the paced batch (:data:`~reuse.runtime.common.pacing.
        PACED_BATCH`).

        >>> RunSpec().batch_max_events, RunSpec(source="mqtt://h:1883").batch_max_events
        (40, 0)
        >>> RunSpec(latency_budget_s=10.0).batch_max_events
        1000
        """
        if self.max_events is not None:
            return self.max_events
        if self.broker_fed:
            return 0
        if self.latency_budget_s is not None:
            return max(PACED_BATCH, round(2 * self.rate * self.latency_budget_s))
        return max(1, round(2 * self.rate * self.trigger_s))

    def resolved(self, *, shards: int, max_events: int, data_dir: str | os.PathLike[str],
                 ) -> RunSpec:
        """This spec with the values the engine settled (the session's shards, the batch
        bound, the data folder found): what the journal records."""
        return replace(self, shards=shards, max_events=max_events, data_dir=Path(data_dir))

    def check_resumable(self) -> None:
        """Refuse, with one line, a ``--resume`` of a run of this spec (:data:`~reuse.runtime.refusals.RESUME_REFUSED`).

        >>> RunSpec(source="mqtt://h:1883").check_resumable()  # issue 32: resumable
        >>> RunSpec.of(merge="partial").check_resumable()
        Traceback (most recent call last):
        ...
        reuse.runtime.SparkRuntimeError: --resume needs a run on the shared query (--merge inplace), not reuse: only it keeps a journal
        """
        why = first_refusal(self, RESUME_REFUSED)
        if why is not None:
            raise SparkRuntimeError(why)


class Settings(TypedDict, total=False):
    """:meth:`RunSpec.of`'s keywords besides the policy's: every other field, typed."""

    match: str
    source: str
    split: bool
    k_safe: int
    replicate_min_users: int
    replicas: Replicas
    rate: float
    trigger_s: float
    step_seconds: float
    warmup_s: float
    stall_s: float
    shards: int | None
    max_events: int | None
    bus: BusKind
    bus_max_events: int | None
    shared_disk: bool
    pi_iterations: int
    defrag_every: int
    record: Record
    columnar: bool
    latency_budget_s: float | None
    rebalance_s: float
    first_message_s: float
    dead_s: float | None
    limit: int | None
    master: str
    root: Path | None
    data_dir: Path | None
    cluster_dir: Path | None
    ui: bool
    check: bool


# --- the broker's password --------------------------------------------------------------------

def _unmasked(source: str, root: Path, file: str) -> str:
    """A journaled source URL with its password back, from ``<root>/secrets/broker`` (the
    run kept it there: :func:`reuse.runtime.common.run_secrets.keep_secret`)."""
    if not is_masked(source):
        return source
    kept = secret_file(root, "broker")
    try:
        return with_password(source, kept.read_text().strip())
    except FileNotFoundError:
        raise StateError(f"the broker's password is not in {kept}", file=file) from None


# --- values -------------------------------------------------------------------------------------


def _checked_values(s: RunSpec) -> dict[str, object]:
    """Every field's type and range, each a one-line error naming its option; the fields
    normalised (numbers to ``float``, paths to :class:`~pathlib.Path`)."""
    if not isinstance(s.policy, Policy):
        raise SparkRuntimeError(f"policy must be a Policy, got {_shown(s.policy)}")
    for name, flag in (("split", s.split), ("shared_disk", s.shared_disk), ("ui", s.ui),
                       ("check", s.check), ("columnar", s.columnar)):
        if not isinstance(flag, bool):
            raise _bad(name, "true or false", flag)
    for name, value, least, optional in (
            ("k_safe", s.k_safe, 0, False),
            ("replicate_min_users", s.replicate_min_users, 1, False),
            ("pi_iterations", s.pi_iterations, 0, False),
            ("defrag_every", s.defrag_every, 0, False),
            ("shards", s.shards, 1, True), ("max_events", s.max_events, 0, True),
            ("bus_max_events", s.bus_max_events, 0, True), ("limit", s.limit, 0, True)):
        if not (optional and value is None) and not _is_int(value, least):
            raise _bad(name, f"an integer >= {least}", value)
    for name, text, allowed in (("replicas", s.replicas, get_args(Replicas)),
                                ("bus", s.bus, get_args(BusKind)),
                                ("record", s.record, get_args(Record))):
        if text not in allowed:
            raise SparkRuntimeError(f"unknown {OPTIONS[name]} {_shown(text)} "
                                    f"({' or '.join(allowed)})")
    if not isinstance(s.master, str) or not s.master.strip():
        raise _bad("master", "a Spark master (local[2], spark://HOST:PORT)", s.master)
    out: dict[str, object] = {
        "rate": _number("rate", s.rate, "events/s", positive=True),
        "trigger_s": _number("trigger_s", s.trigger_s, "seconds", positive=True),
        "step_seconds": _number("step_seconds", s.step_seconds, "seconds", positive=True),
        "stall_s": _number("stall_s", s.stall_s, "seconds", positive=True),
        "first_message_s": _number("first_message_s", s.first_message_s, "seconds",
                                   positive=True),
        "warmup_s": _number("warmup_s", s.warmup_s, "seconds", positive=False),
        "rebalance_s": _number("rebalance_s", s.rebalance_s, "seconds", positive=False),
        "dead_s": (None if s.dead_s is None
                   else _number("dead_s", s.dead_s, "seconds", positive=True)),
        "latency_budget_s": (None if s.latency_budget_s is None
                             else _number("latency_budget_s", s.latency_budget_s, "seconds",
                                          positive=True)),
    }
    for name, path in (("root", s.root), ("data_dir", s.data_dir),
                       ("cluster_dir", s.cluster_dir)):
        if path is not None and not (isinstance(path, (str, os.PathLike)) and str(path)):
            raise _bad(name, "a folder's path", path)
        out[name] = None if path is None else Path(path)
    return out


def _check_syntax(s: RunSpec) -> None:
    """The broker URL's syntax and the match policy's name, with the checks their modules
    use (:func:`~reuse.runtime.dataplane.mqtt.parse_broker_url`,
    :func:`~reuse.tasks.matching.match_policy`, which
    :func:`~reuse.runtime.common.planners.make_planner` resolves names with)."""
    from reuse.runtime.dataplane.mqtt import parse_broker_url
    from reuse.tasks.matching import match_policy

    if not isinstance(s.source, str):
        raise _bad("source", "replay or mqtt://HOST:PORT", s.source)
    if s.broker_fed:
        try:
            parse_broker_url(s.source)
        except ReuseError as exc:
            raise _named("source", exc) from None
    if not isinstance(s.match, str):
        raise _bad("match", "the name of a match policy", s.match)
    try:
        match_policy(s.match)
    except ReuseError as exc:
        raise _named("match", exc) from None


def _check_sizes(s: RunSpec) -> None:
    """k-safety's K+1 copies need K+1 shards (:func:`reuse.analysis.blast.check_parameters`),
    checked here when the shards are known before the session starts (``--shards``, or a
    ``local[N]`` master; else the engine checks them). Across applications each instance is
    a Spark application of its own, so the shards of one do not bound K."""
    from reuse.analysis.blast import check_parameters

    n = s.known_shards
    if s.k_safe == 0 or s.replicated_apps or n is None:
        return
    try:
        check_parameters(n, s.k_safe, s.replicate_min_users)
    except ReuseError as exc:
        where = f"--shards {n}" if s.shards is not None else f"the cores of --master {s.master}"
        raise SparkRuntimeError(f"--k-safe {s.k_safe}: {exc.message} (shards: {where})") from None


def local_cores(master: str) -> int | None:
    """The shards the shared query gets by default on a ``local[N]`` master (``None``: not
    known before the session starts).

    >>> local_cores("local[2]"), local_cores("local"), local_cores("spark://h:7077")
    (2, 1, None)
    """
    if master == "local":
        return 1
    m = re.fullmatch(r"local\[(\d+|\*)(,\d+)?\]", master)
    if m is None:
        return None
    return os.cpu_count() or 1 if m.group(1) == "*" else int(m.group(1))


def _policy_of(mode: str, merge: str, unmerge: str, sources: str | None) -> Policy:
    """:meth:`Policy.of`, with its error naming the option at fault: the choices are added one
    at a time, so the one whose addition fails is the one to blame."""
    steps: tuple[tuple[str, Callable[[], Policy]], ...] = (
        ("--mode", lambda: Policy.of(mode)),
        ("--merge", lambda: Policy.of(mode, merge)),
        ("--unmerge", lambda: Policy.of(mode, merge, unmerge)),
        ("--default-sources", lambda: Policy.of(mode, merge, unmerge, sources)),
    )
    pol = _REUSE_INPLACE
    for option, build in steps:
        try:
            pol = build()
        except ReuseError as exc:
            message = exc.message if option in exc.message else f"{option}: {exc.message}"
            raise SparkRuntimeError(message) from None
    return pol


def _named(name: str, exc: ReuseError) -> SparkRuntimeError:
    """Another module's one-line refusal, with the option it is about in front."""
    option = OPTIONS.get(name, name)
    if option in exc.message:
        return SparkRuntimeError(exc.message)
    return SparkRuntimeError(f"{option}: {exc.message}")


def _bad(name: str, wanted: str, value: object, *, number: bool = False) -> SparkRuntimeError:
    """``<option> must be <wanted>, got <value>`` (``number``: a float shown as ``0``, not
    ``0.0``, as users type it)."""
    got = f"{value:g}" if number and isinstance(value, float) else _shown(value)
    return SparkRuntimeError(f"{OPTIONS[name]} must be {wanted}, got {got}")


def _shown(value: object) -> str:
    return shown(repr(value), 60)


def _is_int(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _number(name: str, value: object, unit: str, *, positive: bool) -> float:
    """``value`` as a finite ``float``, positive (or >= 0), else a one-line error."""
    wanted = f"a positive number of {unit}" if positive else f"a number of {unit} >= 0"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(name, wanted, value)
    x = float(value)
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise _bad(name, wanted, value, number=True)
    return x


# --- reading a start record ---------------------------------------------------------------------

_T = TypeVar("_T", int, float, str, bool)
_WORDS: Mapping[type, str] = {int: "an integer", float: "a number", str: "a string",
                              bool: "true or false"}


class _Record:
    """A journal's start record, read one typed key at a time; a missing key takes the
    default given (none: the key is required), as :func:`~reuse.runtime.run.resume_run` did."""

    def __init__(self, params: Mapping[str, object], file: str) -> None:
        if not isinstance(params, Mapping):
            raise StateError("start record's parameters are not an object", file=file)
        self.params, self.file = params, file

    @overload
    def get(self, key: str, kind: type[_T], default: _T | None = None) -> _T: ...

    @overload
    def get(self, key: str, kind: type[_T], default: None = None, *, null: bool) -> _T | None: ...

    def get(self, key: str, kind: type[_T], default: _T | None = None, *,
            null: bool = False) -> _T | None:
        """``null``: the key is required, and its ``null`` is a value (``None``)."""
        if null and key in self.params and self.params[key] is None:
            return None
        if key not in self.params:
            if default is None:
                raise StateError(f"start record is incomplete: it has no {key!r}",
                                 file=self.file)
            return default
        value = self.params[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise StateError(f"start record's {key!r} is not {_WORDS[kind]} "
                             f"(got {_shown(value)})", file=self.file)
        return value
