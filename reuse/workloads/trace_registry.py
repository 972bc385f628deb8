"""One definition of the paper's traces: name + workload + seed + subset -> :class:`Trace`.

The CLI (``reuse trace``), the notebooks (:mod:`reuse.figures.traces`, ``live.ipynb``,
``seeds.ipynb``), the placement trace and the visualizer all build their traces here, so the same
name, seed and subset give the same operations everywhere.

Names (section 5.1):

- ``seq``: submit every DAG once in random order, then drain in random order (default seed 1);
- ``rw1``, ``rw2``: the two random walks, seeds 1 and 2 by default;
- ``rw``: a random walk with the seed you give (default 1), e.g. the median walk of
  :func:`reuse.analysis.walks.median_walk_seed`.

How many DAGs a walk populates is decided once, by :func:`populate_for`: the paper's fraction of
the DAGs the trace draws from (20 of 35 for OPMW, 15 of 21 for RIoT), so the full workloads get
exactly the paper's 20 and 15, a 6-DAG RIoT subset gets 4, and every usable OPMW template (59)
gets 34. A folder of dataflows with no workload name populates two thirds.

A subset is a seeded sample of ``subset`` DAGs (:func:`select_subset`), drawn with its own
``subset_seed`` (default 1) so that RW1 and RW2 of a live run use the same DAGs.

Examples
--------
>>> from reuse.workloads.registry import load_workload
>>> flows = load_workload("figure1")
>>> t = build_trace("figure1", "rw", flows, seed=3)
>>> t.spec.populate, t.spec.walk, len(t.flows)
(2, 10, 4)
>>> t.ops == build_trace("figure1", "rw", flows, seed=3).ops
True
>>> [op.op for op in build_trace("figure1", "seq", flows).ops].count("submit")
4
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reuse.core.dataflow import Dataflow
from reuse.core.errors import ReuseError
from reuse.core.traces import Op, random_walk_trace, seq_trace
from reuse.workloads.registry import WORKLOADS, load_workload

__all__ = ["TRACE_NAMES", "TRACE_SEEDS", "TraceSpec", "Trace", "populate_for", "select_subset",
           "build_trace"]

#: trace name -> (generator, default seed)
TRACE_NAMES: Mapping[str, tuple[str, int]] = {
    "seq": ("seq", 1), "rw1": ("rw", 1), "rw2": ("rw", 2), "rw": ("rw", 1)}
#: the default seed of each name (SEQ, RW1 and RW2 are three seeds of the generators)
TRACE_SEEDS: Mapping[str, int] = {k: s for k, (_, s) in TRACE_NAMES.items()}

#: populate fraction for a folder of dataflows that is not a named workload
FOLDER_POPULATE = 2 / 3


def populate_for(workload: str | None, n_dags: int) -> int:
    """DAGs a random walk over ``n_dags`` submits first: the workload's paper fraction.

    ``round_half_up(n_dags * populate / dags)`` with the paper's 20 of 35 (OPMW) and 15 of 21
    (RIoT), two thirds for ``workload=None``; at least 1 when there is a DAG.

    >>> populate_for("riot", 21), populate_for("opmw", 35), populate_for("riot", 6)
    (15, 20, 4)
    >>> populate_for("opmw", 59), populate_for(None, 9), populate_for("riot", 0)
    (34, 6, 0)
    """
    if n_dags < 0:
        raise ValueError(f"n_dags must be >= 0, got {n_dags}")
    if workload is None:
        frac = FOLDER_POPULATE
    else:
        w = _workload(workload)
        if n_dags == w.dags:
            return w.populate
        frac = w.populate / w.dags
    if n_dags == 0:
        return 0
    return min(n_dags, max(1, int(n_dags * frac + 0.5)))


def select_subset(dag_ids: Iterable[str], n: int | None, seed: int = 1) -> list[str]:
    """A seeded sample of ``n`` DAG ids (all for ``None``), sorted; independent of input order.

    >>> select_subset(["d", "a", "c", "b"], 2, seed=1) == select_subset("abcd", 2, seed=1)
    True
    >>> select_subset("cab", None)
    ['a', 'b', 'c']
    """
    ids = sorted(set(dag_ids))
    if n is None or n >= len(ids):
        return ids
    if n < 1:
        raise ReuseError(f"a subset needs at least 1 DAG, got {n}")
    return sorted(random.Random(seed).sample(ids, n))


@dataclass(frozen=True)
class TraceSpec:
    """Everything that decides a trace, resolved (written into a trace file's ``meta``).

    ``populate`` and ``walk`` are ``None`` for SEQ.
    """

    workload: str | None
    name: str
    seed: int
    subset: int | None
    subset_seed: int
    n_dags: int
    populate: int | None
    walk: int | None

    def __post_init__(self) -> None:
        if self.name not in TRACE_NAMES:
            raise ReuseError(f"unknown trace {self.name!r} (choose from {', '.join(TRACE_NAMES)})")
        if self.subset is not None and self.subset < 1:
            raise ReuseError(f"a subset needs at least 1 DAG, got {self.subset}")
        if self.kind == "rw":
            if self.populate is None or not 0 <= self.populate <= self.n_dags:
                raise ReuseError(f"cannot populate {self.populate} of {self.n_dags} DAGs")
            if self.walk is None or self.walk < 0:
                raise ReuseError(f"random-walk steps must be >= 0, got {self.walk}")

    @property
    def kind(self) -> str:
        """The generator: ``seq`` or ``rw``."""
        return TRACE_NAMES[self.name][0]

    def meta(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("workload", "name", "seed", "subset", "subset_seed",
                                              "n_dags", "populate", "walk")} | {"kind": self.kind}


@dataclass(frozen=True)
class Trace:
    """A built trace: its spec, the dataflows it draws from (the subset) and its operations."""

    spec: TraceSpec
    flows: Mapping[str, Dataflow] = field(compare=False)
    ops: tuple[Op, ...]

    def __post_init__(self) -> None:
        if len(self.flows) != self.spec.n_dags:
            raise ValueError(f"flows hold {len(self.flows)} dataflows, the spec {self.spec.n_dags}")


def _workload(name: str) -> Any:
    if name not in WORKLOADS:
        raise ReuseError(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)})")
    return WORKLOADS[name]


def build_trace(workload: str | None, name: str, flows: Iterable[Dataflow] | None = None, *,
                seed: int | None = None, subset: int | None = None, subset_seed: int = 1,
                walk: int | None = None, populate: int | None = None,
                all_usable: bool = False) -> Trace:
    """Build the trace ``name`` of ``workload`` (the one place traces are made).

    Parameters
    ----------
    workload
        A workload name (``riot``, ``opmw``, ``figure1``), or ``None`` for ``flows`` that are not
        one (a folder of dataflows; then ``flows`` is required).
    name
        ``seq``, ``rw1``, ``rw2`` or ``rw`` (:data:`TRACE_NAMES`).
    flows
        The workload's dataflows if already loaded (default: :func:`load_workload`).
    seed
        The generator's seed (default: the name's, :data:`TRACE_SEEDS`).
    subset, subset_seed
        Draw from a seeded sample of ``subset`` DAGs (:func:`select_subset`).
    walk, populate
        Random-walk steps (default: the workload's 100) and DAGs submitted first (default:
        :func:`populate_for`). Ignored for SEQ.
    all_usable
        OPMW: load every usable template (only when ``flows`` is not given).
    """
    if name not in TRACE_NAMES:
        raise ReuseError(f"unknown trace {name!r} (choose from {', '.join(TRACE_NAMES)})")
    if flows is None:
        if workload is None:
            raise ReuseError("give a workload name or the dataflows")
        flows = load_workload(workload, all_usable=all_usable)
    by_id = {f.id: f for f in flows}
    ids = select_subset(by_id, subset, subset_seed)
    kind, default_seed = TRACE_NAMES[name]
    seed = default_seed if seed is None else seed
    if kind == "rw":
        populate = populate_for(workload, len(ids)) if populate is None else populate
        walk = (_workload(workload).walk if workload is not None else 100) if walk is None else walk
    else:
        populate = walk = None
    spec = TraceSpec(workload, name, seed, subset if subset is not None and subset < len(by_id)
                     else None, subset_seed, len(ids), populate, walk)
    if kind == "seq":
        ops = seq_trace(ids, seed=seed)
    else:
        assert populate is not None and walk is not None
        ops = random_walk_trace(ids, seed=seed, populate=populate, walk=walk)
    return Trace(spec, {i: by_id[i] for i in ids}, tuple(ops))

