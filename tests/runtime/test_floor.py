"""The two floors deliver the same (issue 35): per event and columnar, event for event.

Both floors run the same planned tasks over the same source events; the columnar one runs each
task's kernel (``reuse.tasks.columnar.kernel_for``) on batches. What each sink receives and
each unread task (OPMW's leaves) emits must be identical, in order, types included: the
end-to-end check of every kernel registered in ``KERNELS`` (with none registered it checks the
batching itself: sources as columns, the parents' merge by ``seq``, the ``PerEvent``
fallback). Small workloads (a few RIoT DAGs with two-parent stateful tasks, a few OPMW DAGs),
a few hundred ``seq`` over the end of the SYS file, batches of odd sizes.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.core.paths import opmw_corpus_dir, riotbench_dir
from reuse.runtime import floor as floor_mod
from reuse.runtime.floor import FloorResult, floor_run
from reuse.tasks import columnar
from reuse.tasks.columnar import Batch, PerEvent
from reuse.tasks.columnar.equivalence import compare

DATA = riotbench_dir()
#: two-parent tasks (ErrorEstimation, stateful; MQTTPublish sinks), each source type, and a
#: DAG that Reuse merges with another (pred-error-sys into pred-sys)
RIOT = ("stats-sys", "pred-sys", "pred-error-sys", "etl-taxi", "clean-fit")
START, SEQS = 850, 300  # SYS and TAXI wrap at 1,000 lines, FIT every 45
BATCHES = (7, 64)


@pytest.fixture(scope="module")
def riot() -> list[Dataflow]:
    if not DATA.is_dir():
        pytest.skip("no data/riotbench")
    from reuse.workloads.riotbench import build_dataflows

    dags = {d["id"]: d for d in build_dataflows(DATA)}
    return [parse_dataflow(dags[i]) for i in RIOT]


@pytest.fixture(scope="module")
def opmw() -> list[Dataflow]:
    corpus_dir = opmw_corpus_dir()
    if not corpus_dir.exists():
        pytest.skip("no OPMW corpus")
    from reuse.workloads.opmw import load_corpus, select

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corpus = load_corpus(corpus_dir)
    return [parse_dataflow(d) for d in select(corpus.dataflows, 6)]


def _both(flows: list[Dataflow], shares: bool, **kw: Any) -> tuple[FloorResult,
                                                                    list[FloorResult]]:
    opts: dict[str, Any] = {"shares": shares, "seqs": SEQS, "start": START,
                            "data_dir": str(DATA), "pi_iterations": 5, "record": True, **kw}
    ref = floor_run(flows, **opts)
    return ref, [floor_run(flows, columnar=True, batch=b, **opts) for b in BATCHES]


def _check(ref: FloorResult, cols: list[FloorResult]) -> None:
    assert ref.delivered is not None and not ref.columnar
    assert sum(map(len, ref.delivered.values())) > 0
    for c in cols:
        assert c.columnar and c.delivered is not None
        assert (c.tasks, c.sources, c.outputs) == (ref.tasks, ref.sources, ref.outputs)
        assert list(c.delivered) == list(ref.delivered)
        compare(dict(ref.delivered), dict(c.delivered), where=f"batch {c.batch}")


@pytest.mark.parametrize("shares", [False, True], ids=["default", "reuse"])
def test_riot_floors_deliver_the_same(riot: list[Dataflow], shares: bool) -> None:
    ref, cols = _both(riot, shares)
    delivered = ref.delivered or {}  # RIoT's: its sinks' inputs only, one per output counted
    assert ref.outputs > 0 and ref.outputs == sum(map(len, delivered.values()))
    _check(ref, cols)


@pytest.mark.parametrize("shares", [False, True], ids=["default", "reuse"])
def test_opmw_floors_deliver_the_same(opmw: list[Dataflow], shares: bool) -> None:
    ref, cols = _both(opmw, shares)
    assert ref.outputs == 0  # OPMW's DAGs have no sink tasks: their leaves deliver
    _check(ref, cols)


def test_a_registered_kernel_runs_in_the_columnar_floor(riot: list[Dataflow],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The columnar floor takes its kernels from ``KERNELS``: one registered (here a counting
    stand-in for SenMLParse) runs batches, and the floors still deliver the same."""
    batches: list[int] = []

    class Counting(PerEvent):
        type_name = "SenMLParse"

        def run(self, batch: Batch) -> Batch:
            batches.append(batch.n)
            return super().run(batch)

    monkeypatch.setitem(columnar.KERNELS, "SenMLParse", Counting)
    ref, cols = _both(riot, True)
    assert batches and max(batches) > 1
    _check(ref, cols)


def test_a_timed_run_records_nothing(riot: list[Dataflow]) -> None:
    for col in (False, True):
        r = floor_run(riot[:1], shares=True, seqs=20, data_dir=str(DATA), columnar=col, batch=8)
        assert r.delivered is None and r.outputs > 0 and r.batch == (8 if col else 1)


def test_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        floor_run([], shares=True, seqs=1, columnar=True, batch=0)


def _ev(seq: int, who: str) -> dict[str, Any]:
    return {"src": "S", "seq": seq, "who": who}


def test_parents_are_merged_stably_by_seq() -> None:
    """At each ``seq``, parent 0's rows and then parent 1's, each parent's own order kept
    (the per-event floor's order); one parent, or one non-empty, passes through unchanged."""
    a = Batch.from_events([_ev(1, "a1"), _ev(1, "a2"), _ev(3, "a3")])
    b = Batch.from_events([_ev(1, "b1"), _ev(2, "b2"), _ev(3, "b3"), _ev(3, "b4")])
    got = floor_mod._merged([a, b]).to_events()
    assert [e["who"] for e in got] == ["a1", "a2", "b1", "b2", "a3", "b3", "b4"]
    assert floor_mod._merged([a]) is a
    assert floor_mod._merged([Batch.empty(), b]) is b
    assert floor_mod._merged([Batch.empty(), Batch.empty()]).n == 0
    ordered = floor_mod._merged([Batch.from_events([_ev(1, "x")]), b])
    assert np.all(np.diff(ordered.cols["seq"]) >= 0) and ordered.n == 5
