"""``reuse dags`` and ``reuse trace``: write a workload's DAGs and its SEQ / random-walk traces."""

from __future__ import annotations

import argparse
from pathlib import Path

from reuse.core.dataflow import dump_dataflow, load_dataflows
from reuse.core.errors import ReuseError
from reuse.core.traces import dump_trace
from reuse.workloads.registry import WORKLOADS, load_workload
from reuse.workloads.trace_registry import TRACE_NAMES, build_trace

__all__ = ["add_parsers"]


def cmd_dags(args: argparse.Namespace) -> int:
    flows = load_workload(args.workload, all_usable=args.all, keying=args.keying,
                          tenants=args.tenants, seed=args.workload_seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in flows:
        dump_dataflow(f, out / f"{f.id}.json")
    print(f"{len(flows)} {args.workload} dataflows, {sum(len(f) for f in flows)} tasks -> {out}")
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    if (args.workload is None) == (args.dags is None):
        raise ReuseError("give exactly one of --workload and --dags")
    flows = load_dataflows([args.dags]) if args.dags else None
    if args.workload is not None and (args.tenants is not None or args.workload_seed is not None):
        flows = load_workload(args.workload, tenants=args.tenants, seed=args.workload_seed)
    trace = build_trace(args.workload, args.kind, flows, seed=args.seed, subset=args.subset,
                        subset_seed=args.subset_seed, walk=args.walk, populate=args.populate,
                        all_usable=args.all)
    meta = trace.spec.meta() | {"workload": args.workload or args.dags}
    dump_trace(trace.ops, args.out, meta=meta)
    print(f"{args.kind} trace of {len(trace.ops)} ops over {trace.spec.n_dags} DAGs -> {args.out}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    d = sub.add_parser("dags", help="write a workload's dataflows as JSON files")
    d.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    d.add_argument("--all", action="store_true", help="OPMW: every usable template, not 35")
    d.add_argument("--keying", choices=["field", "sensor"], default="field",
                   help="riot: stateful tasks keep state per field (default) or per sensor and "
                        "field, as RIoTBench's bolts do")
    _tenant_arguments(d)
    d.add_argument("--out", required=True, help="directory to write <id>.json files into")
    d.set_defaults(func=cmd_dags)

    t = sub.add_parser("trace", help="generate a SEQ or random-walk trace (deterministic per seed)",
                       description="Build a trace with reuse.workloads.trace_registry (the same trace the "
                       "notebooks and the visualizer build for the same name, seed and subset).")
    t.add_argument("--workload", choices=sorted(WORKLOADS))
    t.add_argument("--dags", help="a directory of dataflows instead of a named workload")
    t.add_argument("--all", action="store_true")
    t.add_argument("--kind", required=True, choices=list(TRACE_NAMES),
                   help="seq, rw1 (seed 1), rw2 (seed 2) or rw (any --seed)")
    t.add_argument("--seed", type=int, help="generator seed (default: the kind's: seq/rw1/rw 1, "
                   "rw2 2)")
    t.add_argument("--subset", type=int, help="draw from a seeded sample of N DAGs (default: all)")
    t.add_argument("--subset-seed", type=int, default=1, help="seed of the --subset sample")
    t.add_argument("--populate", type=int, help="RW: DAGs submitted first (default: the paper's "
                   "fraction, 20 of 35 OPMW, 15 of 21 RIoT)")
    t.add_argument("--walk", type=int, help="RW: random steps (default: the paper's 100)")
    _tenant_arguments(t)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_trace)


def _tenant_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenants", type=int, help="riot-tenants: how many tenants (default 100)")
    p.add_argument("--workload-seed", type=int, help="riot-tenants: the seed of the tenants' "
                   "draws (default 1); opmw: the seed of the 35-template selection")
