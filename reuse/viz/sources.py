"""Workloads and traces the visualizer can show, loaded on demand (nothing is read at import).

Three workloads (:data:`reuse.workloads.registry.WORKLOADS`): the paper's Figure 1 (the test
fixtures: A, B, C share a source and prefix, D has another source), the 21 RIoTBench IoT
dataflows, and the 35 OPMW/WINGS dataflows of section 5.1. Trace kinds: ``seq`` and ``rw`` (the
paper's generators with the chosen seed) and ``file`` (a trace JSON; for Figure 1, the fixture
trace).

Dataflows come from :func:`reuse.workloads.registry.load_workload` and generated traces from
:func:`reuse.workloads.trace_registry.build_trace`, the loader and the registry the CLI and the notebooks
use, so the visualizer shows the same trace as ``reuse trace`` for the same seed and subset.
This module only adds where the files live (:class:`Paths`) and the ``file`` kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reuse.core.dataflow import Dataflow
from reuse.core.traces import Op, load_trace
from reuse.workloads.registry import ROOT, load_workload, workload_folder
from reuse.workloads.trace_registry import build_trace

__all__ = ["WORKLOADS", "TRACE_KINDS", "Paths", "load_scenario"]

WORKLOADS = ("figure1", "riot", "opmw")
TRACE_KINDS = ("file", "seq", "rw")


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
        if root is None:
            return cls(workload_folder("figure1"), ROOT / "tests/fixtures/figure1-trace.json",
                       workload_folder("riot"), workload_folder("opmw"))
        base = Path(root)
        return cls(base / "tests/fixtures/figure1", base / "tests/fixtures/figure1-trace.json",
                   base / "data/riotbench", base / "data/opmw/wings-corpus")

    def folder(self, workload: str) -> Path:
        if workload not in WORKLOADS:
            raise ValueError(f"unknown workload {workload!r} (choose from {', '.join(WORKLOADS)})")
        return Path(getattr(self, workload))


def load_scenario(workload: str, kind: str, *, seed: int = 1, subset: int | None = None,
                  paths: Paths | None = None, trace_file: str | Path | None = None,
                  flows: Mapping[str, Dataflow] | Sequence[Dataflow] | None = None,
                  ) -> tuple[dict[str, Dataflow], list[Op]]:
    """The dataflows and the trace the visualizer shows.

    ``seq``/``rw`` are :func:`~reuse.workloads.trace_registry.build_trace` with ``seed`` and ``subset``
    (the dataflows returned are the subset's). ``file`` reads ``trace_file``, or for Figure 1
    the fixture trace; for the other workloads without a file it falls back to ``seq`` (there is
    no canonical trace file for them). ``flows`` skips loading the named workload.
    """
    paths = paths or Paths.default()
    if kind not in TRACE_KINDS:
        raise ValueError(f"unknown trace kind {kind!r} (choose from {', '.join(TRACE_KINDS)})")
    if flows is None:
        loaded = load_workload(workload, folder=paths.folder(workload))
    else:
        loaded = list(flows.values()) if isinstance(flows, Mapping) else list(flows)
    if kind == "file":
        if trace_file is not None or workload == "figure1":
            ops = load_trace(trace_file if trace_file is not None else paths.figure1_trace)
            return {f.id: f for f in loaded}, ops
        kind = "seq"
    trace = build_trace(workload, kind, loaded, seed=seed, subset=subset)
    return dict(trace.flows), list(trace.ops)
