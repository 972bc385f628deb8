"""The match policies by name: ``exact`` and ``semantic`` (issue 25, items 1 to 3).

``semantic`` compares each task by the canonical form its type declares next to its code
(:meth:`reuse.tasks.base.Task.canonical`) and lets a task's inputs come in any order when its type
commutes (:attr:`reuse.tasks.base.Task.commutes`: every stateless task) and nothing downstream of it
sees the order (see :mod:`reuse.core.matching`). Types the workbench has no code for (the sources
and the OPMW components, run as Viete's pi) keep the paper's model: config as written, inputs
order-free, as under ``exact``. ``semantic`` also applies the containment rules
(:mod:`reuse.tasks.containment`): a narrower filter over the same inputs as a running wider one
reads the wider one's output (:mod:`reuse.core.containment`).

Examples
--------
>>> policy = match_policy("semantic")
>>> policy.config_key("RangeFilter", {"valid_range": {"t": [1, "40"]}})
'{"mode":"drop","valid_range":{"t":[1.0,40.0]}}'
>>> commutes("MQTTPublish"), commutes("ErrorEstimation"), commutes("SomeOpmwStep")
(True, False, True)
"""

from __future__ import annotations

from typing import Any

from reuse.core.errors import ReuseError
from reuse.core.matching import EXACT, MatchPolicy
from reuse.tasks import TASK_TYPES
from reuse.tasks.containment import containment_rules

__all__ = ["canonical", "commutes", "SEMANTIC", "MATCH_POLICIES", "match_policy"]


def canonical(type_name: str, config: Any) -> Any:
    """The canonical form of a config of a type (the config itself for a type with no code)."""
    cls = TASK_TYPES.get(type_name)
    return config if cls is None else cls.canonical(config)


def commutes(type_name: str) -> bool:
    """Whether a task of the type treats its inputs as one union (a type with no code: yes)."""
    cls = TASK_TYPES.get(type_name)
    return True if cls is None else cls.commutes


#: Canonical configs, order-free inputs where the task's code allows them, and containment.
SEMANTIC = MatchPolicy("semantic", canonical=canonical, commutes=commutes,
                       containment=containment_rules())

#: The policies ``--match`` names.
MATCH_POLICIES: dict[str, MatchPolicy] = {"exact": EXACT, "semantic": SEMANTIC}


def match_policy(name: str) -> MatchPolicy:
    """The policy of a name; a :class:`~reuse.core.errors.ReuseError` for an unknown one."""
    try:
        return MATCH_POLICIES[name]
    except KeyError:
        raise ReuseError(f"unknown match policy {name!r} (choose from "
                         f"{', '.join(MATCH_POLICIES)})") from None
