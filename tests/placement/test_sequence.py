from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.placement.generators import make_application, make_infrastructure
from reuse.placement.sequence import deployment_sequence

INFRA = make_infrastructure(2, 2, 3, seed=0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(4, 30), g=st.integers(0, 10_000))
def test_algorithm1_upstream_first_and_complete(n, g):
    app = make_application(n, INFRA, graph_seed=g)
    ds = deployment_sequence(app)
    assert sorted(ds) == list(range(app.n))
    pos = {op: i for i, op in enumerate(ds)}
    assert all(pos[s.src] < pos[s.dst] for s in app.streams)
    assert ds[: len(app.sources)] == list(app.sources)
