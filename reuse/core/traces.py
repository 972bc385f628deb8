"""Submit/remove traces (section 5.1): reading, checking and generating them.

A trace is ``{"ops": [{"op": "submit", "dag": "<id>"}, {"op": "remove", "dag": "<id>"}, ...]}``
(other top-level keys, such as ``"meta"``, are kept and ignored). The generators are the paper's:

- SEQ: submit every DAG once in random order, then remove them in random order (2N steps).
- RW: populate ``k`` DAGs at random (paper: 20 for OPMW, 15 for RIoT), then ``walk`` steps (100),
  each a submit or a remove with equal probability, drawn from the available / submitted pools (a
  present DAG is never resubmitted; when one pool is empty the other is used), then drain. RW1 and
  RW2 are two seeds.

Generators are deterministic for a seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reuse.core.dataflow import name_problem
from reuse.core.errors import TraceError
from reuse.core.jsondata import JsonError, loads, short

__all__ = ["Op", "load_trace", "check_trace", "seq_trace", "random_walk_trace", "dump_trace"]


@dataclass(frozen=True)
class Op:
    op: str  # "submit" or "remove"
    dag: str


def load_trace(path: str | Path) -> list[Op]:
    """Read a trace file; a :class:`TraceError` naming the file and step if it is malformed."""
    path = Path(path)
    name = str(path)
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TraceError(f"cannot read file ({exc.strerror})", file=name) from None
    except JsonError as exc:
        raise TraceError(str(exc), file=name) from None
    except UnicodeDecodeError:
        raise TraceError("is not UTF-8 text", file=name) from None
    if not isinstance(data, dict) or not isinstance(data.get("ops"), list):
        raise TraceError("a trace must be a JSON object with an 'ops' list", file=name)
    ops = []
    for i, item in enumerate(data["ops"], start=1):
        if (not isinstance(item, dict) or item.get("op") not in ("submit", "remove")
                or not isinstance(item.get("dag"), str)):
            raise TraceError(f"each op must be {{\"op\": \"submit\"|\"remove\", \"dag\": \"<id>\"}}, "
                             f"got {short(item)}", file=name, step=i)
        why = name_problem(item["dag"])
        if why:
            raise TraceError(f"the op's dag id {short(item['dag'])} {why}", file=name, step=i)
        ops.append(Op(item["op"], item["dag"]))
    return ops


def check_trace(ops: Sequence[Op], known: Iterable[str], *, file: str | None = None,
                present: Iterable[str] = ()) -> None:
    """Reject a trace before anything runs: unknown DAG ids, removing a DAG that is not present,
    submitting one that is present. ``present``: the DAGs running when the trace begins (a
    trace replayed on a live engine may remove what was submitted before it); they need not
    be ``known``.

    >>> check_trace([Op("remove", "a")], [], present=["a"])
    >>> check_trace([Op("submit", "a")], ["a"], present=["a"])
    Traceback (most recent call last):
    ...
    reuse.core.errors.TraceError: step 1: dag 'a': is submitted twice while present
    """
    known = set(known)
    present = set(present)
    known |= present
    for step, op in enumerate(ops, start=1):
        if op.dag not in known:
            raise TraceError("unknown DAG id (no such dataflow in the DAG directory)",
                             file=file, step=step, dag=op.dag)
        if op.op == "submit":
            if op.dag in present:
                raise TraceError("is submitted twice while present", file=file, step=step,
                                 dag=op.dag)
            present.add(op.dag)
        else:
            if op.dag not in present:
                raise TraceError("is removed but not submitted", file=file, step=step, dag=op.dag)
            present.discard(op.dag)


def seq_trace(dags: Sequence[str], *, seed: int) -> list[Op]:
    """SEQ: sequential submit of every DAG in random order, then drain in random order."""
    rng = random.Random(seed)
    order = list(dags)
    rng.shuffle(order)
    drain = list(order)
    rng.shuffle(drain)
    return [Op("submit", d) for d in order] + [Op("remove", d) for d in drain]


def random_walk_trace(dags: Sequence[str], *, seed: int, populate: int, walk: int = 100) -> list[Op]:
    """RW: populate ``populate`` DAGs, ``walk`` random submit/remove steps, then drain."""
    if not 0 <= populate <= len(dags):
        raise TraceError(f"cannot populate {populate} of {len(dags)} DAGs")
    rng = random.Random(seed)
    available = sorted(dags)
    present: list[str] = []
    ops: list[Op] = []

    def submit() -> None:
        d = available.pop(rng.randrange(len(available)))
        present.append(d)
        ops.append(Op("submit", d))

    def remove() -> None:
        d = present.pop(rng.randrange(len(present)))
        available.append(d)
        available.sort()
        ops.append(Op("remove", d))

    for _ in range(populate):
        submit()
    for _ in range(walk):
        if not available:
            remove()
        elif not present:
            submit()
        elif rng.random() < 0.5:
            submit()
        else:
            remove()
    while present:
        remove()
    return ops


def dump_trace(ops: Sequence[Op], path: str | Path, meta: dict[str, Any] | None = None) -> None:
    data: dict[str, Any] = {"ops": [{"op": o.op, "dag": o.dag} for o in ops]}
    if meta:
        data["meta"] = meta
    Path(path).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
