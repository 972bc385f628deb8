"""Workloads and traces the visualizer can show, loaded on demand (nothing is read at import).

Three workloads: the paper's Figure 1 (the test fixtures: A, B, C share a source and prefix, D
has another source), the 21 RIoTBench IoT dataflows, and the 35 OPMW/WINGS dataflows of
section 5.1. Trace kinds: ``seq`` and ``rw`` (the paper's generators, seeded) and ``file`` (a
trace JSON; for Figure 1, the fixture trace).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reuse.dataflow import Dataflow, load_dataflows, parse_dataflow
from reuse.traces import Op, load_trace, random_walk_trace, seq_trace

__all__ = ["WORKLOADS", "TRACE_KINDS", "Paths", "load_workload", "make_trace"]

WORKLOADS = ("figure1", "riot", "opmw")
TRACE_KINDS = ("file", "seq", "rw")
#: The paper's RW populate sizes (section 5.1); Figure 1 has only four DAGs.
POPULATE = {"figure1": 2, "riot": 15, "opmw": 20}
WALK = {"figure1": 10, "riot": 100, "opmw": 100}


@dataclass(frozen=True)
class Paths:
    """Where the workloads live; defaults to a source checkout (``<repo>/tests``, ``<repo>/data``).

    Notebooks outside the checkout pass their own paths.
    """

    figure1: Path
    figure1_trace: Path
    riot: Path
    opmw: Path

    @classmethod
    def default(cls, root: str | Path | None = None) -> Paths:
        base = Path(root) if root is not None else Path(__file__).resolve().parents[2]
        return cls(base / "tests/fixtures/figure1", base / "tests/fixtures/figure1-trace.json",
                   base / "data/riotbench", base / "data/opmw/wings-corpus")


def load_workload(name: str, paths: Paths | None = None) -> dict[str, Dataflow]:
    """The dataflows of a workload, by id (``figure1``, ``riot`` or ``opmw``)."""
    paths = paths or Paths.default()
    if name == "figure1":
        flows = load_dataflows([paths.figure1])
    elif name == "riot":
        from reuse.workloads import riotbench

        flows = [parse_dataflow(d) for d in riotbench.build_dataflows(paths.riot)]
    elif name == "opmw":
        import warnings

        from reuse.workloads import opmw

        with warnings.catch_warnings():  # skipped templates are the loader's business here
            warnings.simplefilter("ignore")
            corpus = opmw.load_corpus(paths.opmw)
        flows = [parse_dataflow(d) for d in opmw.select(corpus.dataflows)]
    else:
        raise ValueError(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)})")
    return {f.id: f for f in flows}


def make_trace(kind: str, workload: str, dag_ids: Sequence[str] | Mapping[str, object], *,
               seed: int = 1, paths: Paths | None = None, trace_file: str | Path | None = None,
               ) -> list[Op]:
    """A trace over ``dag_ids``: ``seq``/``rw`` generated with ``seed``, or ``file``.

    ``file`` reads ``trace_file``, or for Figure 1 the fixture trace; for the other workloads
    without a file it falls back to ``seq`` (there is no canonical trace file for them).
    """
    ids = sorted(dag_ids)
    if kind == "file":
        if trace_file is not None:
            return load_trace(trace_file)
        if workload == "figure1":
            return load_trace((paths or Paths.default()).figure1_trace)
        kind = "seq"
    if kind == "seq":
        return seq_trace(ids, seed=seed)
    if kind == "rw":
        populate = min(POPULATE.get(workload, len(ids) // 2), len(ids))
        return random_walk_trace(ids, seed=seed, populate=populate,
                                 walk=WALK.get(workload, 100))
    raise ValueError(f"unknown trace kind {kind!r} (choose from {', '.join(TRACE_KINDS)})")
