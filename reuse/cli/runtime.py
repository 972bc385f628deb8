"""``reuse run`` (live trace replay on Spark -> CSV) and ``reuse cluster start|stop|status``.

Thin: parse arguments, make one library call, print. :func:`add_parsers` plugs both commands
into the main ``reuse`` parser (:func:`reuse.cli.main.build_parser`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reuse.core.errors import ReuseError
from reuse.runtime.rows import StepRow
from reuse.tasks.matching import MATCH_POLICIES

__all__ = ["add_parsers", "cmd_run", "cmd_cluster"]


def cmd_run(args: argparse.Namespace) -> int:
    from reuse.core.dataflow import load_dataflows
    from reuse.core.traces import check_trace, load_trace
    from reuse.runtime.run import live_run, resume_run, write_rows

    if args.resume:
        rows = resume_run(args.resume, cluster_dir=args.cluster_dir)
        write_rows(rows, args.out)
        _report(rows, args.out, f"resumed {args.resume}")
        return 0
    if not args.dags or not args.trace:
        args.usage_error("--dags and --trace are required (or --resume RUN_DIR)")
    d = Path(args.dags)
    if not d.is_dir():
        raise ReuseError("is not a directory of dataflow JSON files", file=args.dags)
    flows = {f.id: f for f in load_dataflows([d])}
    ops = load_trace(args.trace)
    check_trace(ops, flows, file=args.trace)
    from reuse.runtime.spec import RunSpec

    spec = RunSpec.from_cli(args)  # every option checked here, once, before any JVM starts
    root = spec.root if spec.root is not None else Path(tempfile.mkdtemp(prefix="reuse-run-"))
    rows = live_run(flows, ops, replace(spec, root=root))
    write_rows(rows, args.out)
    _report(rows, args.out, f"run dir {root}; {spec.label}")
    return 0


def _report(rows: Sequence[StepRow], out: str, what: str) -> None:
    peak = max(rows, key=lambda r: r["running_tasks"] + r["paused_tasks"])
    failures = sum(r.get("failures") or 0 for r in rows)
    lags = [lag for r in rows if (lag := r.get("max_lag_events")) is not None]
    print(f"{len(rows)} steps -> {out} ({what}); peak {peak['running_tasks']} tasks at step "
          f"{peak['step']}: {peak['cores']} cores; lost {sum(r['lost'] or 0 for r in rows)}, "
          f"duplicated {sum(r['duplicated'] or 0 for r in rows)}"
          + (f"; {failures} failure(s) recovered" if failures else "")
          + (f"; max consumer lag {max(lags)} events" if lags else ""))


def cmd_cluster(args: argparse.Namespace) -> int:
    from reuse.runtime import cluster

    if args.action == "start":
        res = cluster.start(args.dir, port=args.port, ui_port=args.ui_port, cores=args.cores,
                            memory=args.memory, workers=args.workers, hide=args.hide,
                            listen=args.listen)
    elif args.action == "stop":
        res = cluster.stop(args.dir)
    else:
        res = cluster.status(args.dir, ui_port=args.ui_port)
    print(json.dumps(res, indent=1))
    return 0


def add_parsers(subparsers: Any) -> None:
    """Add ``run`` and ``cluster`` to an ``argparse`` subparsers object (sets ``func``)."""
    from reuse.runtime.cluster import DEFAULT_DIR

    r = subparsers.add_parser("run", help="replay a trace live on Spark and write a CSV per op")
    r.add_argument("--dags", help="directory of dataflow JSON files")
    r.add_argument("--trace", help="trace JSON ({'ops': [...]})")
    r.add_argument("--resume", metavar="RUN_DIR", default=None,
                   help="finish a shared-query run whose process died: RUN_DIR is its --root; "
                        "the dataflows, trace and parameters come from its journal, and --out "
                        "gets the whole trace's rows")
    r.add_argument("--mode", choices=["reuse", "default"], default="reuse")
    r.add_argument("--match", choices=list(MATCH_POLICIES), default="exact",
                   help="what Reuse merges by: the config as written (exact, the paper's) or "
                        "its meaning (semantic: canonical configs, order-free inputs, a "
                        "narrower filter reading a wider running one); Default takes exact")
    r.add_argument("--merge", choices=["inplace", "partial", "relaunch"], default="inplace",
                   help="the engine and how it enacts a merge: inplace (the default: one "
                        "long-running shared query runs every task, a merge or unmerge is a new "
                        "deployment epoch), partial (the paper: new tasks as their own query "
                        "reading the bus) or relaunch (the running DAG handed over to one query)")
    r.add_argument("--unmerge", choices=["pause", "stop", "lazy"], default=None,
                   help="how the query-per-DAG engines (partial, relaunch) enact a removal: "
                        "pause (the paper, their default), stop (hand the kept tasks over to a "
                        "new query) or lazy (stop queries left with no live task, pause the "
                        "rest until their next hand-over); inplace frees removed tasks at the cut")
    r.add_argument("--default-sources", choices=["private", "shared"], default=None,
                   help="Default's sources: private (the default; the paper's baseline: each "
                        "dataflow replays its own sources) or shared (one replay per source "
                        "stream, as Reuse; partial and relaunch only). Reuse always shares them")
    r.add_argument("--shards", type=int, default=None,
                   help="inplace: partitions of the shared query (default: Spark's cores)")
    r.add_argument("--split", action="store_true",
                   help="inplace: split every running DAG over the shards (keyed tasks by key "
                        "range, gathered ones in one shard, Spark's shuffle between stages) "
                        "instead of running each whole in one shard; the shards rebalance key "
                        "ranges by measured CPU")
    r.add_argument("--no-shared-disk", action="store_true",
                   help="inplace: the executors cannot read the driver's run or data "
                        "directories (a cluster over several machines): Spark ships the "
                        "replay data to each executor (addFile) and brings the sink records "
                        "back to the driver, which keeps the run directory")
    r.add_argument("--max-events", type=int, default=None,
                   help="inplace: at most this many source seq per batch (default: two "
                        "triggers' worth; 0 = no bound)")
    r.add_argument("--bus-max-events", type=int, default=None, metavar="N",
                   help="partial, relaunch: events per input topic a lagging partial query "
                        "takes per micro-batch; it is throttled to that once its lag passes "
                        "2N events and until it is under N/2, and otherwise takes all it has "
                        "(default: rate x trigger x 10 x 25, ten triggers' worth of one "
                        "source allowing a parse's fan-out of up to 25 events per source "
                        "event; 0 = no bound)")
    r.add_argument("--k-safe", type=int, default=0, metavar="K",
                   help="inplace: every task used by at least U dataflows runs as K+1 active "
                        "copies in K+1 different shards, i.e. Spark tasks that run on "
                        "different executors of a cluster with as many 1-core executors "
                        "(with --split, copy r of each key range r partitions after its owner); "
                        "consumers de-duplicate by (seq, digest) (default 0: none)")
    r.add_argument("--replicate-min-users", type=int, default=2, metavar="U",
                   help="with --k-safe: replicate tasks used by at least U dataflows (default 2)")
    r.add_argument("--replicas", choices=["shards", "apps"], default="shards",
                   help="with --k-safe: where the copies run: shards of the one shared query "
                        "(the default) or K+1 engine instances, each its own driver and Spark "
                        "application, following one journal on Redis, so a driver's death "
                        "pauses no replicated output (apps.json in --root lists them)")
    r.add_argument("--step-seconds", type=float, default=60.0)
    r.add_argument("--warmup-seconds", type=float, default=10.0,
                   help="sources run this long before step 1, unmeasured (JVM warm-up), and "
                        "on until the engine ran its first batch (a cold cluster's executors)")
    r.add_argument("--out", required=True, help="CSV to write")
    r.add_argument("--master", default="local[2]", help="local[2] or spark://host:port")
    r.add_argument("--cluster-dir", default=str(DEFAULT_DIR),
                   help="PID folder of a local standalone cluster (for CPU measurement)")
    r.add_argument("--bus", default="file", choices=["file", "redis"])
    r.add_argument("--source", default="replay", metavar="replay|mqtt://HOST:PORT",
                   help="where the sources' events come from: generated replay (default), or "
                        "an MQTT broker that `reuse publish` feeds (shared query only; its "
                        "events go through a Redis of the run's own)")
    r.add_argument("--rate", type=float, default=10.0,
                   help="replay: events/s per source (default 10). A broker-fed run does not "
                        "need it: each batch claims what has arrived, at the publishers' rate")
    r.add_argument("--stall-timeout", type=float, default=60.0, metavar="S",
                   help="end the run with an error only when nothing moves for S seconds: a "
                        "source the running dataflows read brings nothing new while others "
                        "do (broker-fed), or the engine processes nothing. A run slower than "
                        "its input is not an error: batches grow, latency and backlog show "
                        "it (default 60)")
    r.add_argument("--trigger-seconds", type=float, default=2.0)
    r.add_argument("--pi-iterations", type=int, default=1600,
                   help="PiTask cost per event for OPMW tasks")
    r.add_argument("--defrag-every", type=int, default=0,
                   help="defragment every N steps (Reuse; 0 = never)")
    r.add_argument("--data-dir", default=None, help="RIoTBench data folder")
    r.add_argument("--root", default=None, help="run directory (default: a new temp dir)")
    r.add_argument("--per-event", action="store_true",
                   help="inplace: the shards run each task one event at a time (the per-event "
                        "path, for comparison) instead of a micro-batch at a time on columns "
                        "(the default); the same outputs and states")
    r.add_argument("--latency-budget", type=float, default=None, metavar="S",
                   help="inplace (a replay; a broker by arrival): a batch once 1,000 seq "
                        "are waiting or the oldest would wait more than S s (few events: "
                        "batches up to S s apart, for less per-batch cost; many: at once); "
                        "default: a batch at every trigger with new data")
    r.add_argument("--no-check", action="store_true",
                   help="skip the reference execution (lost/duplicated left empty)")
    r.set_defaults(func=cmd_run, usage_error=r.error)

    c = subparsers.add_parser("cluster", help="local Spark standalone master + worker")
    c.add_argument("action", choices=["start", "stop", "status"])
    c.add_argument("--dir", default=str(DEFAULT_DIR), help="PID and log folder")
    c.add_argument("--port", type=int, default=7077)
    c.add_argument("--ui-port", type=int, default=8080)
    c.add_argument("--cores", type=int, default=2)
    c.add_argument("--memory", default="4g")
    c.add_argument("--workers", type=int, default=1,
                   help="worker daemons, each with --cores cores (two or more: k-safety's "
                        "replicas on different executors)")
    c.add_argument("--hide", action="append", default=[], metavar="DIR",
                   help="start: the workers see DIR empty (each in a mount namespace of its "
                        "own; Linux, root): a one-machine cluster whose executors share no "
                        "disk with the driver, for reuse run --no-shared-disk (repeatable)")
    c.add_argument("--listen", default="127.0.0.1", metavar="ADDRESS",
                   help="start: the address the master and workers bind (default: "
                        "%(default)s, this machine only); any other turns on Spark's "
                        "authentication with a secret made for --dir (mode 0600 under "
                        "<dir>/secrets), which reuse run --master ... --cluster-dir <dir> reads")
    c.set_defaults(func=cmd_cluster)

