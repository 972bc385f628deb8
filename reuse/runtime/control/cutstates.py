"""Task states at the journal's cuts, shared by a run's instances.

Every instance stops a batch at every cut of the journal (:func:`reuse.runtime.apps.roles.ready_mark`)
and saves its task states there. It also puts them here, one hash per cut
(``reuse:ctl:<run>:state:<cut>``, field = task, value = its state as JSON), keeping the first
copy of each (``HSETNX``): every instance that runs a task computes the same state at the same
cut, so any copy will do and the fastest instance's is there first.

Two readers take states from a *live* instance this way, never from a dead one's disk:

- a replacement instance that joins at a cut ``J`` decided in the journal (its ``join``
  operation), for every stateful task it runs from ``J`` on;
- a replica instance whose task set grows at a cut (a task reaches ``U`` users), for the
  stateful tasks it starts running there warm.

A reader waits (:meth:`CutStates.take`) until the live instances have reached the cut; the
hashes expire after ``ttl_s`` (by then every instance is past them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from typing import Any

from reuse.runtime.control.common import ControlError, RedisPart

__all__ = ["CutStates"]


class CutStates(RedisPart):
    """The task states of a run's instances at its journal's cuts (see the module docstring)."""

    ttl_s = 3600

    def put(self, cut: int, states: Mapping[str, Any]) -> int:
        """Offer the states at ``cut`` (kept only where no copy is there yet); returns how many
        were new."""
        if not states:
            return 0
        key = self.key(f"state:{int(cut)}")
        with self.client.pipeline(transaction=False) as p:
            for task, st in states.items():
                p.hsetnx(key, task, json.dumps(st, separators=(",", ":")))
            p.expire(key, self.ttl_s)
            got = p.execute()
        return sum(1 for x in got[:-1] if x)

    def take(self, cut: int, tasks: Collection[str], *, timeout_s: float = 120.0,
             poll_s: float = 0.1) -> dict[str, Any]:
        """The states of ``tasks`` at ``cut``, waiting up to ``timeout_s`` for an instance that
        runs them to get there.

        Raises
        ------
        ControlError
            Some state did not arrive in time: no live instance runs those tasks (or none
            reached the cut).
        """
        key = self.key(f"state:{int(cut)}")
        want = sorted(set(tasks))
        deadline = time.time() + timeout_s
        while True:
            vals = self.client.hmget(key, want) if want else []
            missing = [t for t, v in zip(want, vals, strict=True) if v is None]
            if not missing:
                return {t: json.loads(v) for t, v in zip(want, vals, strict=True)}
            if time.time() > deadline:
                raise ControlError(f"run {self.run!r}: no live instance put the state of "
                                   f"{', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}"
                                   f" at cut {cut} within {timeout_s:.0f}s")
            time.sleep(poll_s)
