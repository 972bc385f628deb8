"""The containment rules by name (issue 25, item 3): an explicit dict, nothing registered at import.

Each rule names a task type whose :meth:`~reuse.tasks.base.Task.contains` proves, from two
configs, that a narrow task may read a wide one's output (the proof is declared next to the
task's code, as its canonical form is). :func:`reuse.core.containment.contain` applies them at
submit under the ``semantic`` policy (:mod:`reuse.tasks.matching`).

- ``range``: a ``RangeFilter`` whose ranges lie inside a running one's, over the same inputs;
- ``bloom``: a ``BloomFilterCheck`` over the same model (file, field, ``m`` and ``k``) trained on
  a subset of a running one's lines;
- ``panes``: a ``BlockWindowAverage`` whose window is a multiple ``k * w`` of a running one's
  ``w``, over the same inputs, series (``group_by``) and a subset of its fields: it combines
  ``k`` of the running task's blocks (its panes, which carry their exact sums) into one of its
  own, bit for bit the mean it computes from the values.

What ``panes`` promises, exactly. The two tasks are stateful, so the promise is the one an
exact reuse of a stateful task makes, stated for the residual: fresh together (both from the
first event, as a dataflow and its plan run alone), the residual emits exactly what the narrow
task emits from the inputs. Joining a running wide task later (at the join point ``J``), the
residual continues as a narrow task that starts at ``J`` *warm*, with the wide task's partial
blocks at ``J`` as its own: its blocks start at the wide task's block boundaries, and the first
one may hold values from before ``J``, as a reused wide task's own outputs at ``J`` do. The
reference execution (:func:`reuse.runtime.accounting.reference_records`) runs the residual on the
wide task's outputs from its own join point, so it checks the runtime against what this says.
The proof holds for raw inputs only (not for blocks of another window), so the rule is declared
with ``fresh_inputs`` (:class:`~reuse.core.matching.ContainmentRule`).

Examples
--------
>>> rule = RULES["range"]
>>> rule.contains({"valid_range": {"t": [0, 40]}}, {"valid_range": {"t": [5, 30], "h": [0, 9]}})
True
>>> rule.contains({"valid_range": {"t": [0, 40]}}, {"valid_range": {"t": [5, 50]}})
False
>>> RULES["panes"].contains({"window": 5, "fields": ["t", "h"]}, {"window": 20, "fields": ["t"]})
True
>>> [r.name for r in containment_rules()]
['range', 'bloom', 'panes']
"""

from __future__ import annotations

from collections.abc import Iterable

from reuse.core.errors import ReuseError
from reuse.core.matching import ContainmentRule
from reuse.tasks.filters import BloomFilterCheck, RangeFilter
from reuse.tasks.stats import BlockWindowAverage

__all__ = ["RULES", "containment_rules"]

#: The rules, by name.
RULES: dict[str, ContainmentRule] = {
    "range": ContainmentRule("range", RangeFilter.type_name, RangeFilter.contains),
    "bloom": ContainmentRule("bloom", BloomFilterCheck.type_name, BloomFilterCheck.contains),
    "panes": ContainmentRule("panes", BlockWindowAverage.type_name, BlockWindowAverage.contains,
                             fresh_inputs=True),
}


def containment_rules(names: Iterable[str] | None = None) -> tuple[ContainmentRule, ...]:
    """The rules of some names (all of them by default); a ``ReuseError`` for an unknown one."""
    try:
        return tuple(RULES[n] for n in (RULES if names is None else names))
    except KeyError as exc:
        raise ReuseError(f"unknown containment rule {exc.args[0]!r} (choose from "
                         f"{', '.join(RULES)})") from None
