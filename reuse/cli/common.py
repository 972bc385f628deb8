"""What the subcommands share: reading the dataflows and trace a command replays.

Every command that replays a trace (``reuse plan``, ``bill``, ``blast``) takes the same
``--dags``/``--trace`` arguments (:func:`add_replay_arguments`) and reads them here
(:func:`load_replay_inputs`), with the same one-line errors.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reuse.core.dataflow import Dataflow, load_dataflows
from reuse.core.equivalence import check_dedup, dedup
from reuse.core.errors import ReuseError
from reuse.core.matching import EXACT, MatchPolicy
from reuse.core.traces import Op, check_trace, load_trace

__all__ = ["prepare", "load_replay_inputs", "add_replay_arguments"]


def prepare(flow: Dataflow, allow_dedup: bool, match: MatchPolicy = EXACT) -> Dataflow:
    if allow_dedup:
        return dedup(flow, match)
    check_dedup(flow, match)
    return flow


def _load_dir(directory: str, allow_dedup: bool, match: MatchPolicy) -> dict[str, Dataflow]:
    d = Path(directory)
    if not d.is_dir():
        raise ReuseError("is not a directory of dataflow JSON files", file=directory)
    flows = [prepare(f, allow_dedup, match) for f in load_dataflows([d])]
    if not flows:
        raise ReuseError("holds no *.json dataflow files", file=directory)
    return {f.id: f for f in flows}


def load_replay_inputs(args: argparse.Namespace, match: MatchPolicy = EXACT,
                       ) -> tuple[dict[str, Dataflow], list[Op]]:
    """The dataflows of ``--dags`` and the trace of ``--trace``, checked against each other
    (every command that replays a trace reads its input here, with the same errors); de-dup
    under ``match``, the policy the replay will merge with."""
    flows = _load_dir(args.dags, args.dedup, match)
    ops = load_trace(args.trace)
    check_trace(ops, flows, file=args.trace)
    return flows, ops


def add_replay_arguments(p: argparse.ArgumentParser, out_help: str) -> None:
    """``--dags``, ``--trace``, ``--out``, ``--no-check`` and ``--dedup``, as ``reuse plan``
    takes them."""
    p.add_argument("--dags", required=True, help="directory of dataflow JSON files")
    p.add_argument("--trace", required=True, help="trace JSON file")
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--no-check", action="store_true", help="skip the per-step invariant check")
    p.add_argument("--dedup", action="store_true")
