"""Vectorized kernels of the tasks (issue 35): a micro-batch at a time, as columns.

``KERNELS`` maps a task type to its kernel class, written out here (nothing registers itself on
import); :func:`kernel_for` builds the kernel of a task, or :class:`PerEvent` (the task's own
``process``, one event at a time) for a type without one, or when ``columnar`` is off.
"""

from __future__ import annotations

from reuse.tasks.base import Task
from reuse.tasks.columnar.batch import MISSING, Batch
from reuse.tasks.columnar.blocks import BlockWindowAverageKernel
from reuse.tasks.columnar.etl import InterpolationKernel, JoinKernel
from reuse.tasks.columnar.filters import BloomFilterCheckKernel, RangeFilterKernel
from reuse.tasks.columnar.kernel import Kernel, PerEvent
from reuse.tasks.columnar.parse import AnnotateKernel, CsvToSenMLKernel, SenMLParseKernel
from reuse.tasks.columnar.pi import PiTaskKernel
from reuse.tasks.columnar.predict import (
    DecisionTreeClassifyKernel,
    ErrorEstimationKernel,
    MultiVarLinearRegressionKernel,
)
from reuse.tasks.columnar.sinks import MQTTPublishKernel, SinkKernel
from reuse.tasks.columnar.sketches import DistinctApproxCountKernel, SecondOrderMomentKernel
from reuse.tasks.columnar.stats import KalmanFilterKernel, SlidingLinearRegressionKernel

__all__ = ["KERNELS", "MISSING", "Batch", "Kernel", "PerEvent", "kernel_for"]

#: every task type of the RIoTBench and OPMW workloads has a kernel
KERNELS: dict[str, type[Kernel]] = {
    "Annotate": AnnotateKernel,
    "BlockWindowAverage": BlockWindowAverageKernel,
    "BloomFilterCheck": BloomFilterCheckKernel,
    "CsvToSenML": CsvToSenMLKernel,
    "DecisionTreeClassify": DecisionTreeClassifyKernel,
    "DistinctApproxCount": DistinctApproxCountKernel,
    "ErrorEstimation": ErrorEstimationKernel,
    "Interpolation": InterpolationKernel,
    "Join": JoinKernel,
    "KalmanFilter": KalmanFilterKernel,
    "MQTTPublish": MQTTPublishKernel,
    "MultiVarLinearRegression": MultiVarLinearRegressionKernel,
    "PiTask": PiTaskKernel,
    "RangeFilter": RangeFilterKernel,
    "SecondOrderMoment": SecondOrderMomentKernel,
    "SenMLParse": SenMLParseKernel,
    "Sink": SinkKernel,
    "SlidingLinearRegression": SlidingLinearRegressionKernel,
}


def kernel_for(task: Task, *, columnar: bool = True) -> Kernel:
    """The kernel that runs ``task`` a batch at a time (its per-event ``process`` when its
    type has no kernel, or with ``columnar=False``)."""
    cls = KERNELS.get(task.type_name) if columnar else None
    return (cls or PerEvent)(task)
