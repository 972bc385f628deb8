"""reuse-workbench: collaborative reuse of streaming dataflows (Chaturvedi, Tyagi, Simmhan).

The core (``dataflow``, ``equivalence``, ``manager``, ``invariants``, ``plan``, ``state``) is pure
Python with no Spark import; the Spark runtime lives in ``reuse.runtime``.
"""

from reuse.dataflow import Dataflow, Task, load_dataflow, parse_dataflow
from reuse.errors import ReuseError
from reuse.manager import Manager
from reuse.plan import PlanDelta, RunningTask

__all__ = ["Dataflow", "Task", "load_dataflow", "parse_dataflow", "ReuseError", "Manager",
           "PlanDelta", "RunningTask"]
__version__ = "0.1.0"
