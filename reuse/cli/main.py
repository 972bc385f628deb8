"""The ``reuse`` command: its parser, the core's subcommands, and the error mapping.

The core's subcommands (``validate``, ``plan``, ``submit``, ``remove``, ``status``) are here; the
other layers' are in their own modules of :mod:`reuse.cli` and are added to the parser
explicitly by :func:`build_parser`. Every :class:`~reuse.core.errors.ReuseError` becomes one
line on stderr (``reuse: error: ...``) and exit status 1; usage errors exit 2 (argparse). No
traceback reaches the user for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from reuse.cli import billing, blast, broker, lab, placement, runtime, workloads
from reuse.cli.common import add_replay_arguments, load_replay_inputs, prepare
from reuse.core.dataflow import load_dataflow
from reuse.core.errors import ReuseError
from reuse.core.manager import Manager
from reuse.core.plan import PlanDelta
from reuse.core.planner import StepRecord, replay, reuse_histogram, write_csv
from reuse.core.state import StateStore
from reuse.tasks.matching import MATCH_POLICIES, match_policy

__all__ = ["main", "build_parser"]

Command = Callable[[argparse.Namespace], int]


def cmd_validate(args: argparse.Namespace) -> int:
    files: list[Path] = []
    for p in map(Path, args.paths):
        files.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    if not files:
        raise ReuseError("no dataflow files found", file=" ".join(args.paths))
    failed = 0
    for f in files:
        try:
            flow = prepare(load_dataflow(f), args.dedup)
        except ReuseError as exc:
            print(f"reuse: error: {exc}", file=sys.stderr)
            failed += 1
            continue
        if not args.quiet:
            print(f"ok {f}: dag '{flow.id}', {len(flow)} tasks, {len(flow.streams)} streams, "
                  f"{len(flow.sources)} sources, {len(flow.sinks)} sinks")
    return 1 if failed else 0


def cmd_plan(args: argparse.Namespace) -> int:
    match = match_policy(args.match)
    flows, ops = load_replay_inputs(args, match)
    manager = Manager(match=match)
    rewritten: list[int] = []  # containment rewrites made by each submit

    def count(rec: StepRecord, delta: PlanDelta) -> None:
        if rec.op == "submit":
            rewritten.append(len(manager.rewrites(rec.dag)))

    records = replay(flows, ops, check=not args.no_check, manager=manager, on_step=count)
    write_csv(records, args.out)
    if records:
        peak = max(records, key=lambda r: r.default_tasks)
        mean_d = sum(r.default_tasks for r in records) / len(records)
        mean_r = sum(r.reuse_tasks for r in records) / len(records)
        hist = reuse_histogram(records)
        print(f"{len(records)} steps -> {args.out}; peak default {peak.default_tasks} -> reuse "
              f"{peak.reuse_tasks} (step {peak.step}); mean {mean_d:.1f} -> {mean_r:.1f} "
              f"({1 - mean_r / mean_d if mean_d else 0:.1%} fewer); served by 2+ DAGs: "
              f"{1 - hist['1']:.1%} of task-time"
              + (f"; {sum(rewritten)} containment rewrites in {sum(map(bool, rewritten))} "
                 f"submits" if match.containment else "")
              + ("" if args.no_check else "; invariants held at every step"))
    else:
        print(f"0 steps -> {args.out} (the trace has no operations)")
    return 0


def _store(args: argparse.Namespace) -> StateStore:
    return StateStore(args.state)


def cmd_submit(args: argparse.Namespace) -> int:
    store = _store(args)
    m = store.open()
    for path in args.files:
        flow = prepare(load_dataflow(path), args.dedup)
        delta = m.submit(flow)
        print(delta.summary())
        if args.json:
            print(json.dumps(delta.to_dict(), indent=1))
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    m = _store(args).open()
    for dag in args.dags:
        delta = m.remove(dag)
        print(delta.summary())
        if args.json:
            print(json.dumps(delta.to_dict(), indent=1))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    store = _store(args)
    m = store.open()
    if args.checkpoint:
        store.checkpoint(m)
    if args.json:
        print(json.dumps({"submitted": list(m.submitted), "tasks": m.task_count,
                          "default_tasks": m.default_task_count,
                          "running_dags": [rd.__dict__ for rd in m.running_dags()]}, indent=1))
        return 0
    print(f"{len(m.submitted)} submitted DAGs, {m.default_task_count} tasks without reuse, "
          f"{m.task_count} running, {m.running_dag_count} running DAGs")
    counts = m.reuse_counts()
    for rd in m.running_dags():
        print(f"  {rd.id}: {len(rd.tasks)} tasks, supports {', '.join(rd.supports)}")
        for t in rd.tasks:
            print(f"    {t} (serves {counts[t]})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="reuse", description="Collaborative reuse of streaming "
                                "dataflows: merge on submit, unmerge on remove.")
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="validate dataflow JSON files (or directories of them)")
    v.add_argument("paths", nargs="+")
    v.add_argument("--dedup", action="store_true",
                   help="collapse equivalent tasks instead of rejecting a DAG that is not de-dup")
    v.add_argument("-q", "--quiet", action="store_true")
    v.set_defaults(func=cmd_validate)

    pl = sub.add_parser("plan", help="replay a trace through the manager (no runtime)")
    add_replay_arguments(pl, "CSV to write, one row per op")
    pl.add_argument("--match", choices=list(MATCH_POLICIES), default="exact",
                    help="what makes two tasks equivalent: the config as written (exact, the "
                         "paper's) or each type's canonical config and order-free inputs where "
                         "the task commutes, and a narrower filter reading a running wider "
                         "one's output (semantic)")
    pl.set_defaults(func=cmd_plan)

    for name, func, helptext in (("submit", cmd_submit, "submit dataflow files (persistent)"),
                                 ("remove", cmd_remove, "remove submitted DAGs (persistent)"),
                                 ("status", cmd_status, "show the persistent manager state")):
        c = sub.add_parser(name, help=helptext)
        if name == "submit":
            c.add_argument("files", nargs="+")
            c.add_argument("--dedup", action="store_true")
        elif name == "remove":
            c.add_argument("dags", nargs="+")
        else:
            c.add_argument("--checkpoint", action="store_true",
                           help="fold the journal into a new snapshot")
        c.add_argument("--state", required=True, help="state directory (created if absent)")
        c.add_argument("--json", action="store_true")
        c.set_defaults(func=func)
    _add_layer_parsers(sub)
    return p


def _add_layer_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Sub-commands of the other layers, added explicitly (nothing registers itself)."""
    workloads.add_parsers(sub)
    billing.add_parsers(sub)
    blast.add_parsers(sub)
    runtime.add_parsers(sub)
    broker.add_parsers(sub)
    lab.add_parsers(sub)
    placement.add_parser(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ReuseError as exc:
        print(f"reuse: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("reuse: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``reuse status | head``): not an error of ours; keep Python's
        # exit-time flush of stdout from failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        name = f"{exc.filename}: " if exc.filename else ""
        print(f"reuse: error: {name}{exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
