"""Match policies: which spellings and input orders count as the same task (issue 25).

Section 3.2 calls two tasks config-similar when their configs are equal, and compares ancestor
graphs by a bijection that ignores the order of a task's inputs. A :class:`MatchPolicy` says
what "equal config" and "same inputs" mean to :func:`reuse.core.equivalence.signatures` and to
the :class:`~reuse.core.manager.Manager`:

- ``exact`` (:data:`EXACT`, the default): a config is its canonical JSON text (key order does
  not matter, ``1`` and ``1.0`` and ``"1"`` do), and every task's inputs are order-free, as the
  paper's bijection has them. A running task reads its inputs in the order of the dataflow that
  started it.
- a semantic policy (built by :func:`reuse.tasks.matching.match_policy`, since only the task
  layer knows the task types) adds a ``canonical`` form per task type (``(type, config) ->
  config``) and a ``commutes`` predicate per type. A task's input order then counts unless its
  type commutes *and* no task downstream of it in the dataflow is order-sensitive: a commuting
  task (a union) emits, for one source ``seq``, the same multiset of events whatever the order
  of its inputs, but the order of those events is seen by a stateful task further down. The
  order-free tasks are wired to their inputs in signature order, so a running task's signature
  always names the order it reads its inputs in.

A policy may also carry :class:`ContainmentRule` s (issue 25, item 3): a task whose config is
*contained* in a running task's (a narrower filter over the same inputs) reads that task's output
instead of its inputs. :func:`reuse.core.containment.contain` does the rewrite; the rules, which
need the task types' semantics, come from the task layer.

Examples
--------
>>> from reuse.core.dataflow import Task
>>> EXACT.config_key("K", {"b": 1, "a": 2}) == Task("k", "K", {"a": 2, "b": 1}).config_key
True
>>> loose = MatchPolicy("loose", canonical=lambda t, c: {k: float(v) for k, v in c.items()},
...                     commutes=lambda t: t != "Join")
>>> loose.config_key("K", {"n": 1}) == loose.config_key("K", {"n": "1.0"})
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reuse.core.dataflow import Dataflow, Task, canonical_config

__all__ = ["ContainmentRule", "MatchPolicy", "EXACT", "KEY_MEMO_SIZE"]


@dataclass(frozen=True)
class ContainmentRule:
    """A declared containment between two tasks of one type over the same inputs.

    ``contains(wide, narrow)`` must be true only when it is *provable* from the two configs
    that, fed the same events, a task built from ``narrow`` keeps a subset of what one built
    from ``wide`` keeps, and that the narrow task applied to the wide one's output gives
    exactly what it gives applied to the inputs: then the chain ``inputs -> wide -> narrow``
    is the narrow task, and the narrow task becomes a small residual behind a running wide one.
    When in doubt (a config it cannot read, an unusual mode), it returns false.

    Attributes
    ----------
    name
        The rule's name, recorded with each rewrite it makes.
    type
        The task type it applies to (the wide and the narrow task are both of it).
    contains
        ``(wide config, narrow config) -> bool``.
    fresh_inputs
        Whether the proof holds only for inputs no task of the rule's type has shaped. A
        filter's proof holds for any input; a window's (``panes``) holds for raw values, and
        for blocks of a size dividing the wide window, not for blocks of any size. The core
        then applies the rule only to a task with no ancestor of the type in the submitted
        dataflow, and moves a residual from its wide task ``w`` to a narrower running ``c``
        that reads ``w`` only when ``contains(w, c)``: so every task of the type above it in
        the plan is a wide task of the chain, each containing the next.
    """

    name: str
    type: str
    contains: Callable[[Any, Any], bool]
    fresh_inputs: bool = False


@dataclass(frozen=True)
class MatchPolicy:
    """How tasks are compared: a config canonicaliser and which task types commute.

    Attributes
    ----------
    name
        ``"exact"``, ``"semantic"``: what the CLI and a saved state call it.
    canonical
        ``(type, config) -> config`` giving each config its canonical form (``None``: the config
        as written).
    commutes
        ``type -> bool``: whether a task of the type treats its inputs as one union (``None``:
        the paper's model, every task's inputs are order-free and keep the submitter's order).
    containment
        The containment rules the manager applies at submit (none: no rewrite).
    """

    name: str
    canonical: Callable[[str, Any], Any] | None = None
    commutes: Callable[[str], bool] | None = None
    containment: tuple[ContainmentRule, ...] = ()
    # (type, config as written) -> config key: see task_key
    _keys: dict[tuple[str, str], str] = field(default_factory=dict, init=False, repr=False,
                                              compare=False, hash=False)
    # (rule, wide key, narrow key) -> verdict: see contains
    _verdicts: dict[tuple[str, str, str], bool] = field(default_factory=dict, init=False,
                                                         repr=False, compare=False, hash=False)

    @property
    def ordered_hash(self) -> bool:
        """Whether signatures hash the inputs in :meth:`inputs` order (else sorted)."""
        return self.commutes is not None

    def config_key(self, type_: str, config: Any) -> str:
        """The text compared as a task's config: the canonical JSON of its canonical form."""
        return canonical_config(config if self.canonical is None
                                else self.canonical(type_, config))

    def task_key(self, task: Task) -> str:
        """:meth:`config_key` of a task's type and config, remembered by its abstract task.

        Why: a canonical form costs a JSON encoding per task, and the planner asks for the
        same few configs at every submit (issue 25's 2x planner-cost target). The memo is keyed
        by the type and the config's canonical JSON text (:attr:`Task.abstract`), so it relies
        on a type's canonical form being a function of the config's JSON value, as it is for
        configs read from JSON. Without a canonical form the key is the task's own. The memo
        is emptied when it reaches :data:`KEY_MEMO_SIZE` entries, so it stays bounded.
        """
        if self.canonical is None:
            return task.config_key
        key = self._keys.get(task.abstract)
        if key is None:
            if len(self._keys) >= KEY_MEMO_SIZE:
                self._keys.clear()
            key = self._keys[task.abstract] = self.config_key(task.type, task.config)
        return key

    def contains(self, rule: ContainmentRule, wide_key: str, wide: Any, narrow_key: str,
                 narrow: Any) -> bool:
        """``rule.contains(wide, narrow)``, remembered by the two configs' keys.

        Why: the planner checks every candidate wide task at every submit, and a rule reads
        both configs afresh each time (issue 25's 2x planner-cost target). A key must name
        the config's canonical form: the containment planner passes a running task's
        signature, or :meth:`task_key` for the submitted task. So a rule must decide by the
        canonical forms, as a rule that reads a config the way the task's constructor does
        (as the canonical form does) will. Bounded like :meth:`task_key`.
        """
        memo = (rule.name, wide_key, narrow_key)
        verdict = self._verdicts.get(memo)
        if verdict is None:
            if len(self._verdicts) >= KEY_MEMO_SIZE:
                self._verdicts.clear()
            verdict = self._verdicts[memo] = bool(rule.contains(wide, narrow))
        return verdict

    def ordered_tasks(self, flow: Dataflow) -> frozenset[str]:
        """The tasks of ``flow`` whose input order counts: a type that does not commute, or a
        task upstream of one (bottom-up over the DAG, O(|D|))."""
        if self.commutes is None:
            return frozenset()
        out: set[str] = set()
        for tid in reversed(flow.order):
            if not (self.commutes(flow.task(tid).type) and out.isdisjoint(flow.children[tid])):
                out.add(tid)
        return frozenset(out)

    def inputs(self, parents: Sequence[str], sig: Mapping[str, str], ordered: bool,
               ) -> list[str]:
        """A task's parent ids in the order it reads them when it runs: the dataflow's order
        when the order counts (or under the paper's model), else by parent signature."""
        if self.commutes is None or ordered:
            return list(parents)
        return sorted(parents, key=lambda p: sig[p])


#: How many config keys a policy remembers (:meth:`MatchPolicy.task_key`) before starting over.
KEY_MEMO_SIZE = 1 << 16

#: The paper's equivalence, as the workbench had it before issue 25.
EXACT = MatchPolicy("exact")
