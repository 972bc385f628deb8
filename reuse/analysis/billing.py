"""Fair cost sharing: who pays for a shared task (issue 15).

Reuse lowers the total cost of a set of dataflows, but each user still needs their own bill. The
paper leaves fair billing of reused tasks to future work; this module gives a rule that can be
checked, and the numbers to check it with.

The cost model
--------------
Time is cut into the trace's steps; a step is billed on the system *after* its operation (as
``reuse plan`` counts tasks), so a dataflow is billed for the step that submits it and not for the
step that removes it. At step ``k`` the present dataflows ``P_k`` are the players. What the
system spends at that step is a list of :class:`Charge` items, each a cost ``c >= 0`` and the
non-empty set ``U`` of present dataflows it serves:

- a running task ``tau``: ``U_tau`` are the dataflows using it (its reuse count is ``|U_tau|``).
  At the planner level its cost is a weight per step: 1 (``UNIT_COSTS``, so costs count
  task-steps), or a per-type cost from a calibration file (:func:`load_costs`). A live runtime
  may feed the CPU each task measurably used at that step instead;
- a shared overhead ``o`` (a runtime's per-query or per-shard cost, ``overhead=True``): ``U_o``
  are the dataflows it serves, i.e. those with at least one task in that query or shard.

The game and its Shapley value
------------------------------
Running a set ``S`` of dataflows together needs the union of their items, so step ``k``'s cost
game is ``v_k(S) = sum_x c_x [U_x & S != {}]``: the cost of the union of the tasks (and
overheads) ``S`` needs. ``v_k({i})`` is dataflow ``i``'s *standalone* cost at that step: with
unit costs, its number of tasks (the manager runs exactly the distinct signatures, so a de-dup
dataflow needs ``|D_i|`` tasks of its own).

**Claim.** The Shapley value of ``v_k`` gives player ``i`` the share
``phi_i(v_k) = sum_{x : i in U_x} c_x / |U_x|``: each item's cost is split equally among the
dataflows using it at that step (:func:`shapley_shares`).

**Proof.** ``v_k = sum_x c_x w_x`` with ``w_x(S) = [S & U_x != {}]``. The Shapley value is
linear in the game, so ``phi(v_k) = sum_x c_x phi(w_x)``. In ``w_x`` a player ``j`` outside
``U_x`` is a null player (``w_x(S | {j}) = w_x(S)`` for every ``S``), so ``phi_j(w_x) = 0``; any
two players of ``U_x`` are symmetric (swapping them leaves ``w_x`` unchanged), so they get the
same value; and efficiency gives ``sum_j phi_j(w_x) = w_x(P_k) = 1``. Hence
``phi_i(w_x) = 1 / |U_x|`` for ``i`` in ``U_x``. QED. The tests check this against a brute-force
Shapley value (the average marginal cost over all arrival orders) on small random workloads.

**The share lies in the core.** The marginal cost of ``i`` in ``w_x``,
``w_x(S | {i}) - w_x(S) = [i in U_x and S & U_x = {}]``, can only fall as ``S`` grows, so each
``w_x`` is concave (submodular), and so is ``v_k``, a non-negative sum of them. By Shapley
(1971) the Shapley value of a concave cost game lies in its core; here directly:
``sum_{i in S} phi_i = sum_x c_x |S & U_x| / |U_x| <= sum_x c_x [S & U_x != {}] = v_k(S)``,
with equality for ``S = P_k`` (budget balance). So no dataflow pays more than it would alone,
no group more than running together alone, and the step's shares add up to its cost. Two
dataflows with identical needs are symmetric players and pay the same; a dataflow that shares
nothing (every ``U_x`` containing it is ``{i}``) pays exactly its standalone cost.

**Over a trace.** The trace's game is ``V(S) = sum_k v_k(S & P_k)`` (a dataflow absent at step
``k`` is a null player there). By linearity the bill ``sum_k phi(v_k)`` is the Shapley value of
``V``, and everything above holds for the whole trace: :func:`bills`.

**Overheads.** An overhead ``o`` that a query or shard incurs as long as it serves any of
``U_o`` has the same form ``c_o w_o``, so its Shapley share is ``c_o / |U_o|``: *an overhead is
split equally among the dataflows it serves*. One rule covers tasks and overheads.

The model assumes a task's cost does not depend on how many dataflows read its output (true at
the planner level; live, the fan-out to other queries belongs to the bus, an overhead).

Containment (issue 25)
----------------------
Under a policy with containment rules (``planner_steps(..., match=SEMANTIC)``) the manager
merges each dataflow's *plan* (:mod:`reuse.core.containment`), so ``U_tau`` are the dataflows
whose plans hold ``tau``, and the rule above becomes: **a shared wide task is split equally
among all its users, the dataflows that read it through a residual included; a residual task is
charged only to the dataflows whose plan holds it** (its own, or several that submitted the same
narrow filter behind the same wide one), never to the wide task's owner. Why: the residual's
dataflow needs the wide task as surely as the owner does (removing the owner leaves the wide
task running for it), while the owner does not need the residual. Every running task is
charged once per step, so the bills still add up to what the running tasks cost.

What that means for a residual's dataflow: its standalone cost ``v({i})`` is taken over its
plan, which holds the wide task as well, so at planner weights (a cost per task, whatever the
events it sees) it is one task more than its DAG as written once the wide task's owner has left,
and a residual's dataflow can be billed more than its DAG alone would cost. A containment
rewrite saves work, the events the residual does not see, not tasks; only measured costs
(:mod:`reuse.analysis.billing_live`) can show that saving, and the live run has no containment
yet.

Early arrivals and the lifetime rule
------------------------------------
Per step, the first user of a task pays for it alone until a second one joins; a late arrival
gets the task at a shared price at once. :func:`tenancies` and :func:`arrival_groups` measure
how the saving splits between early and late arrivals. The alternative rule ``"lifetime"``
(:func:`lifetime_shares`) averages the share over the item's lifetime (a maximal run of
consecutive steps in which it is charged): its lifetime cost ``C`` is split in proportion to the
steps each dataflow used it, so every user-step of the lifetime pays the same rate
``C / sum_i n_i``, however early or late it came. Its properties (tested the same way):

- budget balance over each lifetime, hence over the trace (not per step);
- identical needs pay the same; a dataflow that shares nothing pays its standalone cost;
- no dataflow pays more than alone *when an item's cost per step is constant over its lifetime*
  (planner weights): ``c L n_i / N <= c n_i`` as each of the ``L`` steps has a user (``N >= L``).
  With costs that vary over time (live CPU) it can: a task that was dear while another
  dataflow used it alone passes part of that price to a later user (the tests show one);
- it is *not* in the core for groups: two dataflows that used a task together for one step,
  in a lifetime another dataflow kept alone for long, pay for more than that one step;
- it needs hindsight: a step's charge is final only when the item stops.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reuse.core.dataflow import Dataflow
from reuse.core.errors import CostError
from reuse.core.manager import Manager
from reuse.core.matching import EXACT, MatchPolicy
from reuse.core.plan import PlanDelta
from reuse.core.planner import StepRecord, replay, write_table
from reuse.core.traces import Op

__all__ = ["Charge", "StepCosts", "TaskCosts", "UNIT_COSTS", "parse_costs", "load_costs",
           "check_costs", "planner_steps", "shapley_shares", "lifetime_shares", "RULES",
           "step_shares", "Bill", "bills", "Tenancy", "tenancies", "arrival_groups",
           "BILL_COLUMNS", "write_bills"]


def _check_cost(value: Any, what: str) -> float:
    """A cost must be a finite number >= 0 (the game is concave only for such costs)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {json.dumps(value)[:40]}")
    return float(value)


@dataclass(frozen=True)
class Charge:
    """One cost incurred at a step and the dataflows it serves.

    ``item`` names what costs (a running task id, or an overhead such as ``query:R1``);
    ``users`` are the dataflows that need it at that step (non-empty).
    """

    item: str
    cost: float
    users: frozenset[str]
    overhead: bool = False

    def __post_init__(self) -> None:
        if not self.item:
            raise ValueError("a charge needs an item name")
        object.__setattr__(self, "cost", _check_cost(self.cost, f"cost of {self.item!r}"))
        object.__setattr__(self, "users", frozenset(self.users))
        if not self.users:
            raise ValueError(f"charge {self.item!r} serves no dataflow")

    def split(self) -> dict[str, float]:
        """The Shapley split of this item alone: its cost equally among its users.

        Examples
        --------
        >>> Charge("A.parse", 1.0, frozenset({"A", "B", "C"})).split()["B"]
        0.3333333333333333
        """
        part = self.cost / len(self.users)
        return dict.fromkeys(self.users, part)


@dataclass(frozen=True)
class StepCosts:
    """What one step costs: the present dataflows ``P_k`` and the charges among them."""

    step: int
    present: frozenset[str]
    charges: tuple[Charge, ...] = ()
    by_item: Mapping[str, Charge] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "present", frozenset(self.present))
        object.__setattr__(self, "charges", tuple(self.charges))
        by_item: dict[str, Charge] = {}
        for c in self.charges:
            if c.item in by_item:
                raise ValueError(f"step {self.step}: item {c.item!r} is charged twice")
            if not c.users <= self.present:
                raise ValueError(f"step {self.step}: item {c.item!r} serves dataflows that are "
                                 f"not present: {sorted(c.users - self.present)}")
            by_item[c.item] = c
        object.__setattr__(self, "by_item", by_item)

    @property
    def total(self) -> float:
        """``v_k(P_k)``: what the step costs with reuse."""
        return sum(c.cost for c in self.charges)

    def cost_of(self, group: Iterable[str]) -> float:
        """``v_k(S)``: the cost of the union of the items the dataflows of ``group`` need."""
        s = set(group)
        return sum(c.cost for c in self.charges if c.users & s)

    def standalone(self, dag: str) -> float:
        """``v_k({dag})``: what ``dag`` would cost at this step if it ran alone."""
        return sum(c.cost for c in self.charges if dag in c.users)


# --- the cost model at the planner level ------------------------------------------------------


@dataclass(frozen=True)
class TaskCosts:
    """A weight per step for each task type; ``default`` for types not listed (``None``: none).

    The calibration file (:func:`load_costs`) is JSON::

        {"unit": "CPU-s per step", "default": 1.0,
         "types": {"SenMLParse": 0.42, "KalmanFilter": 0.9}}

    ``types`` maps task types to costs, ``default`` (optional) prices every other type, ``unit``
    is free text for the plots; each cost is a finite number >= 0. Without a ``default``, every
    type the trace's dataflows use must be listed, so a typo in a type name is an error rather
    than a silent 1.

    Examples
    --------
    >>> TaskCosts({"Parse": 0.5}, default=1.0).weight("Parse"), UNIT_COSTS.weight("Kalman")
    (0.5, 1.0)
    """

    types: Mapping[str, float] = field(default_factory=dict)
    default: float | None = 1.0
    unit: str = "task-steps"
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        try:
            types = {}
            for name, value in self.types.items():
                if not isinstance(name, str) or not name:
                    raise ValueError(f"task type names must be non-empty strings, got {name!r}")
                types[name] = _check_cost(value, f"cost of type {name!r}")
            default = None if self.default is None else _check_cost(self.default, "'default'")
        except ValueError as exc:
            raise CostError(str(exc), file=self.source) from None
        if not types and default is None:
            raise CostError("prices nothing: give 'types' or a 'default'", file=self.source)
        object.__setattr__(self, "types", types)
        object.__setattr__(self, "default", default)

    def weight(self, task_type: str) -> float:
        """The cost per step of one running task of ``task_type``."""
        if task_type in self.types:
            return self.types[task_type]
        if self.default is None:
            raise CostError(f"no cost for task type {task_type!r} (list it under 'types' or "
                            "give a 'default')", file=self.source)
        return self.default


#: One per running task per step: bills count task-steps, as ``reuse plan`` counts tasks.
UNIT_COSTS = TaskCosts()

_COST_KEYS = ("types", "default", "unit", "meta")


def parse_costs(data: Any, *, source: str | None = None) -> TaskCosts:
    """Validate JSON data as a calibration (format in :class:`TaskCosts`)."""
    if not isinstance(data, dict):
        raise CostError("a cost calibration must be a JSON object with 'types' and/or "
                        "'default'", file=source)
    unknown = sorted(set(data) - set(_COST_KEYS))
    if unknown:
        raise CostError(f"unknown key {unknown[0]!r} (expected {', '.join(_COST_KEYS)})",
                        file=source)
    types = data.get("types", {})
    if not isinstance(types, dict):
        raise CostError("'types' must be an object mapping task types to costs", file=source)
    unit = data.get("unit", "cost units per step")
    if not isinstance(unit, str):
        raise CostError("'unit' must be a string", file=source)
    return TaskCosts(types, data.get("default"), unit, source)


def load_costs(path: str | Path) -> TaskCosts:
    """Read a calibration file; a one-line :class:`~reuse.core.errors.CostError` naming it if bad."""
    name = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CostError(f"cannot read file ({exc.strerror})", file=name) from None
    except json.JSONDecodeError as exc:
        raise CostError(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                        file=name) from None
    except UnicodeDecodeError:
        raise CostError("is not UTF-8 text", file=name) from None
    return parse_costs(data, source=name)


def check_costs(costs: TaskCosts, flows: Iterable[Dataflow]) -> None:
    """Check that every task of ``flows`` has a price, naming the first DAG and task without."""
    if costs.default is not None:
        return
    for flow in flows:
        for t in flow.tasks:
            if t.type not in costs.types:
                raise CostError(f"no cost for task type {t.type!r} (list it under 'types' or "
                                "give a 'default')", file=costs.source, dag=flow.id, task=t.id)


def planner_steps(flows: Mapping[str, Dataflow], ops: Sequence[Op],
                  costs: TaskCosts = UNIT_COSTS, *, check: bool = True,
                  on_step: Callable[[StepRecord, PlanDelta], None] | None = None,
                  match: MatchPolicy = EXACT,
                  ) -> tuple[list[StepCosts], list[StepRecord]]:
    """Replay a trace through the manager and price every running task at every step.

    Returns the :class:`StepCosts` (one charge per running task, its users from the manager)
    and ``reuse plan``'s step records. Prices are checked before the first operation. ``match``
    is the manager's policy (the flows must be de-dup under it); under containment a task's
    users are the dataflows whose plans hold it (see "Containment" above).
    """
    check_costs(costs, (flows[d] for d in dict.fromkeys(o.dag for o in ops if o.dag in flows)))
    m = Manager(match=match)
    steps: list[StepCosts] = []

    def price(rec: StepRecord, delta: PlanDelta) -> None:
        charges = tuple(Charge(t.id, costs.weight(t.type), m.users(t.id))
                        for t in m.running_tasks())
        steps.append(StepCosts(rec.step, frozenset(m.submitted), charges))
        if on_step is not None:
            on_step(rec, delta)

    records = replay(flows, ops, check=check, manager=m, on_step=price)
    return steps, records


# --- the rules ----------------------------------------------------------------------------------


def shapley_shares(steps: Sequence[StepCosts]) -> list[dict[str, float]]:
    """Per step, each present dataflow's Shapley share: every charge split equally among its
    users (see the module docstring for the proof)."""
    out = []
    for s in steps:
        d = dict.fromkeys(sorted(s.present), 0.0)
        for c in s.charges:
            for u, part in c.split().items():
                d[u] += part
        out.append(d)
    return out


def _lifetimes(steps: Sequence[StepCosts]) -> list[tuple[str, list[int]]]:
    """Every item's lifetimes: maximal runs of consecutive steps (indexes) charging it."""
    done: list[tuple[str, list[int]]] = []
    running: dict[str, list[int]] = {}
    for k, s in enumerate(steps):
        for item in [i for i in running if i not in s.by_item]:
            done.append((item, running.pop(item)))
        for item in s.by_item:
            running.setdefault(item, []).append(k)
    done.extend(running.items())
    return done


def lifetime_shares(steps: Sequence[StepCosts]) -> list[dict[str, float]]:
    """Per step, each present dataflow's share under the lifetime rule.

    Over each lifetime of an item, its total cost ``C`` is spread evenly over its user-steps
    (``N``: the sum over its steps of the number of users); a dataflow pays ``C / N`` for every
    step it used the item.
    """
    out: list[dict[str, float]] = [dict.fromkeys(sorted(s.present), 0.0) for s in steps]
    for item, ks in _lifetimes(steps):
        charges = [steps[k].by_item[item] for k in ks]
        rate = sum(c.cost for c in charges) / sum(len(c.users) for c in charges)
        for k, c in zip(ks, charges, strict=True):
            for u in c.users:
                out[k][u] += rate
    return out


#: The billing rules by name (explicit; ``shapley`` is the default and the fair one).
RULES: Mapping[str, Callable[[Sequence[StepCosts]], list[dict[str, float]]]] = {
    "shapley": shapley_shares, "lifetime": lifetime_shares}


def step_shares(steps: Sequence[StepCosts], rule: str = "shapley") -> list[dict[str, float]]:
    """Per step, each present dataflow's share under ``rule`` (a name of :data:`RULES`)."""
    if rule not in RULES:
        raise ValueError(f"unknown billing rule {rule!r} (choose from {', '.join(RULES)})")
    return RULES[rule](steps)


# --- bills --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bill:
    """One dataflow's bill over a trace.

    ``standalone`` is ``V({dag})``, what running it alone at the steps it was present would
    cost; ``bill`` its share of what was spent; ``per_step`` its share at each step present.
    """

    dag: str
    steps_present: int
    standalone: float
    bill: float
    per_step: Mapping[int, float] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.steps_present < 0 or self.standalone < 0 or self.bill < -1e-9:
            raise ValueError(f"bill of {self.dag!r}: negative figures")

    @property
    def saving(self) -> float:
        return self.standalone - self.bill

    @property
    def saving_pct(self) -> float:
        """Saving in percent of the standalone cost (0 when running alone costs nothing)."""
        return 100.0 * self.saving / self.standalone if self.standalone else 0.0


def bills(steps: Sequence[StepCosts], rule: str = "shapley") -> list[Bill]:
    """Every dataflow's bill over the steps, in order of first presence.

    Examples
    --------
    Two dataflows share a source ``s``; ``A`` arrives first and pays for it alone one step:

    >>> s1 = StepCosts(1, frozenset("A"), (Charge("s", 1, {"A"}), Charge("a", 1, {"A"})))
    >>> s2 = StepCosts(2, frozenset("AB"), (Charge("s", 1, {"A", "B"}), Charge("a", 1, {"A"}),
    ...                                      Charge("b", 1, {"B"})))
    >>> [(b.dag, b.steps_present, b.standalone, b.bill) for b in bills([s1, s2])]
    [('A', 2, 4.0, 3.5), ('B', 1, 2.0, 1.5)]
    >>> [(b.dag, round(b.bill, 3)) for b in bills([s1, s2], "lifetime")]
    [('A', 3.333), ('B', 1.667)]
    """
    shares = step_shares(steps, rule)
    order: dict[str, None] = {}
    for s in steps:
        order.update(dict.fromkeys(sorted(s.present)))
    out = []
    for dag in order:
        per_step = {s.step: sh[dag] for s, sh in zip(steps, shares, strict=True) if dag in s.present}
        standalone = sum(s.standalone(dag) for s in steps if dag in s.present)
        out.append(Bill(dag, len(per_step), standalone, sum(per_step.values()), per_step))
    return out


BILL_COLUMNS = ["dag", "steps_present", "standalone", "bill", "saving_pct"]


def _num(x: float) -> str:
    """Costs in the CSV: integers as integers, otherwise 6 decimals without trailing zeros."""
    text = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def write_bills(rows: Sequence[Bill], path: str | Path, steps: Sequence[int] | None = None) -> None:
    """Write one CSV row per dataflow (:data:`BILL_COLUMNS`), atomically.

    With ``steps``, add a column ``step_<k>`` per step with the dataflow's share at that step
    (empty when it was not present).
    """
    steps = list(steps or [])

    def row(b: Bill) -> dict[str, Any]:
        d: dict[str, Any] = {"dag": b.dag, "steps_present": b.steps_present,
                             "standalone": _num(b.standalone), "bill": _num(b.bill),
                             "saving_pct": f"{b.saving_pct:.2f}"}
        d.update({f"step_{k}": _num(b.per_step[k]) if k in b.per_step else "" for k in steps})
        return d

    write_table(path, BILL_COLUMNS + [f"step_{k}" for k in steps], map(row, rows))


# --- early and late arrivals --------------------------------------------------------------------


@dataclass(frozen=True)
class Tenancy:
    """One stay of a dataflow: from the step that submitted it to the last step it was present.

    ``arrival`` ranks the trace's submissions (1 = first); ``others_at_arrival`` counts the
    dataflows already present when it came. A random walk may submit a dataflow several times:
    each stay is a tenancy of its own.
    """

    dag: str
    arrival: int
    first_step: int
    last_step: int
    others_at_arrival: int
    standalone: float
    bill: float

    @property
    def saving(self) -> float:
        return self.standalone - self.bill

    @property
    def saving_pct(self) -> float:
        return 100.0 * self.saving / self.standalone if self.standalone else 0.0


def tenancies(steps: Sequence[StepCosts], rule: str = "shapley") -> list[Tenancy]:
    """Every stay of every dataflow with its standalone cost and bill under ``rule``."""
    shares = step_shares(steps, rule)
    open_: dict[str, list[Any]] = {}  # dag -> [first_step, last_step, others, standalone, bill]
    closed: list[tuple[str, list[Any]]] = []
    before: frozenset[str] = frozenset()
    for s, sh in zip(steps, shares, strict=True):
        for dag in sorted(before - s.present):
            closed.append((dag, open_.pop(dag)))
        for dag in sorted(s.present - before):
            open_[dag] = [s.step, s.step, len(s.present) - 1, 0.0, 0.0]
        for dag in s.present:
            t = open_[dag]
            t[1] = s.step
            t[3] += s.standalone(dag)
            t[4] += sh[dag]
        before = s.present
    closed.extend(open_.items())
    closed.sort(key=lambda item: (item[1][0], item[0]))
    return [Tenancy(dag, n, t[0], t[1], t[2], t[3], t[4])
            for n, (dag, t) in enumerate(closed, start=1)]


def arrival_groups(stays: Sequence[Tenancy], groups: int = 2) -> list[dict[str, Any]]:
    """Split the stays by arrival order into ``groups`` equal parts (early first) and say how
    much of the standalone cost and of the saving each part has.

    If the saving went to each part in proportion to what it would cost alone,
    ``saving_share`` would equal ``standalone_share``; the difference is what early or late
    arrival is worth under the rule.
    """
    names = {2: ["early", "late"], 3: ["early", "middle", "late"]}.get(
        groups, [f"part {g + 1}" for g in range(groups)])
    ordered = sorted(stays, key=lambda t: t.arrival)
    total_alone = sum(t.standalone for t in ordered)
    total_saving = sum(t.saving for t in ordered)
    n = len(ordered)
    out = []
    for g in range(groups):
        part = ordered[g * n // groups:(g + 1) * n // groups]
        alone = sum(t.standalone for t in part)
        saving = sum(t.saving for t in part)
        out.append({"group": names[g], "stays": len(part), "standalone": alone,
                    "bill": alone - saving, "saving": saving,
                    "standalone_share": alone / total_alone if total_alone else 0.0,
                    "saving_share": saving / total_saving if total_saving else 0.0,
                    "saving_pct": 100.0 * saving / alone if alone else 0.0})
    return out
