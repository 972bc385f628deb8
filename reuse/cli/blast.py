"""``reuse blast``: per step, how many dataflows one executor failure cuts off (see
:mod:`reuse.analysis.blast` for the placement and loss rules)."""

from __future__ import annotations

import argparse

from reuse.analysis.blast import BLAST_COLUMNS, blast_trace, check_parameters, peaks, write_blast
from reuse.cli.common import add_replay_arguments, load_replay_inputs

__all__ = ["add_parsers"]


def cmd_blast(args: argparse.Namespace) -> int:
    check_parameters(args.executors, args.k_safe, args.replicate_min_users)
    flows, ops = load_replay_inputs(args)
    steps = blast_trace(flows, ops, args.executors, args.k_safe, args.replicate_min_users,
                        check=not args.no_check, replicas=args.replicas)
    write_blast(steps, args.out)
    p = peaks(steps)
    print(f"{p['steps']} steps -> {args.out}; {args.executors} executors, K={args.k_safe} for "
          f"tasks used by >= {args.replicate_min_users} dataflows; worst case lost dataflows "
          f"(peak over steps, up to {p['peak_submitted']} submitted): default "
          f"{p['default_peak']}, reuse {p['reuse_peak']}, k-safe {p['ksafe_peak']}; mean over "
          f"steps {p['default_mean_worst']:.2f} / {p['reuse_mean_worst']:.2f} / "
          f"{p['ksafe_mean_worst']:.2f}; k-safety costs up to {p['replicas_extra_peak']} extra "
          f"task replicas ({p['replicas_extra_mean']:.1f} on average)")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    b = sub.add_parser("blast", help="per step, the dataflows that lose output when one executor "
                       "fails: Default, Reuse and Reuse with k-safety (planner level)")
    add_replay_arguments(b, "CSV to write, one row per op: " + ",".join(BLAST_COLUMNS))
    b.add_argument("--executors", type=int, required=True, metavar="E",
                   help="executors the running tasks are spread over")
    b.add_argument("--k-safe", type=int, default=1, metavar="K",
                   help="replicated tasks run as K+1 replicas on distinct executors (default 1)")
    b.add_argument("--replicate-min-users", type=int, default=2, metavar="U",
                   help="replicate the tasks used by at least U submitted dataflows (default 2)")
    b.add_argument("--replicas", choices=["shards", "apps"], default="shards",
                   help="where the K copies run: other shards of the one query (default) or "
                        "K other engine instances on executors of their own (reuse run "
                        "--replicas apps)")
    b.set_defaults(func=cmd_blast)
