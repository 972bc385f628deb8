"""The workloads the CLI, notebooks and visualizer know by name, built explicitly (no import-time I/O).

- ``riot``: the 21 RIoTBench dataflows (:mod:`reuse.workloads.riotbench`).
- ``opmw``: the OPMW/WINGS templates (:mod:`reuse.workloads.opmw`); by default the paper-like
  seeded selection of 35, with ``all_usable=True`` every usable template.
- ``riot-tenants``: many tenants on the RIoTBench streams, each with its own thresholds, windows,
  options and spellings (:mod:`reuse.workloads.tenants`, issue 25); ``tenants`` and ``seed``
  choose its size and draw.
- ``figure1``: the paper's Figure 1 scenario (four DAGs A-D, the test fixtures): A, B and C share
  a source and prefix, D has another source. The visualizer's first example.

Data folders default to ``data/riotbench`` and ``data/opmw/wings-corpus`` under the project root
(filled by the set-up script), as :mod:`reuse.core.paths` resolves them, or per call with
``folder``. :func:`load_workload` is the only loader: the CLI, the notebooks, the trace registry
(:mod:`reuse.workloads.trace_registry`) and the visualizer all call it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from reuse.core.dataflow import Dataflow, load_dataflows, parse_dataflow
from reuse.core.errors import ReuseError
from reuse.core.paths import opmw_corpus_dir, riotbench_dir

__all__ = ["WORKLOADS", "Workload", "workload_folder", "load_workload"]

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Workload:
    """A named workload and how its random walks are drawn (section 5.1).

    Attributes
    ----------
    name
        The name the CLI, notebooks and visualizer use.
    dags
        How many DAGs the paper's workload has (35 OPMW, 21 RIoT; 4 for Figure 1).
    populate
        How many of them the paper submits before the walk (20 OPMW, 15 RIoT: "≈ 2/3rds").
        A trace over another number of DAGs (a subset, or every usable OPMW template) populates
        the same fraction; see :func:`reuse.workloads.trace_registry.populate_for`.
    walk
        Random submit/remove steps (the paper's 100; 10 for the four Figure 1 DAGs).
    """

    name: str
    dags: int
    populate: int
    walk: int = 100

    def __post_init__(self) -> None:
        if not 0 < self.populate <= self.dags:
            raise ValueError(f"workload {self.name}: populate {self.populate} must be in "
                             f"1..{self.dags}")
        if self.walk < 0:
            raise ValueError(f"workload {self.name}: walk {self.walk} must be >= 0")


WORKLOADS = {"opmw": Workload("opmw", dags=35, populate=20),
             "riot": Workload("riot", dags=21, populate=15),
             # the RIoT fraction (15 of 21) of the default 100 tenants
             "riot-tenants": Workload("riot-tenants", dags=100, populate=71),
             "figure1": Workload("figure1", dags=4, populate=2, walk=10)}


def workload_folder(name: str) -> Path:
    """Where a workload's input lives by default (``folder`` of :func:`load_workload`)."""
    if name in ("riot", "riot-tenants"):
        return riotbench_dir()
    if name == "opmw":
        return opmw_corpus_dir()
    if name == "figure1":
        return ROOT / "tests" / "fixtures" / "figure1"
    raise ReuseError(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)})")


def load_workload(name: str, *, all_usable: bool = False, seed: int | None = None,
                  quiet: bool = True, folder: str | Path | None = None,
                  keying: str = "field", tenants: int | None = None) -> list[Dataflow]:
    """The workload's dataflows, validated and de-dup, sorted by id.

    Parameters
    ----------
    name
        A key of :data:`WORKLOADS`.
    all_usable, seed
        OPMW only: every usable template instead of the seeded 35, and the selection's seed.
        ``riot-tenants``: ``seed`` is the seed of every tenant's draws (default 1).
    quiet
        OPMW only: hide the warnings naming skipped templates.
    folder
        Read from here instead of :func:`workload_folder` (a checkout elsewhere).
    keying
        The RIoTBench stateful tasks' state keying, "field" or "sensor" (see
        :func:`reuse.workloads.riotbench.group_by`); OPMW tasks have no state, so it must stay
        "field" there (``riot-tenants`` draws it per tenant).
    tenants
        ``riot-tenants`` only: how many tenants (default
        :data:`reuse.workloads.tenants.DEFAULT_TENANTS`).

    Raises
    ------
    ReuseError
        An unknown name, or a missing folder (named in the message).
    """
    if keying != "field" and name != "riot":
        raise ReuseError(f"--keying {keying} applies to the riot workload only, not {name!r}")
    if name not in WORKLOADS:
        raise ReuseError(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)})")
    if tenants is not None and name != "riot-tenants":
        raise ReuseError(f"--tenants applies to the riot-tenants workload only, not {name!r}")
    path = Path(folder) if folder is not None else workload_folder(name)
    if not path.is_dir():
        what = {"riot": "RIoTBench data", "riot-tenants": "RIoTBench data", "opmw": "OPMW corpus", "figure1": "Figure 1 fixture"}
        raise ReuseError(f"{what[name]} folder is missing (run the set-up)", file=str(path))
    if name == "figure1":
        flows = load_dataflows([path])
    elif name == "riot":
        from reuse.workloads import riotbench
        flows = [parse_dataflow(d, source=f"riot:{d['id']}")
                 for d in riotbench.build_dataflows(path, keying=keying)]
    elif name == "riot-tenants":
        from reuse.workloads import tenants as tenant_workload
        n = tenant_workload.DEFAULT_TENANTS if tenants is None else tenants
        flows = [parse_dataflow(d, source=f"riot-tenants:{d['id']}") for d in
                 tenant_workload.build_tenants(path, tenants=n, seed=1 if seed is None else seed)]
    else:
        from reuse.workloads import opmw
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore", opmw.OpmwWarning)
            corpus = opmw.load_corpus(path)
        kwargs = {} if seed is None else {"seed": seed}
        dicts = opmw.select(corpus.dataflows, n=None if all_usable else 35, **kwargs)
        flows = [parse_dataflow(d, source=f"opmw:{d['id']}") for d in dicts]
    return sorted(flows, key=lambda f: f.id)
