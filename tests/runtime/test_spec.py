"""``RunSpec`` (issue 32): every bad value and every refused combination is one line naming the
option, before anything starts; the journal round-trips; ``reuse run``'s options all reach it.
No Spark."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.core.errors import ReuseError, StateError
from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.policy import LIVE_MODES, Policy
from reuse.runtime.refusals import REFUSED, RESUME_REFUSED
from reuse.runtime.spec import OPTIONS, RunSpec, Settings

#: The keys ``live_run`` journals today, besides the dataflows and the trace.
JOURNAL_KEYS = {"policy", "mode", "shards", "max_events", "step_seconds", "rate", "trigger_s",
                "pi_iterations", "data_dir", "master", "check", "defrag_every", "k_safe",
                "replicate_min_users", "source", "match", "split", "shared_disk", "stall_s",
                "columnar", "replicas", "record"}
BROKER = "mqtt://127.0.0.1:1883"
FILE = "run/journal.jsonl"


def refusal(**kw: object) -> str:
    """The one line ``RunSpec.of(**kw)`` is refused with."""
    with pytest.raises(SparkRuntimeError) as exc:
        RunSpec.of(**kw)  # type: ignore[arg-type]
    line = str(exc.value)
    assert "\n" not in line and line
    return line


# --- good specs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [
    {},
    {"k_safe": 1, "shards": 2},
    {"k_safe": 3, "master": "spark://h:7077"},  # shards known only to the session
    {"split": True, "match": "semantic"},
    {"source": BROKER, "k_safe": 1},
    {"k_safe": 1, "replicas": "apps", "replicate_min_users": 1},
    {"mode": "default", "merge": "partial", "default_sources": "shared", "bus": "redis",
     "bus_max_events": 0},
    {"policy": "reuse-relaunch-lazy", "match": "semantic"},
    {"shared_disk": False, "master": "spark://h:7077", "max_events": 0, "warmup_s": 0.0},
    {"rate": 1, "trigger_s": 0.5, "step_seconds": 15, "stall_s": 5, "dead_s": 3.0,
     "limit": 300, "record": "full", "rebalance_s": 0, "ui": True, "check": False},
    {"columnar": False, "split": True},
])
def test_good_specs_build(kw: dict[str, object]) -> None:
    spec = RunSpec.of(**kw)  # type: ignore[arg-type]
    assert isinstance(spec.rate, float) and isinstance(spec.stall_s, float)
    assert dataclasses.replace(spec) == spec  # checked again, still good


def test_defaults_are_live_runs() -> None:
    spec = RunSpec()
    assert spec.policy == LIVE_MODES["reuse-inplace"] == RunSpec.of().policy
    assert (spec.match, spec.source, spec.split, spec.k_safe, spec.replicate_min_users,
            spec.replicas) == ("exact", "replay", False, 0, 2, "shards")
    assert (spec.rate, spec.trigger_s, spec.step_seconds, spec.warmup_s, spec.stall_s) == \
        (10.0, 2.0, 60.0, 10.0, 60.0)
    assert (spec.shards, spec.max_events, spec.bus, spec.bus_max_events, spec.shared_disk,
            spec.pi_iterations, spec.defrag_every, spec.master, spec.root, spec.data_dir,
            spec.check, spec.ui) == (None, None, "file", None, True, 1600, 0, "local[2]",
                                     None, None, True, False)
    assert spec.columnar is True  # issue 35: the shards run columnar unless --per-event


def test_the_spec_is_frozen_and_paths_are_paths() -> None:
    spec = RunSpec.of(root="run", data_dir="data")  # type: ignore[arg-type]
    assert spec.root == Path("run") and spec.data_dir == Path("data")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.k_safe = 1  # type: ignore[misc]


def test_every_field_has_its_option_and_of_takes_every_field() -> None:
    names = {f.name for f in dataclasses.fields(RunSpec)}
    assert set(OPTIONS) == names
    assert set(Settings.__annotations__) == names - {"policy"}


# --- bad values -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kw, option, what", [
    ({"rate": 0}, "--rate", "positive number of events/s, got 0"),
    ({"rate": -1.5}, "--rate", "got -1.5"),
    ({"rate": math.nan}, "--rate", "got nan"),
    ({"rate": math.inf}, "--rate", "got inf"),
    ({"rate": "10"}, "--rate", "got '10'"),
    ({"trigger_s": 0}, "--trigger-seconds", "positive number of seconds"),
    ({"step_seconds": -1}, "--step-seconds", "positive number of seconds"),
    ({"stall_s": 0}, "--stall-timeout", "must be a positive number of seconds, got 0"),
    ({"warmup_s": -1}, "--warmup-seconds", "number of seconds >= 0"),
    ({"k_safe": -1}, "--k-safe", "an integer >= 0, got -1"),
    ({"k_safe": 1.0}, "--k-safe", "an integer >= 0"),
    ({"k_safe": True}, "--k-safe", "got True"),
    ({"replicate_min_users": 0}, "--replicate-min-users", "an integer >= 1, got 0"),
    ({"shards": 0}, "--shards", "an integer >= 1, got 0"),
    ({"max_events": -1}, "--max-events", "an integer >= 0"),
    ({"bus_max_events": -5}, "--bus-max-events", "an integer >= 0"),
    ({"pi_iterations": -1}, "--pi-iterations", "an integer >= 0"),
    ({"defrag_every": -2}, "--defrag-every", "an integer >= 0"),
    ({"limit": -1}, "limit", "an integer >= 0"),
    ({"bus": "kafka"}, "--bus", "'kafka' (file or redis)"),
    ({"replicas": "cloud"}, "--replicas", "'cloud' (shards or apps)"),
    ({"record": "some"}, "record", "(digest or full)"),
    ({"split": "yes"}, "--split", "true or false"),
    ({"shared_disk": 0}, "--no-shared-disk", "true or false"),
    ({"check": None}, "--no-check", "true or false"),
    ({"columnar": 1}, "--per-event", "true or false, got 1"),
    ({"master": ""}, "--master", "a Spark master"),
    ({"root": ""}, "--root", "a folder's path"),
    ({"dead_s": 0}, "dead_s", "positive number of seconds"),
    ({"first_message_s": -1}, "first_message_s", "positive number of seconds"),
    ({"rebalance_s": -1}, "rebalance_s", "number of seconds >= 0"),
    ({"source": "redis://h:6379"}, "--source", "the scheme must be mqtt://"),
    ({"source": "mqtt://h:99999"}, "--source", "1..65535"),
    ({"source": "Replay"}, "--source", "bad broker URL 'Replay'"),
    ({"source": 1883}, "--source", "replay or mqtt://HOST:PORT"),
    ({"match": "fuzzy"}, "--match", "unknown match policy 'fuzzy'"),
    ({"mode": "both"}, "--mode", "unknown mode 'both'"),
    ({"merge": "inline"}, "--merge", "unknown merge 'inline'"),
    ({"merge": "partial", "unmerge": "free"}, "--unmerge", "inplace engine's own"),
    ({"unmerge": "never"}, "--unmerge", "unknown unmerge 'never'"),
    ({"mode": "default", "default_sources": "shared"}, "--default-sources",
     "needs a query-per-DAG engine"),
    ({"default_sources": "public"}, "--default-sources", "unknown default sources"),
    ({"policy": "reuse-everything"}, "policy", "unknown live mode 'reuse-everything'"),
])
def test_a_bad_value_is_one_line_naming_its_option(kw: dict[str, object], option: str,
                                                  what: str) -> None:
    line = refusal(**kw)
    assert option in line and what in line, line


# --- refused combinations -------------------------------------------------------------------------

#: A spec for each row of REFUSED (its index there), as ``reuse run`` would be asked.
COMBINATIONS = [
    ({"merge": "partial", "source": BROKER}, 0),
    ({"merge": "relaunch", "split": True}, 1),
    ({"merge": "partial", "k_safe": 1}, 2),
    ({"merge": "partial", "k_safe": 1, "replicas": "apps"}, 3),
    ({"merge": "partial", "latency_budget_s": 5.0}, 4),
    ({"merge": "partial", "shared_disk": False}, 5),
    ({"mode": "default", "match": "semantic"}, 6),
    ({"replicas": "apps"}, 7),
]


@pytest.mark.parametrize("kw, row", COMBINATIONS)
def test_a_refused_combination_is_its_rows_one_line(kw: dict[str, object], row: int) -> None:
    line = refusal(**kw)
    assert line.startswith(REFUSED[row].message.split("{")[0]), line
    assert line.startswith("--"), line  # it names the option


def test_every_row_of_the_table_is_tested_and_names_an_option() -> None:
    assert sorted(row for _, row in COMBINATIONS) == list(range(len(REFUSED)))
    for row in (*REFUSED, *RESUME_REFUSED):
        assert row.message.startswith("--") and row.kind in ("not built", "engine",
                                                             "impossible")


@pytest.mark.parametrize("kw, what", [
    ({"k_safe": 2}, "K=2 needs K+1=3 distinct executors"),  # local[2]: two shards
    ({"k_safe": 1, "shards": 1}, "K=1 needs K+1=2 distinct executors"),
    ({"k_safe": 2, "master": "local"}, "but there are only 1"),
])
def test_k_safety_needs_k_plus_one_shards_when_they_are_known(kw: dict[str, object],
                                                              what: str) -> None:
    line = refusal(**kw)
    assert line.startswith(f"--k-safe {kw['k_safe']}:") and what in line, line


def test_today_refused_combinations_stay_refused() -> None:
    """The refusals of ``live_run`` (``--split`` needs the shared query), of ``_apps_run``
    and of ``InplaceRuntime``, each as its own case."""
    for kw in ({"split": True, "merge": "partial"},
               {"replicas": "apps", "k_safe": 1, "merge": "partial"},
               {"merge": "partial", "source": BROKER}, {"merge": "partial", "k_safe": 1},
               {"merge": "partial", "shared_disk": False}):
        refusal(**kw)


# --- the same answers as the checks they come from -----------------------------------------------


@pytest.mark.parametrize("mode", ["reuse", "default"])
@pytest.mark.parametrize("match", ["exact", "semantic", "fuzzy"])
def test_match_is_refused_exactly_when_make_planner_refuses_it(mode: str, match: str) -> None:
    from reuse.runtime.common.planners import make_planner

    try:
        make_planner(mode == "reuse", match)
        planner_ok = True
    except ReuseError:
        planner_ok = False
    try:
        RunSpec.of(mode=mode, match=match)
        spec_ok = True
    except SparkRuntimeError as exc:
        spec_ok = False
        assert "--match" in str(exc)
    assert spec_ok == planner_ok


@pytest.mark.parametrize("k", [0, 1, 2])
@pytest.mark.parametrize("users", [0, 1, 2])
def test_apps_are_refused_exactly_when_check_apps_refuses(k: int, users: int) -> None:
    from reuse.runtime.apps.roles import check_apps

    try:
        check_apps(k, users)
        apps_ok = True
    except ReuseError:
        apps_ok = False
    try:
        RunSpec(k_safe=k, replicate_min_users=users, replicas="apps")
        spec_ok = True
    except SparkRuntimeError:
        spec_ok = False
    assert spec_ok == apps_ok


@pytest.mark.parametrize("shards", [1, 2, 3])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_k_safety_is_refused_exactly_when_check_parameters_refuses(shards: int, k: int) -> None:
    from reuse.analysis.blast import check_parameters

    try:
        check_parameters(shards, k, 2)
        model_ok = True
    except ReuseError:
        model_ok = False
    try:
        RunSpec(k_safe=k, shards=shards)
        spec_ok = True
    except SparkRuntimeError:
        spec_ok = False
    assert spec_ok == model_ok


@pytest.mark.parametrize("url", ["mqtt://h", "mqtt://h:1", "mqtt://[::1]:1884", "mqtt://",
                                 "mqtt://u:p@h:1883", "mqtt://h:1883/x", "tcp://h:1883"])
def test_a_source_is_refused_exactly_when_parse_broker_url_refuses(url: str) -> None:
    from reuse.runtime.dataplane.mqtt import parse_broker_url

    try:
        parse_broker_url(url)
        url_ok = True
    except ReuseError:
        url_ok = False
    try:
        RunSpec(source=url)
        spec_ok = True
    except SparkRuntimeError as exc:
        spec_ok = False
        assert str(exc).startswith("--source: ")
    assert spec_ok == url_ok


@pytest.mark.parametrize("mode", ["reuse", "default", "x"])
@pytest.mark.parametrize("merge", ["inplace", "partial"])
@pytest.mark.parametrize("unmerge", ["pause", "free", "lazy"])
@pytest.mark.parametrize("sources", [None, "private", "shared"])
def test_a_policy_is_refused_exactly_when_policy_refuses_it(
        mode: str, merge: str, unmerge: str, sources: str | None) -> None:
    try:
        pol = Policy.of(mode, merge, unmerge, sources)
    except ReuseError:
        pol = None
    try:
        spec = RunSpec.of(mode=mode, merge=merge, unmerge=unmerge, default_sources=sources)
        assert spec.policy == pol
    except SparkRuntimeError as exc:
        assert pol is None and str(exc).startswith("--"), exc


# --- resuming ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kw, what", [
    ({"merge": "partial"}, "--resume needs a run on the shared query"),
])
def test_what_cannot_be_resumed_is_refused(kw: dict[str, object], what: str) -> None:
    spec = RunSpec.of(**kw)  # type: ignore[arg-type]
    with pytest.raises(SparkRuntimeError, match=what) as exc:
        spec.check_resumable()
    assert "\n" not in str(exc.value)


def test_a_shared_query_run_on_replay_is_resumable() -> None:
    for spec in (RunSpec(), RunSpec(split=True), RunSpec(k_safe=1, shards=2),
                 RunSpec(split=True, k_safe=1, shards=2),
                 RunSpec.of(mode="default", shared_disk=False), RunSpec(source=BROKER)):
        spec.check_resumable()


def test_an_apps_runs_start_record_round_trips_with_its_replicas_and_timeout() -> None:
    """A run across applications is resumed from its start record (issue 34): the record must
    bring back ``--replicas apps`` and the heartbeat timeout it ran with."""
    spec = RunSpec.of(replicas="apps", k_safe=1, dead_s=7.5, root=Path("run"), warmup_s=0.0,
                      data_dir=Path("d"))  # shards and the batch bound: the instances'
    assert spec.shards is None and spec.max_events is None
    spec.check_resumable()
    params = spec.to_journal()
    assert params["replicas"] == "apps" and params["dead_s"] == 7.5
    assert RunSpec.from_journal(json.loads(json.dumps(params)), file=FILE) == spec


# --- derived -------------------------------------------------------------------------------------


def test_what_the_code_needs_to_know() -> None:
    spec = RunSpec.of(source=BROKER, k_safe=1, shards=2)
    assert (spec.engine, spec.broker_fed, spec.replicated_apps) == ("inplace", True, False)
    assert spec.batch_max_events == 0 and spec.known_shards == 2
    apps = RunSpec(k_safe=1, replicas="apps")
    assert apps.replicated_apps and apps.known_shards == 2  # local[2]
    queries = RunSpec.of(mode="default", merge="partial")
    assert queries.engine == "queries" and queries.label == "default, private sources"
    assert RunSpec(rate=5.0, trigger_s=1.0).batch_max_events == 10
    assert RunSpec(max_events=7).batch_max_events == 7
    assert RunSpec(master="spark://h:7077").known_shards is None
    assert RunSpec(match="semantic").label == "reuse-inplace, match semantic"
    done = RunSpec().resolved(shards=4, max_events=40, data_dir="data/riotbench")
    assert (done.shards, done.max_events, done.data_dir) == (4, 40, Path("data/riotbench"))


# --- the journal ---------------------------------------------------------------------------------


def test_the_journal_has_todays_keys_and_round_trips() -> None:
    spec = RunSpec.of(mode="default", k_safe=1, replicate_min_users=1, source=BROKER,
                      shards=3, max_events=0, data_dir=Path("d"), root=Path("run"),
                      warmup_s=0.0, stall_s=5.0, check=False, defrag_every=4,
                      shared_disk=False, columnar=False)
    params = spec.to_journal()
    assert set(params) == JOURNAL_KEYS
    assert params["policy"] == "default-inplace" and params["data_dir"] == "d"
    assert RunSpec.from_journal(json.loads(json.dumps(params)), file=FILE) == spec


def test_an_old_start_record_loads_with_todays_defaults() -> None:
    """A record from before k-safety, the broker, matching, split, shared disk, the stall
    timeout and columnar shards, with the keys the run adds beside the spec (dataflows,
    trace, t0, start seq). Such a run ran per event and resumes columnar: the states are the
    same either way (the kernel contract), and so are the outputs."""
    old = {"flows": [], "ops": [], "t0": 1, "start_seq": 2, "policy": "reuse-inplace",
           "mode": "reuse", "shards": 2, "max_events": 40, "step_seconds": 15, "rate": 10,
           "trigger_s": 2.0, "pi_iterations": 1600, "data_dir": "/data",
           "master": "local[2]", "check": True, "defrag_every": 0}
    spec = RunSpec.from_journal(old, file=FILE)
    assert spec == RunSpec(shards=2, max_events=40, step_seconds=15.0, data_dir=Path("/data"),
                           root=Path("run"), warmup_s=0.0)
    assert (spec.k_safe, spec.replicate_min_users, spec.source, spec.match, spec.split,
            spec.shared_disk, spec.stall_s, spec.columnar) == (0, 2, "replay", "exact", False,
                                                               True, 60.0, True)


@pytest.mark.parametrize("change, what", [
    ({"shards": None}, "'shards' is not an integer"),
    ({"shards": "2"}, "'shards' is not an integer"),
    ({"shards": True}, "'shards' is not an integer"),
    ({"check": "yes"}, "'check' is not true or false"),
    ({"rate": "fast"}, "'rate' is not a number"),
    ({"mode": 3}, "'mode' is not a string"),
    ({"mode": "both"}, "refused: --mode: unknown mode 'both'"),
    ({"columnar": "yes"}, "'columnar' is not true or false"),
    ({"mode": "default", "match": "semantic"}, "refused: --match semantic needs --mode reuse"),
    ({"stall_s": 0}, "refused: --stall-timeout must be a positive number"),
])
def test_a_broken_start_record_is_one_line_naming_the_file(change: dict[str, object],
                                                           what: str) -> None:
    params = {**RunSpec(shards=2, max_events=40, data_dir=Path("d")).to_journal(), **change}
    with pytest.raises(StateError) as exc:
        RunSpec.from_journal(params, file=FILE)
    line = str(exc.value)
    assert line.startswith(f"{FILE}: start record") and what in line and "\n" not in line, line


@pytest.mark.parametrize("missing", ["mode", "shards", "max_events", "step_seconds", "master",
                                     "rate", "trigger_s", "pi_iterations", "defrag_every",
                                     "data_dir", "check"])
def test_a_start_record_without_a_required_key_is_incomplete(missing: str) -> None:
    params = RunSpec(shards=2, max_events=40, data_dir=Path("d")).to_journal()
    del params[missing]
    with pytest.raises(StateError, match=f"incomplete: it has no '{missing}'") as exc:
        RunSpec.from_journal(params, file=FILE)
    assert exc.value.file == FILE


def test_an_unresolved_spec_is_no_start_record() -> None:
    """The journal holds what the engine ran with: without the shards (``None``: Spark's
    cores) a resume could not run the same shards, so such a record is refused."""
    with pytest.raises(StateError, match="'shards' is not an integer"):
        RunSpec.from_journal(RunSpec().to_journal(), file=FILE)


_numbers = st.floats(min_value=1e-3, max_value=1e5, allow_nan=False, allow_infinity=False)


@st.composite
def journaled_specs(draw: st.DrawFn) -> RunSpec:
    """A valid, resolved spec of a shared-query run, with what the journal does not hold at a
    resume's values."""
    mode = draw(st.sampled_from(["reuse", "default"]))
    shards = draw(st.integers(1, 64))
    k = draw(st.integers(0, shards - 1))
    split = k == 0 and draw(st.booleans())
    source = draw(st.sampled_from(["replay", BROKER, "mqtt://h:1"]))
    return RunSpec(
        policy=Policy.of(mode, "inplace"),
        match=draw(st.sampled_from(["exact", "semantic"])) if mode == "reuse" else "exact",
        source=source, split=split, k_safe=k, replicate_min_users=draw(st.integers(1, 5)),
        rate=draw(_numbers), trigger_s=draw(_numbers), step_seconds=draw(_numbers),
        stall_s=draw(_numbers), shards=shards, max_events=draw(st.integers(0, 10**9)),
        shared_disk=draw(st.booleans()), pi_iterations=draw(st.integers(0, 10**6)),
        defrag_every=draw(st.integers(0, 100)),
        master=draw(st.sampled_from(["local[2]", "local", "local[*]", "spark://h:7077"])),
        data_dir=Path(draw(st.sampled_from(["data/riotbench", "/srv/d"]))),
        check=draw(st.booleans()), columnar=draw(st.booleans()), root=Path("run"),
        warmup_s=0.0)


@given(journaled_specs())
def test_any_valid_spec_round_trips_through_the_journal(spec: RunSpec) -> None:
    text = json.dumps(spec.to_journal())  # as the journal writes it: one JSON line
    assert RunSpec.from_journal(json.loads(text), file=FILE) == spec


# --- reuse run's options -------------------------------------------------------------------------


def _run_args(*options: str) -> argparse.Namespace:
    from reuse.cli import build_parser

    return build_parser().parse_args(["run", "--out", "o.csv", *options])


def test_reuse_run_defaults_are_the_specs() -> None:
    from reuse.runtime.cluster import DEFAULT_DIR

    assert RunSpec.from_cli(_run_args()) == RunSpec(cluster_dir=Path(DEFAULT_DIR))


@pytest.mark.parametrize("options, kw", [
    (["--mode", "default", "--merge", "partial", "--unmerge", "stop", "--default-sources",
      "shared", "--bus", "redis", "--bus-max-events", "500", "--rate", "5",
      "--trigger-seconds", "1", "--step-seconds", "15", "--warmup-seconds", "0",
      "--stall-timeout", "9", "--pi-iterations", "10", "--defrag-every", "3",
      "--master", "spark://h:7077", "--cluster-dir", "c", "--data-dir", "d", "--root", "r",
      "--no-check"],
     {"mode": "default", "merge": "partial", "unmerge": "stop", "default_sources": "shared",
      "bus": "redis", "bus_max_events": 500, "rate": 5.0, "trigger_s": 1.0,
      "step_seconds": 15.0, "warmup_s": 0.0, "stall_s": 9.0, "pi_iterations": 10,
      "defrag_every": 3, "master": "spark://h:7077", "cluster_dir": Path("c"),
      "data_dir": Path("d"), "root": Path("r"), "check": False}),
    (["--match", "semantic", "--shards", "3", "--max-events", "0", "--k-safe", "2",
      "--replicate-min-users", "1", "--source", BROKER, "--no-shared-disk"],
     {"match": "semantic", "shards": 3, "max_events": 0, "k_safe": 2,
      "replicate_min_users": 1, "source": BROKER, "shared_disk": False}),
    (["--split"], {"split": True}),
    (["--per-event"], {"columnar": False}),
    (["--k-safe", "1", "--replicas", "apps"], {"k_safe": 1, "replicas": "apps"}),
])
def test_reuse_run_options_reach_the_spec(options: list[str], kw: dict[str, object]) -> None:
    from reuse.runtime.cluster import DEFAULT_DIR

    kw.setdefault("cluster_dir", Path(DEFAULT_DIR))
    assert RunSpec.from_cli(_run_args(*options)) == RunSpec.of(**kw)  # type: ignore[arg-type]


def test_every_option_of_reuse_run_is_read() -> None:
    """A new option of ``reuse run`` must reach the spec (or be one of the few that do not
    configure a run: its input, output and ``--resume``)."""
    read: set[str] = set()

    class Reading(argparse.Namespace):
        def __getattribute__(self, name: str) -> object:
            read.add(name)
            return super().__getattribute__(name)

    args = _run_args()
    spy = Reading(**vars(args))
    read.clear()
    RunSpec.from_cli(spy)
    assert set(vars(args)) - read == {"command", "func", "usage_error", "dags", "trace",
                                      "resume", "out"}


def test_reuse_run_refusals_come_from_the_spec() -> None:
    with pytest.raises(SparkRuntimeError, match="^--split needs the shared query"):
        RunSpec.from_cli(_run_args("--split", "--merge", "partial", "--unmerge", "lazy"))
    assert RunSpec.from_cli(_run_args("--split", "--k-safe", "1", "--shards", "2")).split
    with pytest.raises(SparkRuntimeError, match="^--k-safe needs the shared query"):
        RunSpec.from_cli(_run_args("--merge", "partial", "--unmerge", "lazy", "--k-safe", "1"))


def test_columnar_reaches_the_live_engine_and_the_apps_instances() -> None:
    """``columnar`` (issue 35) is a keyword of :class:`reuse.live.Engine` and a field of an
    apps instance's spec, true by default; an instance spec written before it reads as
    columnar."""
    import inspect

    from reuse.live.engine import Engine
    from reuse.runtime.apps.instance import InstanceSpec

    assert inspect.signature(Engine).parameters["columnar"].default is True
    base = {"id": "i", "home": True, "run": "r", "redis": "redis://h", "root": "x", "t0": 0,
            "start_seq": 0, "flows": []}
    assert InstanceSpec.from_dict(base).columnar is True
    off = InstanceSpec.from_dict({**base, "columnar": False})
    assert InstanceSpec.from_dict(json.loads(json.dumps(off.as_dict()))).columnar is False


# --- no Spark ------------------------------------------------------------------------------------


def test_the_spec_does_not_import_spark() -> None:
    code = ("import sys, reuse.runtime.spec as s; "
            "s.RunSpec.of(k_safe=1, shards=2, source='mqtt://h:1883', match='semantic'); "
            "assert 'pyspark' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_docs_list_every_combination_not_built_yet() -> None:
    """``docs/runtime.md``'s table of refusals has one "not built" row per such row of the
    spec's tables: deleting a row (building the combination) must update the docs."""
    from reuse.runtime.refusals import REFUSED, RESUME_REFUSED
    from reuse.testing import ROOT

    text = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")
    table = text.split("Combinations the spec refuses today", 1)[1].split("\n\n", 2)[1]
    rows = [r for r in table.splitlines() if r.startswith("| ") and "| not built |" in r]
    assert len(rows) == sum(r.kind == "not built" for r in (*REFUSED, *RESUME_REFUSED))


def test_a_latency_budget_is_checked_journaled_and_sizes_the_batch_bound() -> None:
    """Issue 35, item 5: ``--latency-budget S`` paces the replay; a paced batch must fit the
    batch bound, and a resumed run keeps its pace (a journal without it: none)."""
    s = RunSpec.of(latency_budget_s=10, rate=100.0)
    assert s.latency_budget_s == 10.0 and s.batch_max_events == 2000
    back = RunSpec.from_journal(s.resolved(shards=2, max_events=s.batch_max_events,
                                           data_dir="data").to_journal(), file="r/journal.jsonl")
    assert back.latency_budget_s == 10.0
    assert "latency_budget_s" not in RunSpec().to_journal()
    with pytest.raises(SparkRuntimeError, match="--latency-budget must be a positive number"):
        RunSpec.of(latency_budget_s=0)
    # a broker-fed run is paced by its broker input (its batches stay unbounded)
    fed = RunSpec.of(latency_budget_s=4, source=BROKER)
    assert fed.latency_budget_s == 4.0 and fed.batch_max_events == 0


def test_the_docs_table_of_spark_tests_by_axis_names_real_tests_and_holds_the_pairs() -> None:
    """``docs/runtime.md``'s table of Spark tests by axis: every row names a test function
    that exists, and its rows hold every pair of two axes' values but the one the docs name
    (``--replicas apps`` on a run with no death, which the composition matrix runs)."""
    import itertools
    import re

    from reuse.testing import ROOT

    text = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")
    rows = [r for r in text.splitlines() if r.startswith("| `tests/")]
    assert len(rows) >= 10
    combos = []
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        path, func = cells[0].strip("`").split("::")
        src = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {func}\(", src, re.M), cells[0]
        values = [c.split(" / ") for c in cells[1:]]
        if len(values[0]) == 2:  # one test, two legs: the i-th value of each axis with two
            combos += [[v[i] if len(v) == 2 else v[0] for v in values] for i in range(2)]
        else:
            combos.append([v[0] for v in values])
    axes = [("replay", "mqtt"), ("whole", "split"), ("none", "k-safe", "apps"),
            ("exact", "semantic"), ("one run", "death"), ("run", "engine")]
    held = {(i, c[i], j, c[j]) for c in combos for i, j in itertools.combinations(range(6), 2)}
    missing = {(i, a, j, b) for i, j in itertools.combinations(range(6), 2)
               for a in axes[i] for b in axes[j]} - held
    assert missing == {(2, "apps", 4, "one run")}, missing
