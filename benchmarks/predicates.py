"""Shared predicate evaluation (issue 25, item 4): the shard's CPU per ``seq``, fused vs unfused.

Two cases, each run by :func:`reuse.runtime.engines.shared.shard.run_shard` in plain Python (no
Spark) on one shard, with ``opts["fuse_predicates"]`` on (``fused``) and off (``unfused``):

1. **N tenants' RangeFilters on one parsed stream** (N = 10, 100 by default): ``source ->
   SenMLParse`` and N RangeFilters reading the parser, tenant ``i``'s bounds the stream's
   observed values with ``k``% trimmed off each tail (:func:`reuse.workloads.tenants.trimmed_ranges`),
   ``k`` uniform in [0, 10] and the mode (``drop``/``null``) drawn per tenant, seeded. The
   ``riot-tenants`` workload draws ``k`` from four levels only; here each tenant has its own
   thresholds, as N distinct tasks that no matching policy merges. Once
   with the filters as unrecorded leaves (``filters``: the filters' own cost), once with a
   Sink behind each (``+ sinks``: what a tenant's output costs to record, which fusing does
   not change).
2. **The riot-tenants SEQ peak** (``--tenants`` tenants, seed 1, every tenant present as at the
   peak), planned with exact and with semantic matching, deployed at ``seq`` 0 as the engine
   deploys it (leaf tasks of dataflows without a sink recorded).

Each case runs consecutive batches of ``--batch`` source ``seq`` with the task states carried
through JSON, fused and unfused interleaved ``A B A B ...`` (``--repeat`` each), after a warm-up
batch of each (models trained, files read). Printed: CPU per ``seq`` of the ``run_shard`` calls
(``time.process_time``), and the grouped filters' own share (the sum of the CPU billed to
the tasks in predicate groups: unfused, their own; fused, their shares of their groups),
as median [min, max] (:class:`reuse.runtime.spread.Spread`), and the unfused/fused ratio of
each repetition. Outputs are checked equal (sink lines and states) for the first batch of each
case before timing.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/predicates.py [--tenants-list 10 100]
[--repeat 3] [--no-peak]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reuse.core.paths import riotbench_dir  # noqa: E402
from reuse.runtime.engines.shared.deploy import Deployment  # noqa: E402
from reuse.runtime.engines.shared.shard import run_shard  # noqa: E402
from reuse.runtime.spread import Spread, interleave  # noqa: E402

MODES = ("unfused", "fused")


def _spec(tid: str, type_: str, config: Any, parents: list[str], kind: str = "task",
          ) -> dict[str, Any]:
    return {"id": tid, "type": type_, "config": config, "parents": parents, "kind": kind,
            "start": 0, "end": None, "record": False, "replica_of": None,
            "stream": type_ if kind == "source" else None}


def filter_tasks(src: str, n: int, sinks: bool, seed: int = 1) -> list[dict[str, Any]]:
    """``source -> SenMLParse -> n`` tenants' RangeFilters (and a Sink behind each)."""
    from reuse.workloads.riotbench import source_configs
    from reuse.workloads.tenants import observed_values, trimmed_ranges

    dd = riotbench_dir(None)
    cfg = source_configs(src, dd, keying="field")
    seen = observed_values(src, dd, list(cfg["RangeFilter.drop"]["valid_range"]))
    tasks = [_spec("src", src, "source", [], "source"),
             _spec("parse", "SenMLParse", cfg["SenMLParse"], ["src"])]
    for i in range(n):
        rng = random.Random(f"{seed}:{i}")
        conf = {"valid_range": trimmed_ranges(seen, rng.uniform(0, 10)),
                "mode": rng.choice(["drop", "null"])}
        tasks.append(_spec(f"r{i:03d}", "RangeFilter", conf, ["parse"]))
    if sinks:
        tasks += [_spec(f"s{i:03d}", "Sink", "sink", [f"r{i:03d}"], "sink") for i in range(n)]
    return tasks


def peak_epoch(tenants: int, semantic: bool) -> Deployment:
    """The riot-tenants SEQ peak on one shard, planned with exact or semantic matching."""
    from reuse.core.dataflow import parse_dataflow
    from reuse.core.manager import Manager
    from reuse.runtime.common.planners import ReusePlanner
    from reuse.tasks.matching import SEMANTIC
    from reuse.workloads.tenants import build_tenants

    planner = ReusePlanner(Manager(match=SEMANTIC)) if semantic else ReusePlanner()
    dep = Deployment(1)
    kinds: dict[str, str] = {}
    for d in sorted(build_tenants(riotbench_dir(None), tenants=tenants, seed=1),
                    key=lambda d: d["id"]):
        p = planner.submit(parse_dataflow(d))
        kinds.update({t.id: t.kind for t in p.start})
        dep.deploy(p, 0, record={r for r in p.sinks.values() if kinds[r] == "task"})
    return dep


class Batches:
    """Consecutive batches of one task list, states carried through JSON between them."""

    def __init__(self, tasks: list[dict[str, Any]], opts: dict[str, Any], batch: int) -> None:
        self.tasks, self.opts, self.batch = tasks, opts, batch
        self.states: dict[str, Any] = {}
        self.lo = 0

    def run(self, batches: int, members: set[str]) -> tuple[float, float, int, Any]:
        """CPU of ``run_shard``, the CPU billed to ``members``, seqs, and the last result."""
        cpu = billed = 0.0
        res: Any = None
        for _ in range(batches):
            lo, hi = self.lo, self.lo + self.batch
            mine = {t["id"]: self.states[t["id"]] for t in self.tasks if t["id"] in self.states}
            c0 = time.process_time()
            res = run_shard(self.tasks, lo, hi, mine, self.opts, t0=0, rate=300.0,
                            now_ms=lambda: 0.0)
            cpu += time.process_time() - c0
            billed += sum(v for k, v in res["cpu"].items() if k in members)
            self.states = json.loads(json.dumps(res["states"], separators=(",", ":")))
            self.lo = hi
        return cpu, billed, batches * self.batch, res


def compare(name: str, tasks: list[dict[str, Any]], args: argparse.Namespace,
            ) -> dict[str, Any]:
    """Fused vs unfused on ``tasks``, interleaved; printed and returned."""
    from reuse.runtime.common.predicates import predicate_groups

    groups = predicate_groups(tasks)
    members = {m for g in groups for m in g.members}
    dd = str(riotbench_dir(None))
    base = {"data_dir": dd, "pi_iterations": 1600, "record": "digest", "limit": None}
    runs = {m: Batches(tasks, {**base, "fuse_predicates": m == "fused"}, args.batch)
            for m in MODES}
    warm = {m: r.run(1, members)[3] for m, r in runs.items()}  # warm, and check equal outputs
    for key in ("sinks", "states", "counts"):
        if warm["fused"][key] != warm["unfused"][key]:
            raise SystemExit(f"{name}: fused and unfused {key} differ")
    print(f"{name}: {len(tasks)} tasks, {len(groups)} predicate groups "
          f"({sum(len(g.members) for g in groups)} members, largest "
          f"{max((len(g.members) for g in groups), default=0)}); batches of {args.batch} seq, "
          f"{args.batches} timed per repetition", flush=True)
    ms: dict[str, list[float]] = {m: [] for m in MODES}
    part: dict[str, list[float]] = {m: [] for m in MODES}
    for rep, mode in interleave(list(MODES), args.repeat):
        gc.collect()
        cpu, billed, seqs, _ = runs[mode].run(args.batches, members)
        ms[mode].append(1000 * cpu / seqs)
        part[mode].append(1000 * billed / seqs)
        print(f"  {rep} {mode:8s} shard {ms[mode][-1]:.4f} ms/seq, grouped filters "
              f"{part[mode][-1]:.4f}", flush=True)
    ratio = [u / f for u, f in zip(ms["unfused"], ms["fused"], strict=True)]
    out: dict[str, Any] = {"tasks": len(tasks), "groups": len(groups),
                           "members": sum(len(g.members) for g in groups)}
    for m in MODES:
        out[m] = Spread.of(ms[m]).to_dict()
        print(f"  shard ms/seq {m:8s} {Spread.of(ms[m])}")
    print(f"  unfused / fused (shard) {Spread.of(ratio)}")
    out["ratio"] = Spread.of(ratio).to_dict()
    pr = [u / f for u, f in zip(part["unfused"], part["fused"], strict=True)]
    for m in MODES:
        out[f"filters_{m}"] = Spread.of(part[m]).to_dict()
        print(f"  grouped filters ms/seq {m:8s} {Spread.of(part[m])}")
    print(f"  unfused / fused (grouped filters) {Spread.of(pr)}")
    out["filters_ratio"] = Spread.of(pr).to_dict()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default="SYS", choices=("SYS", "TAXI"))
    ap.add_argument("--tenants-list", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--batch", type=int, default=300, help="seqs per batch")
    ap.add_argument("--batches", type=int, default=2, help="timed batches per repetition")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tenants", type=int, default=100, help="riot-tenants size at the peak")
    ap.add_argument("--no-peak", action="store_true", help="skip the riot-tenants SEQ peak")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    res: dict[str, Any] = {}
    for n in args.tenants_list:
        for sinks in (False, True):
            name = f"{n} RangeFilters on {args.src}" + (" + sinks" if sinks else "")
            res[name] = compare(name, filter_tasks(args.src, n, sinks), args)
    if not args.no_peak:
        for semantic in (False, True):
            name = f"riot-tenants SEQ peak ({args.tenants}), {'semantic' if semantic else 'exact'}"
            tasks = list(peak_epoch(args.tenants, semantic).snapshot().shards[0])
            res[name] = compare(name, tasks, args)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
