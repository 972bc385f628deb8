"""The shared engine's seeding of a re-plan's started tasks (issue 36), on plain dict states."""

from __future__ import annotations

from typing import Any

from reuse.runtime.engines.shared.shard import absorber, handover_cuts, seed_handovers


def task(tid: str, start: int, takes_over: str | None = None, absorbs: tuple[str, ...] = (),
         ) -> dict[str, Any]:
    return {"id": tid, "type": "T", "config": {}, "start": start, "end": None,
            "takes_over": takes_over, "absorbs": list(absorbs)}


def add(t: Any, own: Any, wides: list[Any]) -> Any:
    """A toy combine: counts add (``None``: a fresh task's zero)."""
    return {"n": (own or {"n": 0})["n"] + sum(w["n"] for w in wides)}


def test_a_started_task_takes_a_copy_of_its_predecessors_state_at_its_first_seq():
    states = {"old": {"n": 3, "xs": [1]}}
    out = seed_handovers([task("new", 10, "old"), task("other", 10)], states, 10, add)
    assert out["new"] == {"n": 3, "xs": [1]} and out["new"] is not out["old"]
    out["new"]["xs"].append(2)
    assert states["old"]["xs"] == [1]  # two tasks, two states
    assert "other" not in out


def test_only_at_its_start_and_never_over_a_state_it_has():
    assert seed_handovers([task("new", 12, "old")], {"old": {"n": 3}}, 10, add) == {
        "old": {"n": 3}}
    states = {"old": {"n": 3}, "new": {"n": 7}}  # a re-run batch after a piece seeded it
    assert seed_handovers([task("new", 10, "old")], states, 10, add)["new"] == {"n": 7}


def test_a_window_residual_absorbs_the_wide_tasks_states():
    states = {"res": {"n": 4}, "w1": {"n": 1}, "w2": {"n": 2}}
    out = seed_handovers([task("new", 5, "res", ("w1", "w2"))], states, 5, add)
    assert out["new"] == {"n": 7}
    fresh = seed_handovers([task("new", 5, "res", ("w1",))], {"w1": {"n": 1}}, 5, add)
    assert fresh["new"] == {"n": 1}  # the residual had taken nothing yet
    none = seed_handovers([task("new", 5, "res", ("w1",))], {}, 5, add)
    assert "new" not in none  # nothing to continue: the task starts fresh


def test_a_predecessor_started_at_the_same_cut_is_seeded_first():
    tasks = [task("c", 8, "b"), task("b", 8, "a")]
    assert seed_handovers(tasks, {"a": {"n": 2}}, 8, add)["c"] == {"n": 2}


def test_the_task_layers_absorb_for_block_windows():
    t = {"id": "n", "type": "BlockWindowAverage",
         "config": {"window": 4, "fields": ["t"], "group_by": ["obs"]}}
    got = absorber({})(t, None, [{"blocks": {"t": [1, 0.5]}}])
    assert got == {"blocks": {"t": [1, 0.5]}}
    got = absorber({})(t, {"blocks": {"t": [2, 1.0]}}, [{"blocks": {"t": [1, 0.5]}}])
    assert got == {"blocks": {"t": [3, 1.0, 0.5]}}


def test_cuts_inside_a_batch_split_it():
    tasks = [task("a", 12, "x"), task("b", 10, "y"), task("c", 15), task("d", 20, "z")]
    assert handover_cuts(tasks, 10, 20) == [12]
