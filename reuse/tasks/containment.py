"""The containment rules by name (issue 25, item 3): an explicit dict, nothing registered at import.

Each rule names a task type whose :meth:`~reuse.tasks.base.Task.contains` proves, from two
configs, that a narrow task may read a wide one's output (the proof is declared next to the
task's code, as its canonical form is). :func:`reuse.core.containment.contain` applies them at
submit under the ``semantic`` policy (:mod:`reuse.tasks.matching`).

- ``range``: a ``RangeFilter`` whose ranges lie inside a running one's, over the same inputs;
- ``bloom``: a ``BloomFilterCheck`` over the same model (file, field, ``m`` and ``k``) trained on
  a subset of a running one's lines.

Examples
--------
>>> rule = RULES["range"]
>>> rule.contains({"valid_range": {"t": [0, 40]}}, {"valid_range": {"t": [5, 30], "h": [0, 9]}})
True
>>> rule.contains({"valid_range": {"t": [0, 40]}}, {"valid_range": {"t": [5, 50]}})
False
>>> [r.name for r in containment_rules()]
['range', 'bloom']
"""

from __future__ import annotations

from collections.abc import Iterable

from reuse.core.errors import ReuseError
from reuse.core.matching import ContainmentRule
from reuse.tasks.filters import BloomFilterCheck, RangeFilter

__all__ = ["RULES", "containment_rules"]

#: The rules, by name.
RULES: dict[str, ContainmentRule] = {
    "range": ContainmentRule("range", RangeFilter.type_name, RangeFilter.contains),
    "bloom": ContainmentRule("bloom", BloomFilterCheck.type_name, BloomFilterCheck.contains),
}


def containment_rules(names: Iterable[str] | None = None) -> tuple[ContainmentRule, ...]:
    """The rules of some names (all of them by default); a ``ReuseError`` for an unknown one."""
    try:
        return tuple(RULES[n] for n in (RULES if names is None else names))
    except KeyError as exc:
        raise ReuseError(f"unknown containment rule {exc.args[0]!r} (choose from "
                         f"{', '.join(RULES)})") from None
