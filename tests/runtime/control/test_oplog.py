"""The operation journal: cuts decided once at the horizon, read the same by every instance."""

from __future__ import annotations

import pickle
import threading

import pytest

from reuse.runtime.control import ControlError, OpLog


def test_open_is_idempotent_and_the_first_start_wins(redis_url: str, run: str) -> None:
    a, b = OpLog(redis_url, run), OpLog(redis_url, run)
    assert a.open(100) == 100
    assert b.open(250) == 100  # a racing instance agrees with the first opener
    assert a.horizon() == 100 == b.start


def test_an_unopened_run_is_a_one_line_error(redis_url: str, run: str) -> None:
    log = OpLog(redis_url, run)
    with pytest.raises(ControlError, match="not open"):
        log.propose("submit", "A")
    with pytest.raises(ControlError, match="not open"):
        log.sync(0)


def test_the_cut_is_the_horizon_and_never_below_a_claim(redis_url: str, run: str) -> None:
    log = OpLog(redis_url, run)
    log.open(0)
    h, ops = log.sync(0, advance_to=40)  # an instance may now claim up to 40
    assert (h, ops) == (40, [])
    a = log.propose("submit", "A", by="coord")
    assert (a.index, a.op, a.dag, a.cut, a.by) == (0, "submit", "A", 40, "coord")
    # a slower instance's advance does not lower the horizon, and it learns the op
    h, ops = log.sync(0, advance_to=25)
    assert h == 40 and ops == [a]
    # an explicit cut in the future raises the horizon; one in the past is refused
    b = log.propose("remove", "A", at=70)
    assert b.cut == 70 and log.horizon() == 70
    with pytest.raises(ControlError, match="not in the future: the horizon is 70"):
        log.propose("submit", "B", at=69)
    assert log.propose("submit", "B").cut == 70
    assert [o.cut for o in log.ops()] == [40, 70, 70]
    assert log.ops(1) == log.sync(1)[1] and log.size() == 3
    assert log.advance(90) == 90 == log.horizon()


def test_proposals_are_idempotent_per_key(redis_url: str, run: str) -> None:
    log = OpLog(redis_url, run)
    log.open(5)
    first = log.propose("submit", "A", key="step-1")
    log.advance(50)
    again = log.propose("submit", "A", key="step-1")  # a retry after a lost reply
    assert again == first and again.cut == 5 and log.size() == 1
    assert first.as_dict() == {"op": "submit", "dag": "A", "cut": 5}


def test_concurrent_proposers_and_claimers_agree(redis_url: str, run: str) -> None:
    """Four proposers and two claimers at once: indices are 0..n-1, cuts never decrease, and
    no claimer ever claimed past a cut before it learned the operation."""
    OpLog(redis_url, run).open(0)
    errors: list[str] = []
    stop = threading.Event()

    def propose(who: int) -> None:
        log = OpLog(redis_url, run)
        for i in range(25):
            log.propose("submit", f"{who}-{i}", by=str(who))

    def claim(who: int) -> None:
        log = OpLog(redis_url, run)
        frontier, applied = 0, 0
        while not stop.is_set() or applied < 100:
            h, ops = log.sync(applied, advance_to=frontier + 3)
            for o in ops:
                if o.cut < frontier:
                    errors.append(f"claimer {who}: op {o.index} cut {o.cut} < {frontier}")
            applied += len(ops)
            frontier = h  # claim everything up to the horizon

    claimers = [threading.Thread(target=claim, args=(i,)) for i in range(2)]
    proposers = [threading.Thread(target=propose, args=(i,)) for i in range(4)]
    for t in claimers + proposers:
        t.start()
    for t in proposers:
        t.join()
    stop.set()
    for t in claimers:
        t.join(timeout=30)
    ops = OpLog(redis_url, run).ops()
    assert errors == []
    assert [o.index for o in ops] == list(range(100))
    assert all(a.cut <= b.cut for a, b in zip(ops, ops[1:], strict=False))


def test_the_log_pickles_without_its_client(redis_url: str, run: str) -> None:
    log = OpLog(redis_url, run)
    log.open(3)
    copy = pickle.loads(pickle.dumps(log))
    assert copy.horizon() == 3 and copy.run == run
    with pytest.raises(ControlError, match="must be non-empty"):
        OpLog(redis_url, "a:b")
