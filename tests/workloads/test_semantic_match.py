"""Semantic matching on the paper's workloads: it finds at least what exact matching finds.

Over the SEQ trace of RIoT and OPMW, replayed through the planner with the invariants checked
at every step, the semantic manager runs at most as many tasks as the exact one at every step.
On these workloads it adds nothing, and the test says so: RIoT's configs are all written by
one builder from the benchmark's properties files (one spelling each), its only tasks with
several inputs are sinks (order-free under both) and ErrorEstimation (always wired average
first), and OPMW's configs are all ``"default"`` on types with no code, which keep the paper's
order-free inputs. What semantic matching adds is measured on workloads that spell configs
their own way (issue 25's many-tenants workload).
"""

from __future__ import annotations

import pytest

from reuse.core.equivalence import signatures
from reuse.core.manager import Manager
from reuse.core.paths import opmw_corpus_dir, riotbench_dir
from reuse.core.planner import replay
from reuse.tasks.matching import SEMANTIC
from reuse.testing import missing
from reuse.workloads.registry import load_workload
from reuse.workloads.trace_registry import build_trace

HAVE = {"riot": riotbench_dir().is_dir(), "opmw": opmw_corpus_dir().is_dir()}


@pytest.mark.parametrize("workload", ["riot", "opmw"])
def test_semantic_finds_at_least_what_exact_finds_at_every_seq_step(workload):
    if not HAVE[workload]:
        pytest.skip(missing("data", f"the {workload} workload's data is not set up"))
    flows = load_workload(workload)
    ops = build_trace(workload, "seq", flows).ops
    by_id = {f.id: f for f in flows}
    exact = replay(by_id, ops)
    semantic = replay(by_id, ops, manager=Manager(match=SEMANTIC))
    assert [r.default_tasks for r in semantic] == [r.default_tasks for r in exact]
    assert all(s.reuse_tasks <= e.reuse_tasks for s, e in zip(semantic, exact, strict=True))
    # what it adds on the paper's workloads: nothing; the same equivalence classes
    assert [s.reuse_tasks for s in semantic] == [e.reuse_tasks for e in exact]

    def classes(match=None):
        groups: dict[str, set[tuple[str, str]]] = {}
        for f in flows:
            sig = signatures(f) if match is None else signatures(f, match)
            for t, s in sig.items():
                groups.setdefault(s, set()).add((f.id, t))
        return sorted(map(sorted, groups.values()))

    assert classes(SEMANTIC) == classes()
