"""Pure-Python RIoTBench task logic, one event at a time (no Spark import).

``TASK_TYPES`` maps each task type name used by the RIoTBench workload (and ``PiTask`` for the
OPMW workload) to its class; it is written out here rather than filled by import side effects so
the set of types is visible and fixed. ``make_task`` builds a task from a type and config.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

from reuse.tasks.base import Event, StatefulTask, Task, TaskError
from reuse.tasks.etl import Interpolation, Join
from reuse.tasks.filters import BloomFilterCheck, RangeFilter
from reuse.tasks.parse import Annotate, CsvToSenML, SenMLParse
from reuse.tasks.pi import PiTask
from reuse.tasks.predict import DecisionTreeClassify, ErrorEstimation, MultiVarLinearRegression
from reuse.tasks.sinks import MQTTPublish, Sink
from reuse.tasks.stats import (
    BlockWindowAverage,
    DistinctApproxCount,
    KalmanFilter,
    SecondOrderMoment,
    SlidingLinearRegression,
)

__all__ = ["TASK_TYPES", "SOURCE_TYPES", "make_task", "Event", "Task", "StatefulTask", "TaskError"]

TASK_TYPES: dict[str, type[Task]] = {
    "SenMLParse": SenMLParse,
    "RangeFilter": RangeFilter,
    "BloomFilterCheck": BloomFilterCheck,
    "Interpolation": Interpolation,
    "Join": Join,
    "Annotate": Annotate,
    "CsvToSenML": CsvToSenML,
    "KalmanFilter": KalmanFilter,
    "SlidingLinearRegression": SlidingLinearRegression,
    "BlockWindowAverage": BlockWindowAverage,
    "DistinctApproxCount": DistinctApproxCount,
    "SecondOrderMoment": SecondOrderMoment,
    "DecisionTreeClassify": DecisionTreeClassify,
    "MultiVarLinearRegression": MultiVarLinearRegression,
    "ErrorEstimation": ErrorEstimation,
    "MQTTPublish": MQTTPublish,
    "Sink": Sink,
    "PiTask": PiTask,
}

#: Source task types; they are replayed by :mod:`reuse.tasks.sources`, not built by make_task.
SOURCE_TYPES = ("SYS", "TAXI", "FIT")


def make_task(type_name: str, config: Any, *, data_dir: str | os.PathLike[str] | None = None) -> Task:
    """Build the task of a type with its config.

    Parameters
    ----------
    type_name
        A key of :data:`TASK_TYPES`.
    config
        The task's config from the dataflow (plain JSON).
    data_dir
        RIoTBench resource folder for tasks that load files at start-up (see
        :func:`reuse.core.paths.riotbench_dir` for the default).

    Raises
    ------
    TaskError
        For an unknown type (a source type gets a hint to use the source replay).
    """
    cls = TASK_TYPES.get(type_name)
    if cls is None:
        hint = " (a source: use reuse.tasks.sources.replay)" if type_name in SOURCE_TYPES else ""
        known = ", ".join(sorted(TASK_TYPES))
        raise TaskError(f"unknown task type '{type_name}'{hint}; known types: {known}")
    if "data_dir" in inspect.signature(cls.__init__).parameters:
        return cls(config, data_dir=data_dir)  # type: ignore[call-arg]
    return cls(config)
