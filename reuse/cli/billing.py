"""``reuse bill``: each dataflow's bill over a trace (see :mod:`reuse.analysis.billing` for the rule)."""

from __future__ import annotations

import argparse

from reuse.analysis.billing import RULES, UNIT_COSTS, bills, load_costs, planner_steps, write_bills
from reuse.cli.common import add_replay_arguments, load_replay_inputs
from reuse.core.errors import ReuseError
from reuse.tasks.matching import MATCH_POLICIES, match_policy

__all__ = ["add_parsers"]


def cmd_bill(args: argparse.Namespace) -> int:
    if args.run is not None:
        from reuse.analysis.billing_live import live_steps

        if args.match != "exact":
            raise ReuseError("--match is for the planner-level bill: a live run's ledger "
                             "records each dataflow's tasks itself", file=args.run)

        flows, ops = load_replay_inputs(args)
        steps = live_steps(args.run)
        if len(steps) != len(ops):
            raise ReuseError(f"the run has {len(steps)} operations but the trace {len(ops)}: "
                             "not this trace's run", file=args.run)
        costs_unit = "CPU seconds (measured)"
    else:
        costs = load_costs(args.costs) if args.costs else UNIT_COSTS
        match = match_policy(args.match)
        flows, ops = load_replay_inputs(args, match)
        steps, _ = planner_steps(flows, ops, costs, check=not args.no_check, match=match)
        costs_unit = costs.unit
    rows = bills(steps, args.rule)
    write_bills(rows, args.out, [s.step for s in steps] if args.per_step else None)
    total = sum(s.total for s in steps)
    alone = sum(b.standalone for b in rows)
    billed = sum(b.bill for b in rows)
    balance = ("bills add up to the total" if abs(billed - total) <= 1e-9 * max(1.0, total)
               else f"bills add up to {billed:g}")
    savings = [b.saving_pct for b in rows]
    print(f"{len(rows)} dataflows -> {args.out}; {args.rule} rule, {costs_unit}: {total:g} with "
          f"reuse vs {alone:g} alone ({1 - total / alone if alone else 0:.1%} saved); {balance}"
          + (f"; saving per dataflow {min(savings):.1f}%..{max(savings):.1f}%" if rows else ""))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    b = sub.add_parser("bill", help="bill each dataflow of a trace for its share of the shared "
                       "cost (planner level)")
    add_replay_arguments(b, "CSV to write, one row per dataflow: "
                         "dag,steps_present,standalone,bill,saving_pct")
    src = b.add_mutually_exclusive_group()
    src.add_argument("--costs", help="calibration JSON: a cost per step for each task type "
                     '({"types": {"T": 0.5, ...}, "default": 1.0}); default: 1 per task')
    src.add_argument("--run", help="a live run's directory (reuse run --merge inplace --root "
                     "DIR): bill each task's measured CPU per step")
    b.add_argument("--match", choices=list(MATCH_POLICIES), default="exact",
                   help="which tasks count as equal (planner level): exact, or semantic with "
                   "containment; a residual is charged to its own dataflows only")
    b.add_argument("--per-step", action="store_true",
                   help="add a step_<k> column per step with each dataflow's share")
    b.add_argument("--rule", choices=sorted(RULES), default="shapley",
                   help="shapley: each step's task cost split equally among its users (default); "
                   "lifetime: a task's cost over its lifetime split by the steps each used it")
    b.set_defaults(func=cmd_bill)
