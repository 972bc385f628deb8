"""Fair cost sharing (reuse.analysis.billing): the Shapley share against a brute-force Shapley value, and
the bill's properties (budget balance, core, symmetry, no-sharing) on small random workloads, for
the Shapley rule and the lifetime rule.

The brute force never looks at the billing code or the manager's users: a step's game is
``v(S)`` = the summed weights of the distinct task signatures (:mod:`reuse.core.equivalence`) that
the dataflows of ``S`` need, and the Shapley value is the mean marginal cost over every order in
which the present dataflows could arrive.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.analysis.billing import (
    UNIT_COSTS,
    Charge,
    StepCosts,
    TaskCosts,
    arrival_groups,
    bills,
    check_costs,
    load_costs,
    parse_costs,
    planner_steps,
    step_shares,
    tenancies,
)
from reuse.core.dataflow import Dataflow, Task
from reuse.core.equivalence import dedup, signatures
from reuse.core.errors import CostError
from reuse.core.traces import Op

EPS = 1e-9
RULES = ("shapley", "lifetime")
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def brute_shapley(players: Sequence[str], v: Callable[[frozenset[str]], float]) -> dict[str, float]:
    """The Shapley value by its definition: mean marginal cost over all arrival orders."""
    total = dict.fromkeys(players, 0.0)
    orders = list(itertools.permutations(players))
    for order in orders:
        before: frozenset[str] = frozenset()
        for p in order:
            total[p] += v(before | {p}) - v(before)
            before = before | {p}
    return {p: x / len(orders) for p, x in total.items()}


def subsets(players: Iterable[str]) -> Iterable[frozenset[str]]:
    ps = sorted(players)
    for r in range(1, len(ps) + 1):
        for c in itertools.combinations(ps, r):
            yield frozenset(c)


# --- generic steps: random charges among random present sets ------------------------------------

PLAYERS = "abcde"
ITEMS = [f"x{i}" for i in range(6)]


@st.composite
def step_lists(draw, constant_costs: bool = False) -> list[StepCosts]:
    """1-6 steps; each has a present set and charges with random users among it. With
    ``constant_costs`` an item costs the same at every step (as planner weights do)."""
    price = {i: draw(st.integers(0, 5)) for i in ITEMS}
    out = []
    for k in range(1, draw(st.integers(1, 6)) + 1):
        present = draw(st.sets(st.sampled_from(PLAYERS), max_size=5))
        charges = []
        if present:
            for item in draw(st.sets(st.sampled_from(ITEMS), max_size=5)):
                users = draw(st.sets(st.sampled_from(sorted(present)), min_size=1))
                cost = price[item] if constant_costs else draw(
                    st.floats(0, 10, allow_nan=False, allow_infinity=False))
                overhead = draw(st.booleans())
                charges.append(Charge(item, cost, frozenset(users), overhead))
        out.append(StepCosts(k, frozenset(present), tuple(charges)))
    return out


def trace_game(steps: Sequence[StepCosts]) -> Callable[[frozenset[str]], float]:
    """``V(S) = sum_k v_k(S & P_k)``, from the charges' definition of ``v_k`` (cost_of)."""
    return lambda group: sum(s.cost_of(group & s.present) for s in steps)


@SETTINGS
@given(step_lists())
def test_step_share_is_the_brute_force_shapley_value(steps: list[StepCosts]) -> None:
    for s, shares in zip(steps, step_shares(steps, "shapley"), strict=True):
        expected = brute_shapley(sorted(s.present), s.cost_of)
        assert shares.keys() == expected.keys()
        assert all(close(shares[p], expected[p]) for p in expected), (shares, expected)


@SETTINGS
@given(step_lists())
def test_step_game_is_concave_and_the_share_in_its_core(steps: list[StepCosts]) -> None:
    for s, shares in zip(steps, step_shares(steps), strict=True):
        groups = [frozenset()] + list(subsets(s.present))
        for small in groups:  # concave: a player's marginal cost falls as the group grows
            for big in groups:
                if small <= big:
                    for p in s.present - big:
                        assert (s.cost_of(small | {p}) - s.cost_of(small)
                                >= s.cost_of(big | {p}) - s.cost_of(big) - EPS)
        assert close(sum(shares.values()), s.total)
        for g in groups[1:]:
            assert sum(shares[p] for p in g) <= s.cost_of(g) + EPS


@SETTINGS
@given(step_lists())
def test_trace_bill_is_the_shapley_value_of_the_trace_game(steps: list[StepCosts]) -> None:
    players = sorted({p for s in steps for p in s.present})
    if len(players) > 4:
        return  # keep the permutations few; the step test covers 5 players
    v = trace_game(steps)
    expected = brute_shapley(players, v)
    got = {b.dag: b.bill for b in bills(steps)}
    assert got.keys() == expected.keys()
    assert all(close(got[p], expected[p]) for p in players)


@SETTINGS
@given(step_lists(), st.sampled_from(RULES))
def test_budget_balance(steps: list[StepCosts], rule: str) -> None:
    assert close(sum(b.bill for b in bills(steps, rule)), sum(s.total for s in steps))


@SETTINGS
@given(step_lists())
def test_shapley_bill_lies_in_the_core_of_the_trace_game(steps: list[StepCosts]) -> None:
    v = trace_game(steps)
    rows = {b.dag: b for b in bills(steps)}
    for b in rows.values():
        assert close(b.standalone, v(frozenset({b.dag})))
        assert b.bill <= b.standalone + EPS
    for g in subsets(rows):
        assert sum(rows[p].bill for p in g) <= v(g) + EPS


@SETTINGS
@given(step_lists(constant_costs=True))
def test_lifetime_rule_charges_no_one_more_than_alone_when_prices_are_constant(
        steps: list[StepCosts]) -> None:
    for b in bills(steps, "lifetime"):
        assert b.bill <= b.standalone + EPS


def with_twin(steps: Sequence[StepCosts], p: str, twin: str) -> list[StepCosts]:
    """The same steps with ``twin`` needing exactly what ``p`` needs, whenever ``p`` is there."""
    out = []
    for s in steps:
        if p not in s.present:
            out.append(s)
            continue
        charges = tuple(Charge(c.item, c.cost, c.users | {twin} if p in c.users else c.users,
                               c.overhead) for c in s.charges)
        out.append(StepCosts(s.step, s.present | {twin}, charges))
    return out


@SETTINGS
@given(step_lists(), st.sampled_from(RULES))
def test_identical_needs_pay_the_same(steps: list[StepCosts], rule: str) -> None:
    twinned = with_twin(steps, "a", "a2")
    per_step = step_shares(twinned, rule)
    for s, shares in zip(twinned, per_step, strict=True):
        if "a" in s.present:
            assert close(shares["a"], shares["a2"])
    rows = {b.dag: b for b in bills(twinned, rule)}
    if "a" in rows:
        assert close(rows["a"].bill, rows["a2"].bill)
        assert close(rows["a"].standalone, rows["a2"].standalone)


def with_loner(steps: Sequence[StepCosts], price: Callable[[int], float]) -> list[StepCosts]:
    """Add dataflow ``z`` with two private items at every step."""
    return [StepCosts(s.step, s.present | {"z"},
                      s.charges + (Charge("z1", price(s.step), frozenset("z")),
                                   Charge("z2", 1.5, frozenset("z"), overhead=True)))
            for s in steps]


@SETTINGS
@given(step_lists(), st.sampled_from(RULES), st.integers(0, 3))
def test_a_dataflow_that_shares_nothing_pays_its_standalone_cost(
        steps: list[StepCosts], rule: str, slope: int) -> None:
    rows = {b.dag: b for b in bills(with_loner(steps, lambda k: 1.0 + slope * k), rule)}
    assert close(rows["z"].bill, rows["z"].standalone)
    assert close(rows["z"].standalone, sum(1.0 + slope * s.step + 1.5 for s in steps))


def test_lifetime_rule_is_not_in_the_core_for_groups() -> None:
    """``k`` keeps task ``x`` alone for 9 steps, ``i`` and ``j`` use it together one step: the
    lifetime rule spreads the 10 steps' cost over 12 user-steps and bills ``{i, j}`` 2 * 10/12
    for it, more than the 1 they cost together."""
    steps = [StepCosts(t, frozenset("k"), (Charge("x", 1, frozenset("k")),)) for t in range(1, 10)]
    steps.append(StepCosts(10, frozenset("ijk"), (Charge("x", 1, frozenset("ijk")),)))
    rows = {b.dag: b for b in bills(steps, "lifetime")}
    group = rows["i"].bill + rows["j"].bill
    assert close(group, 20 / 12) and group > trace_game(steps)(frozenset("ij"))
    assert all(b.bill <= b.standalone for b in rows.values())  # still individually rational
    shapley = {b.dag: b.bill for b in bills(steps)}
    assert close(shapley["i"] + shapley["j"], 2 / 3)


def test_lifetime_rule_can_exceed_standalone_when_prices_vary() -> None:
    """A task that cost 10 while ``j`` used it alone, then 1 when ``i`` joined: ``i`` pays a
    third of 11, more than the 1 it would cost alone. The Shapley rule charges it 1/2."""
    steps = [StepCosts(1, frozenset("j"), (Charge("x", 10, frozenset("j")),)),
             StepCosts(2, frozenset("ij"), (Charge("x", 1, frozenset("ij")),))]
    life = {b.dag: b for b in bills(steps, "lifetime")}
    assert close(life["i"].bill, 11 / 3) and life["i"].bill > life["i"].standalone == 1
    assert close({b.dag: b.bill for b in bills(steps)}["i"], 0.5)


def test_early_arrival_pays_alone_until_others_join() -> None:
    """Three dataflows on one source, arriving one per step and leaving together: per step the
    first pays the most; the lifetime rule charges every user-step the same rate."""
    present = ["a", "ab", "abc"]
    steps = [StepCosts(k, frozenset(p), (Charge("src", 6, frozenset(p)),))
             for k, p in enumerate(present, start=1)]
    stays = {t.dag: t for t in tenancies(steps)}
    assert [stays[d].arrival for d in "abc"] == [1, 2, 3]
    assert [stays[d].others_at_arrival for d in "abc"] == [0, 1, 2]
    assert close(stays["a"].bill, 6 + 3 + 2) and close(stays["c"].bill, 2)
    life = {t.dag: t for t in tenancies(steps, "lifetime")}
    rate = 18 / 6  # 18 of cost over 6 user-steps
    assert all(close(life[d].bill, rate * n) for d, n in zip("abc", (3, 2, 1), strict=True))
    early, late = arrival_groups(tenancies(steps), 2)
    assert (early["group"], early["stays"], late["stays"]) == ("early", 1, 2)
    assert close(early["saving_share"] + late["saving_share"], 1)
    assert close(early["standalone"], 18) and close(early["saving"], 7)
    life_early = arrival_groups(tenancies(steps, "lifetime"), 2)[0]
    assert life_early["saving"] > early["saving"]  # the lifetime rule moves saving to early


def test_tenancies_split_a_resubmitted_dataflow_into_stays() -> None:
    present = ["a", "", "a", "ab"]
    steps = [StepCosts(k, frozenset(p), tuple(Charge(f"{d}.x", 1, frozenset(d)) for d in p))
             for k, p in enumerate(present, start=1)]
    stays = tenancies(steps)
    assert [(t.dag, t.arrival, t.first_step, t.last_step) for t in stays] == [
        ("a", 1, 1, 1), ("a", 2, 3, 4), ("b", 3, 4, 4)]
    assert sum(t.bill for t in stays) == sum(b.bill for b in bills(steps))


# --- real workloads: the manager's running tasks, priced per type -------------------------------

SOURCES = ["SYS", "TAXI"]
TYPES = ["Parse", "Filter", "Kalman"]


@st.composite
def workloads(draw) -> tuple[dict[str, Dataflow], list[Op]]:
    """2-5 small tree dataflows over two source types and three task types (so prefixes are
    shared), one of them possibly a twin of another, and a random valid trace over them."""
    flows: dict[str, Dataflow] = {}
    for k in range(draw(st.integers(2, 5))):
        tasks = [Task("src", draw(st.sampled_from(SOURCES)), "source")]
        streams = []
        for b in range(draw(st.integers(1, 2))):
            up = "src"
            for d in range(draw(st.integers(1, 3))):
                tid = f"b{b}d{d}"
                tasks.append(Task(tid, draw(st.sampled_from(TYPES)), draw(st.integers(0, 1))))
                streams.append((up, tid))
                up = tid
        flows[f"D{k}"] = dedup(Dataflow(f"D{k}", tuple(tasks), tuple(streams)))
    if draw(st.booleans()):
        f = flows["D0"]
        flows["T0"] = Dataflow("T0", f.tasks, f.streams)
    ids = sorted(flows)
    present: list[str] = []
    ops = []
    for _ in range(draw(st.integers(1, 10))):
        absent = [d for d in ids if d not in present]
        if absent and (not present or draw(st.booleans())):
            d = draw(st.sampled_from(absent))
            present.append(d)
            ops.append(Op("submit", d))
        else:
            d = draw(st.sampled_from(present))
            present.remove(d)
            ops.append(Op("remove", d))
    return flows, ops


def signature_game(flows: dict[str, Dataflow], costs: TaskCosts):
    """``v(S)``: the summed weights of the distinct signatures the dataflows of ``S`` need."""
    need = {d: {s: costs.weight(f.task(t).type) for t, s in signatures(f).items()}
            for d, f in flows.items()}

    def v(group: frozenset[str]) -> float:
        union: dict[str, float] = {}
        for d in group:
            union.update(need[d])
        return sum(union.values())
    return v


price_lists = st.dictionaries(st.sampled_from(SOURCES + TYPES), st.integers(0, 4))


@SETTINGS
@given(workloads(), price_lists)
def test_workload_shares_are_the_brute_force_shapley_value(wl, prices) -> None:
    flows, ops = wl
    costs = TaskCosts(prices, default=1.0)
    steps, records = planner_steps(flows, ops, costs)
    v = signature_game(flows, costs)
    for s, rec, shares in zip(steps, records, step_shares(steps), strict=True):
        assert s.step == rec.step and len(s.present) == rec.submitted_dags
        expected = brute_shapley(sorted(s.present), v)
        assert all(close(shares[p], expected[p]) for p in expected), (shares, expected)
        assert close(s.total, v(s.present))


@SETTINGS
@given(workloads())
def test_unit_costs_count_tasks_as_reuse_plan_does(wl) -> None:
    flows, ops = wl
    steps, records = planner_steps(flows, ops)
    for s, rec, shares in zip(steps, records, step_shares(steps), strict=True):
        assert s.step == rec.step and close(sum(shares.values()), rec.reuse_tasks)
    for b in bills(steps):
        assert close(b.standalone, len(flows[b.dag]) * b.steps_present)
    assert [b.dag for b in bills(steps)] == list(dict.fromkeys(
        o.dag for o in ops if o.op == "submit" and any(o.dag in s.present for s in steps)))


@SETTINGS
@given(workloads(), price_lists, st.sampled_from(RULES))
def test_workload_bill_properties(wl, prices, rule) -> None:
    flows, ops = wl
    costs = TaskCosts(prices, default=1.0)
    steps, _ = planner_steps(flows, ops, costs)
    rows = {b.dag: b for b in bills(steps, rule)}
    assert close(sum(b.bill for b in rows.values()), sum(s.total for s in steps))
    for b in rows.values():
        assert b.bill <= b.standalone + EPS  # both rules: prices are constant per type
    if rule == "shapley":
        v = signature_game(flows, costs)
        trace_v = lambda g: sum(v(g & s.present) for s in steps)  # noqa: E731
        for g in subsets(rows):
            assert sum(rows[p].bill for p in g) <= trace_v(g) + EPS
    per_step = step_shares(steps, rule)
    if "T0" in flows:  # D0's twin: the same needs at every step both are present
        for s, shares in zip(steps, per_step, strict=True):
            if {"D0", "T0"} <= s.present and rule == "shapley":
                assert close(shares["D0"], shares["T0"])


@SETTINGS
@given(workloads(), st.sampled_from(RULES))
def test_a_workload_dataflow_on_its_own_source_pays_its_standalone_cost(wl, rule) -> None:
    flows, ops = wl
    lone = Dataflow("L", (Task("s", "PRIVATE", "source"), Task("p", "Parse", 0)), (("s", "p"),))
    flows = {**flows, "L": lone}
    ops = [Op("submit", "L"), *ops]
    steps, _ = planner_steps(flows, ops, TaskCosts({"PRIVATE": 3}, default=1.0))
    row = next(b for b in bills(steps, rule) if b.dag == "L")
    assert close(row.bill, row.standalone) and close(row.standalone, 4 * len(steps))


# --- the calibration file ------------------------------------------------------------------------

BAD_COSTS = {
    "notjson": ("{oops", "not JSON"),
    "list": ("[1, 2]", "must be a JSON object"),
    "typo": ({"typse": {"A": 1}}, "unknown key 'typse'"),
    "types": ({"types": [1]}, "'types' must be an object"),
    "string": ({"types": {"Parse": "1"}}, "cost of type 'Parse' must be a finite number >= 0"),
    "negative": ({"types": {"Parse": -1}}, "must be a finite number >= 0, got -1"),
    "bool": ({"types": {"Parse": True}}, "got true"),
    "default": ({"default": "x"}, "'default' must be a finite number >= 0"),
    "empty": ({}, "prices nothing"),
    "unit": ({"default": 1, "unit": 3}, "'unit' must be a string"),
}


@pytest.mark.parametrize("name", sorted(BAD_COSTS))
def test_bad_calibration_is_one_line_naming_the_file(tmp_path, name) -> None:
    content, expected = BAD_COSTS[name]
    path = tmp_path / f"{name}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(CostError) as info:
        load_costs(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and expected in msg and "\n" not in msg


def test_calibration_prices_types_and_names_an_unpriced_task(tmp_path, figure1) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"unit": "CPU-s", "types": {"SYS": 0.5, "SenMLParse": 2},
                                "meta": {"from": "test"}}))
    costs = load_costs(path)
    assert (costs.weight("SYS"), costs.weight("SenMLParse"), costs.unit) == (0.5, 2.0, "CPU-s")
    with pytest.raises(CostError) as info:
        check_costs(costs, [figure1["A"]])
    msg = str(info.value)
    assert msg.startswith(f"{path}: dag 'A': task ") and "no cost for task type" in msg
    assert parse_costs({"default": 2, "types": {"SYS": 0}}).weight("Anything") == 2.0
    assert UNIT_COSTS.weight("SYS") == 1.0
    with pytest.raises(CostError, match="no cost for task type"):
        planner_steps(figure1, [Op("submit", "A")], costs)


def test_figure1_with_weights(figure1) -> None:
    """Figure 1 priced per type: shares at the step C joins match the brute force, and D,
    which shares nothing, pays its standalone cost."""
    costs = TaskCosts({"SYS": 4.0}, default=1.0)
    ops = [Op("submit", d) for d in "ABCD"] + [Op("remove", "B")]
    steps, _ = planner_steps(figure1, ops, costs)
    v = signature_game(figure1, costs)
    expected = brute_shapley(list("ABC"), v)
    assert all(close(step_shares(steps)[2][p], expected[p]) for p in "ABC")
    rows = {b.dag: b for b in bills(steps)}
    assert close(rows["D"].bill, rows["D"].standalone) and rows["A"].bill < rows["A"].standalone


# --- containment (issue 25): a residual and the wide task it reads ------------------------------

def riot_filter_flow(dag: str, ranges: dict[str, list[float]]) -> Dataflow:
    """``SYS -> SenMLParse -> RangeFilter -> MQTTPublish`` with the real SYS configs, the filter
    keeping ``ranges`` and the sink publishing to the dataflow's own topic."""
    from reuse.core.paths import riotbench_dir
    from reuse.testing import missing
    from reuse.workloads.riotbench import source_configs

    if not riotbench_dir().is_dir():
        pytest.skip(missing("data", "data/riotbench is not set up"))
    cfg = source_configs("SYS", riotbench_dir())
    tasks = (Task("src", "SYS", cfg["source"]), Task("parse", "SenMLParse", cfg["SenMLParse"]),
             Task("range", "RangeFilter", {"valid_range": ranges, "mode": "drop"}),
             Task("out", "MQTTPublish", {"topic": dag}))
    return Dataflow(dag, tasks, (("src", "parse"), ("parse", "range"), ("range", "out")))


def test_a_residual_is_billed_to_its_own_and_the_wide_task_split_among_all_its_users():
    """``W`` runs the real SYS ranges; ``N1`` and ``N2`` keep a narrower temperature band (the
    same one), so under ``semantic`` both read ``W``'s filter through one shared residual."""
    from reuse.tasks.matching import SEMANTIC

    wide = {"temperature": [-12.5, 43.1], "humidity": [10.7, 95.2]}
    narrow = {"temperature": [0.0, 30.0], "humidity": [20.0, 90.0]}
    flows = {"W": riot_filter_flow("W", wide), "N1": riot_filter_flow("N1", narrow),
             "N2": riot_filter_flow("N2", narrow)}
    ops = [Op("submit", "W"), Op("submit", "N1"), Op("submit", "N2"), Op("remove", "W"),
           Op("remove", "N1")]
    steps, records = planner_steps(flows, ops, match=SEMANTIC)
    # each step's charges: running task id -> the dataflows it is charged to
    seen = {s.step: {c.item: c.users for c in s.charges} for s in steps}
    assert seen[3]["W.range"] == {"W", "N1", "N2"}  # the wide filter: the residuals' users too
    assert seen[3]["N1.range"] == {"N1", "N2"}  # the residual: its own dataflows only
    assert seen[3]["W.out"] == {"W"}
    shares = step_shares(steps)
    third, half = 1 / 3, 1 / 2
    # step 3: source, parser and wide filter split three ways; the residual two ways
    assert close(shares[2]["W"], 3 * third + 1)
    assert close(shares[2]["N1"], 3 * third + half + 1) and close(shares[2]["N2"], shares[2]["N1"])
    # W's owner leaves: N1 and N2 are re-planned as written (issue 36), so the wide filter
    # stops and their one narrow filter (the same config) reads the parser, split two ways
    assert "W.range" not in seen[4]
    rng = next(t for t in seen[4] if t.split(".")[1].startswith("range"))
    assert seen[4][rng] == {"N1", "N2"}
    assert close(shares[3]["N1"], 3 * half + 1)
    # N2 alone: the four tasks of its DAG as written, no wide filter
    assert "W.range" not in seen[5] and close(shares[4]["N2"], 4.0)
    assert steps[4].standalone("N2") == len(flows["N2"])
    # totals conserved: every step's shares add up to its running tasks, as reuse plan counts
    for s, sh, rec in zip(steps, shares, records, strict=True):
        assert close(sum(sh.values()), s.total) and s.total == rec.reuse_tasks
    for rule in RULES:
        assert close(sum(b.bill for b in bills(steps, rule)), sum(s.total for s in steps))


def test_without_containment_the_narrow_filter_is_its_own_task():
    """The same trace under ``exact``: no task is shared beyond the source and the parser, so
    the pin above is containment's doing, not the trace's."""
    wide = {"temperature": [-12.5, 43.1], "humidity": [10.7, 95.2]}
    narrow = {"temperature": [0.0, 30.0], "humidity": [20.0, 90.0]}
    flows = {"W": riot_filter_flow("W", wide), "N1": riot_filter_flow("N1", narrow),
             "N2": riot_filter_flow("N2", narrow)}
    steps, _ = planner_steps(flows, [Op("submit", "W"), Op("submit", "N1"),
                                     Op("submit", "N2")])
    users = {c.item: c.users for c in steps[2].charges}
    assert users["W.range"] == {"W"} and users["N1.range"] == {"N1", "N2"}
