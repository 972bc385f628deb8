"""The workloads the CLI and notebooks know by name, built explicitly (no import-time I/O).

- ``riot``: the 21 RIoTBench dataflows (:mod:`reuse.workloads.riotbench`).
- ``opmw``: the OPMW/WINGS templates (:mod:`reuse.workloads.opmw`); by default the paper-like
  seeded selection of 35, with ``all_usable=True`` every usable template.

Data folders default to ``data/riotbench`` and ``data/opmw/wings-corpus`` under the project root
(filled by the set-up script) and can be moved with ``REUSE_DATA_DIR``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from reuse.dataflow import Dataflow, parse_dataflow
from reuse.errors import ReuseError

__all__ = ["WORKLOADS", "Workload", "data_dir", "load_workload"]


@dataclass(frozen=True)
class Workload:
    """How a workload's traces are drawn (section 5.1): RW populates 20 (OPMW) or 15 (RIoT)."""

    name: str
    populate: int
    walk: int = 100


WORKLOADS = {"opmw": Workload("opmw", populate=20), "riot": Workload("riot", populate=15)}


def data_dir() -> Path:
    env = os.environ.get("REUSE_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def load_workload(name: str, *, all_usable: bool = False, seed: int | None = None,
                  quiet: bool = True, keying: str = "field") -> list[Dataflow]:
    """The workload's dataflows, validated and de-dup, in a stable order.

    ``keying`` is the RIoTBench stateful tasks' state keying, "field" or "sensor" (see
    :func:`reuse.workloads.riotbench.group_by`); OPMW tasks have no state, so it must stay
    "field" there.
    """
    if keying != "field" and name != "riot":
        raise ReuseError(f"--keying {keying} applies to the riot workload only, not {name!r}")
    if name not in WORKLOADS:
        raise ReuseError(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)})")
    if name == "riot":
        from reuse.workloads import riotbench
        folder = data_dir() / "riotbench"
        if not folder.is_dir():
            raise ReuseError("RIoTBench data folder is missing (run the set-up)", file=str(folder))
        dicts = riotbench.build_dataflows(folder, keying=keying)
    else:
        from reuse.workloads import opmw
        folder = data_dir() / "opmw" / "wings-corpus"
        if not folder.is_dir():
            raise ReuseError("OPMW corpus folder is missing (run the set-up)", file=str(folder))
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore", opmw.OpmwWarning)
            corpus = opmw.load_corpus(folder)
        kwargs = {} if seed is None else {"seed": seed}
        dicts = opmw.select(corpus.dataflows, n=None if all_usable else 35, **kwargs)
    return [parse_dataflow(d, source=f"{name}:{d['id']}") for d in dicts]
