from __future__ import annotations

import json

import pytest

from reuse.core.errors import TraceError
from reuse.core.traces import Op, check_trace, load_trace, random_walk_trace, seq_trace

IDS = [f"d{i}" for i in range(21)]


def test_seq_submits_all_then_drains_deterministically():
    ops = seq_trace(IDS, seed=7)
    assert len(ops) == 42
    assert [o.op for o in ops] == ["submit"] * 21 + ["remove"] * 21
    assert sorted(o.dag for o in ops[:21]) == sorted(IDS) == sorted(o.dag for o in ops[21:])
    assert ops == seq_trace(IDS, seed=7) and ops != seq_trace(IDS, seed=8)
    check_trace(ops, IDS)


@pytest.mark.parametrize("seed", range(20))
def test_random_walk_shape(seed):
    ops = random_walk_trace(IDS, seed=seed, populate=15, walk=100)
    assert all(o.op == "submit" for o in ops[:15])
    check_trace(ops, IDS)  # never resubmits a present DAG, never removes an absent one
    # after the 15 populating submits and the 100 walk steps comes the drain: exactly one remove
    # of each DAG present at that point, and nothing else
    present: set[str] = set()
    for o in ops[:115]:
        if o.op == "submit":
            present.add(o.dag)
        else:
            present.remove(o.dag)
    drain = ops[115:]
    assert [o.op for o in drain] == ["remove"] * len(present)
    assert sorted(o.dag for o in drain) == sorted(present)
    assert ops == random_walk_trace(IDS, seed=seed, populate=15, walk=100)


def test_check_trace_errors_name_the_step():
    with pytest.raises(TraceError, match=r"t.json: step 2: dag 'd1': is removed but not submitted"):
        check_trace([Op("submit", "d0"), Op("remove", "d1")], IDS, file="t.json")


def test_load_trace_rejects_malformed(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"ops": [{"op": "submit"}]}))
    with pytest.raises(TraceError, match="step 1: each op must be"):
        load_trace(p)
    p.write_text("[1, 2]")
    with pytest.raises(TraceError, match="must be a JSON object with an 'ops' list"):
        load_trace(p)
