"""``reuse place``: place a generated application, or run the section 5 evaluation.

``reuse place [run] --strategy NAME|all --infra-size C,S,D --app-size N --seed N --out OUT.csv``
prints one line per strategy (status, AL, resolution time) and writes the operator-to-resource
mapping; ``reuse place eval --scale tiny|small|paper --out DIR`` writes ``runs.csv``,
``report.txt`` and the figures, and prints the report;
``reuse place trace --workload riot --trace seq|rw --seed N --bus cloud|local --out DIR`` places
every step of a reuse trace incrementally, fully and by default (no reuse) and writes
``steps.csv`` and ``per_dataflow.csv``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from reuse.placement.errors import PlacementError
from reuse.placement.generators import make_application, make_infrastructure
from reuse.placement.registry import STRATEGIES, get_strategy
from reuse.placement.result import Placement

__all__ = ["add_parser", "run", "parse_size"]


def parse_size(text: str) -> tuple[int, int, int]:
    """``"clouds,sites,devices"`` (Table 3 row), e.g. ``"500,500,500"``.

    Examples
    --------
    >>> parse_size("10,100,500")
    (10, 100, 500)
    """
    try:
        c, s, d = (int(x) for x in text.split(","))
    except ValueError:
        raise PlacementError(f"--infra-size wants clouds,sites,devices (got '{text}')") from None
    if c < 1 or s < 0 or d < 0:
        raise PlacementError(f"--infra-size needs >= 1 cloud and non-negative sizes ('{text}')")
    return c, s, d


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``place`` subcommand to an argparse ``subparsers`` object."""
    p = subparsers.add_parser("place", help="latency-aware placement (Veith et al.)",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", nargs="?", choices=("run", "eval", "trace"),
                   default="run")
    p.add_argument("--strategy", default="aels+rp+la",
                   help=f"one of {', '.join(STRATEGIES)} or 'all' (run)")
    p.add_argument("--infra-size", default="10,10,10", help="clouds,sites,devices (run)")
    p.add_argument("--app-size", type=int, default=9, help="operators (run)")
    p.add_argument("--seed", type=int, default=0, help="infrastructure and graph seed")
    p.add_argument("--config", type=int, default=0, help="application configuration (run)")
    p.add_argument("--time-limit", type=float, default=None, help="seconds per placement")
    p.add_argument("--scale", default="small", help="tiny, small or paper (eval)")
    p.add_argument("--workload", default="riot", help="riot or opmw (trace)")
    p.add_argument("--trace", default="seq", choices=("seq", "rw"), help="trace kind (trace)")
    p.add_argument("--bus", default="cloud", choices=("cloud", "local"),
                   help="where partial-DAG brokers run (trace)")
    p.add_argument("--out", default=None, help="CSV (run) or directory (eval, trace)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Execute ``reuse place``; returns the exit status (1 if a placement failed)."""
    if args.action == "eval":
        return _eval(args)
    if args.action == "trace":
        return _trace(args)
    c, s, d = parse_size(args.infra_size)
    infra = make_infrastructure(c, s, d, seed=args.seed)
    app = make_application(args.app_size, infra, graph_seed=args.seed, config_seed=args.config)
    names = list(STRATEGIES) if args.strategy == "all" else [args.strategy]
    strategies = [(n, get_strategy(n)) for n in names]
    print(f"{infra.describe()}; application {app.name}: {app.n} operators, "
          f"{len(app.streams)} streams")
    rows = []
    status = 0
    for name, fn in strategies:
        out = fn(app, infra, time_limit=args.time_limit)
        if isinstance(out, Placement):
            print(f"{name:11s} ok   AL={out.latency:.6g} s  time={out.resolution_time:.4f} s  "
                  f"evaluations={out.evaluations}")
            for i, o in enumerate(app.operators):
                r = int(out.hosts[i])
                rows.append(dict(strategy=name, operator=o.name, kind=o.kind, resource=r,
                                 resource_kind=infra.kind[r] if infra.kind else "",
                                 site=int(infra.site[r])))
        else:
            status = 1
            print(f"{name:11s} FAIL {out}")
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=["strategy", "operator", "kind", "resource",
                                               "resource_kind", "site"])
            w.writeheader()
            w.writerows(rows)
    return status


def _eval(args: argparse.Namespace) -> int:
    from reuse.figures.placement import save_evaluation
    from reuse.placement.evaluation import format_report, run_grid

    df = run_grid(args.scale, seed=args.seed,
                  progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(save_evaluation(df, args.out) if args.out else format_report(df))
    return 0


def _trace(args: argparse.Namespace) -> int:
    from reuse.placement.reuse_trace import TraceSettings, place_trace, summarize
    from reuse.workloads.trace_registry import build_trace

    trace = build_trace(args.workload, args.trace, seed=args.seed)
    flows, ops = dict(trace.flows), list(trace.ops)
    c, s, d = parse_size(args.infra_size)
    infra = make_infrastructure(c, s, d, seed=args.seed)
    settings = TraceSettings(strategy=args.strategy, seed=args.seed, bus=args.bus,
                             time_limit=args.time_limit)
    steps, per_flow = place_trace(flows, ops, infra, settings)
    print(f"{infra.describe()}; {args.workload} {args.trace} trace, {len(ops)} steps, "
          f"strategy {args.strategy}, bus {args.bus}")
    print(summarize(steps, per_flow).to_string(float_format=lambda x: f"{x:.4g}"))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        steps.to_csv(out / "steps.csv", index=False)
        per_flow.to_csv(out / "per_dataflow.csv", index=False)
    return 0 if (steps.status == "ok").all() else 1

