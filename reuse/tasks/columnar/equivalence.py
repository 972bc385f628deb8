"""Is a kernel the same as its per-event task? The one check every kernel's tests use.

The reference runs ``task.process`` over every event. The candidate runs the same events in
slices, and each slice either through the kernel, or through ``process`` (the two take turns
on one task's state), or through a kernel rebuilt on a new task restored from the old one's
``get_state()`` (a restart). After every slice the candidate's state must equal the
reference's at the same point, and at the end the outputs must be equal: exactly, or, for a
task whose kernel reorders floating-point operations, within a relative tolerance the kernel
states (``rel``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reuse.tasks.base import Event, Task
from reuse.tasks.columnar import kernel_for
from reuse.tasks.columnar.batch import Batch

__all__ = ["Step", "Mismatch", "compare", "run_both"]

#: How the candidate runs one slice: its kernel, the task's ``process``, or a kernel on a
#: task restored from a snapshot of the state so far.
Step = Literal["kernel", "event", "restart"]


class Mismatch(AssertionError):
    """The kernel's outputs or state differ from the per-event task's; says where."""


def _same(a: Any, b: Any, rel: float, where: str) -> None:
    if isinstance(a, float) and isinstance(b, float):
        if a == b or (math.isnan(a) and math.isnan(b)):
            return
        if rel and math.isclose(a, b, rel_tol=rel, abs_tol=rel):
            return
        raise Mismatch(f"{where}: {a!r} (per event) != {b!r} (kernel)")
    if type(a) is not type(b):
        raise Mismatch(f"{where}: {a!r} ({type(a).__name__}, per event) != "
                       f"{b!r} ({type(b).__name__}, kernel)")
    if isinstance(a, dict):
        if list(a) != list(b) and set(a) != set(b):
            raise Mismatch(f"{where}: keys {sorted(a)} (per event) != {sorted(b)} (kernel)")
        for k in a:
            _same(a[k], b[k], rel, f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            raise Mismatch(f"{where}: {len(a)} items (per event) != {len(b)} (kernel)")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, rel, f"{where}[{i}]")
    elif a != b:
        raise Mismatch(f"{where}: {a!r} (per event) != {b!r} (kernel)")


def compare(reference: Any, candidate: Any, *, rel: float = 0.0, where: str = "outputs") -> None:
    """Raise :class:`Mismatch` unless ``candidate`` equals ``reference`` (types too: ``1`` is
    not ``1.0``), floats within ``rel`` when it is not 0."""
    _same(reference, candidate, rel, where)


@dataclass(frozen=True)
class Result:
    reference: list[Event]
    candidate: list[Event]


def run_both(make: Callable[[], Task], events: Sequence[Event], cuts: Sequence[int],
             steps: Sequence[Step] = (), *, rel: float = 0.0) -> Result:
    """Run ``events`` through a task made by ``make`` one at a time (the reference) and,
    sliced at ``cuts`` (sorted indices into ``events``), through its kernel; slice ``i`` runs
    as ``steps[i]`` (default ``"kernel"``). Raises :class:`Mismatch` at the first state or
    output that differs."""
    ref_task, task = make(), make()
    kernel = kernel_for(task)
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(events)), len(events)]
    reference: list[Event] = []
    candidate: list[Event] = []
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        chunk = [dict(e) for e in events[lo:hi]]
        step = steps[i] if i < len(steps) else "kernel"
        for e in chunk:
            reference.extend(ref_task.process(dict(e)))
        if step == "restart":
            fresh = make()
            if task.stateful:
                fresh.set_state(task.get_state())  # type: ignore[attr-defined]
            task, kernel = fresh, kernel_for(fresh)
        if step == "event":
            candidate.extend(o for e in chunk for o in task.process(e))
        else:
            candidate.extend(kernel.run(Batch.from_events(chunk)).to_events())
        if task.stateful:
            compare(ref_task.get_state(), task.get_state(),  # type: ignore[attr-defined]
                    rel=rel, where=f"state after events [0, {hi})")
    compare(reference, candidate, rel=rel)
    return Result(reference, candidate)
