"""reuse-workbench: collaborative reuse of streaming dataflows (Chaturvedi, Tyagi, Simmhan).

The package is layered; each folder is one room, and a module imports only from its own room or
from rooms below it (``tests/test_layers.py`` checks this and that no import cycle exists):

1. :mod:`reuse.core`: the dataflow model, task equivalence, the manager's merge and unmerge,
   plan deltas, invariants, durable state, traces and the planner-level replay (pure Python,
   no Spark).
2. :mod:`reuse.tasks`: the RIoTBench task logic, one event at a time.
3. :mod:`reuse.workloads`: the OPMW and RIoTBench workloads, the named traces over them, and
   the third-party data set-up.
4. :mod:`reuse.analysis`: what the planner's replays say: billing, blast radius, Figure 4's
   two readings, random walks over seeds, the paper's reported numbers.
5. :mod:`reuse.runtime` (the live Spark engines) and :mod:`reuse.placement` (latency-aware
   placement on cloud-edge infrastructure), side by side: neither imports the other.
6. :mod:`reuse.figures` (matplotlib figures and the notebook batch) and :mod:`reuse.viz` (the
   DAG visualizer), side by side.
7. :mod:`reuse.cli` (the ``reuse`` command) and :mod:`reuse.testing` (the test harness).

This module re-exports the core's main names.
"""

from reuse.core.dataflow import Dataflow, Task, load_dataflow, parse_dataflow
from reuse.core.errors import ReuseError
from reuse.core.manager import Manager
from reuse.core.plan import PlanDelta, RunningTask

__all__ = ["Dataflow", "Task", "load_dataflow", "parse_dataflow", "ReuseError", "Manager",
           "PlanDelta", "RunningTask"]
__version__ = "0.1.0"
