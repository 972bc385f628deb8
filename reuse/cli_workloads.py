"""``reuse dags`` and ``reuse trace``: write a workload's DAGs and its SEQ / random-walk traces."""

from __future__ import annotations

import argparse
from pathlib import Path

from reuse.dataflow import dump_dataflow, load_dataflows
from reuse.errors import ReuseError
from reuse.traces import dump_trace, random_walk_trace, seq_trace
from reuse.workloads.registry import WORKLOADS, load_workload

__all__ = ["add_parsers"]


def cmd_dags(args: argparse.Namespace) -> int:
    flows = load_workload(args.workload, all_usable=args.all, keying=args.keying)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in flows:
        dump_dataflow(f, out / f"{f.id}.json")
    print(f"{len(flows)} {args.workload} dataflows, {sum(len(f) for f in flows)} tasks -> {out}")
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    if (args.workload is None) == (args.dags is None):
        raise ReuseError("give exactly one of --workload and --dags")
    if args.dags:
        ids = [f.id for f in load_dataflows([args.dags])]
        populate = args.populate if args.populate is not None else (2 * len(ids)) // 3
    else:
        ids = [f.id for f in load_workload(args.workload, all_usable=args.all)]
        populate = args.populate if args.populate is not None else WORKLOADS[args.workload].populate
    if args.kind == "seq":
        ops = seq_trace(ids, seed=args.seed)
    else:
        ops = random_walk_trace(ids, seed=args.seed, populate=populate, walk=args.walk)
    meta = {"workload": args.workload or args.dags, "kind": args.kind, "seed": args.seed}
    dump_trace(ops, args.out, meta=meta)
    print(f"{args.kind} trace of {len(ops)} ops over {len(ids)} DAGs -> {args.out}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    d = sub.add_parser("dags", help="write a workload's dataflows as JSON files")
    d.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    d.add_argument("--all", action="store_true", help="OPMW: every usable template, not 35")
    d.add_argument("--keying", choices=["field", "sensor"], default="field",
                   help="riot: stateful tasks keep state per field (default) or per sensor and "
                        "field, as RIoTBench's bolts do")
    d.add_argument("--out", required=True, help="directory to write <id>.json files into")
    d.set_defaults(func=cmd_dags)

    t = sub.add_parser("trace", help="generate a SEQ or random-walk trace (deterministic per seed)")
    t.add_argument("--workload", choices=sorted(WORKLOADS))
    t.add_argument("--dags", help="a directory of dataflows instead of a named workload")
    t.add_argument("--all", action="store_true")
    t.add_argument("--kind", required=True, choices=["seq", "rw"])
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--populate", type=int, help="RW: DAGs submitted first (20 OPMW, 15 RIoT)")
    t.add_argument("--walk", type=int, default=100, help="RW: random steps (paper: 100)")
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_trace)
