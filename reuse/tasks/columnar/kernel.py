"""The kernel contract (issue 35): a task's batch at a time, on the task's own state.

A kernel is built on a per-event task (:class:`~reuse.tasks.base.Task`) and keeps its state in
that task's own attributes, in the same form: after ``kernel.run(batch)`` the task's
``get_state()`` is what ``process`` over the batch's events would have left. So a kernel and
its task can take turns on one stream (the per-event path stays the reference and the switch),
a checkpoint taken by either restores into either, and a kernel needs no state code of its own.
"""

from __future__ import annotations

from reuse.tasks.base import Task
from reuse.tasks.columnar.batch import Batch

__all__ = ["Kernel", "PerEvent"]


class Kernel:
    """Base class: ``run`` maps a batch of input events to the batch of their outputs, in
    order (the outputs of row 0, then row 1, ...), as ``process`` would one at a time.

    A subclass sets ``type_name`` (the task type it computes) and implements :meth:`run`.
    """

    type_name: str = ""

    def __init__(self, task: Task) -> None:
        if self.type_name and task.type_name != self.type_name:
            raise TypeError(f"{type(self).__name__} computes {self.type_name}, "
                            f"not {task.type_name}")
        self.task = task

    def run(self, batch: Batch) -> Batch:
        raise NotImplementedError


class PerEvent(Kernel):
    """The per-event task itself, behind the kernel contract: the fallback for a type with no
    kernel, and the reference the kernels are tested against."""

    def run(self, batch: Batch) -> Batch:
        process = self.task.process
        return Batch.from_events([o for e in batch.to_events() for o in process(e)])
