"""The control plane of k-safety across applications (issue 24), on Redis.

``K + 1`` engine instances, each its own driver and Spark application, run the same dataflows
from the same source ``seq``. They share three things, each a module here:

- :mod:`~reuse.runtime.control.oplog`: the *operation journal*. Every submit and remove gets
  its cut decided once, in Redis, and every instance reads the same sequence of
  ``(index, op, dag, cut)``. The cut rule is the *control horizon* ``H``.
- :mod:`~reuse.runtime.control.registry`: the instances, their PIDs and executors, their
  frontiers and heartbeats (on Redis's clock), so a coordinator can tell a dead instance and
  the lowest frontier.
- :mod:`~reuse.runtime.control.outputs`: the sinks' output logs. Every instance publishes
  every record, and consumers read each record once, from whichever copy arrived first.

**The cut argument.** The horizon ``H`` is one integer in Redis that only grows. Two rules:

1. An instance claims a range ``[lo, hi)`` only with ``hi <= H`` for a value of ``H`` it read
   *in the same atomic step* as the journal (:meth:`OpLog.sync`), and only after it has
   applied every operation that step returned.
2. An operation's cut is the value of ``H`` when it is appended, or a larger ``at`` that
   then becomes ``H`` (:meth:`OpLog.propose`, one Lua script).

So an operation not yet in the journal gets a cut at or above the current ``H``, and thus
at or above every ``hi`` any instance has claimed: no instance can have claimed past a cut
before it learns of the operation, and every instance applies every operation at exactly its
cut, whatever its speed or clock. Cuts never decrease along the journal.

Who moves ``H``: every instance, in the same step, to its own data-ready mark (plus an
optional ``lead``). No instance ever waits for the horizon, and there is no coordinator in
the data path whose death would stop the others; an operation's cut is then the fastest
instance's frontier, the earliest cut any instance could still apply. A ``lead`` (or a
coordinator that moves ``H`` every ``c`` seconds to the arrived ``seq`` plus ``lead``) only
moves cuts further ahead: operations take effect ``lead / rate`` seconds later, and a
coordinator-moved horizon holds instances back unless ``lead >= rate * c``
(``docs/failures.md``).

Nothing here imports Spark; the scripts need Redis 7 (``TIME`` inside scripts).
"""

from __future__ import annotations

from reuse.runtime.control.common import ControlError
from reuse.runtime.control.oplog import Operation, OpLog
from reuse.runtime.control.outputs import Output, OutputLog, longest_gap
from reuse.runtime.control.registry import Instance, Registry

__all__ = ["ControlError", "OpLog", "Operation", "Registry", "Instance", "OutputLog", "Output",
           "longest_gap"]
