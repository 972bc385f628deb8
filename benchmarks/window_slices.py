"""Window groups through shared slices (issue 35, item 3): CPU per batch, fused vs unfused.

``k`` BlockWindowAverage tenants (k = 1, 2, 4, 8 by default) over one real stream (SYS by
default, the workload's own fields, series per field unless ``--group-by sensor``), windows
the first ``k`` of ``--windows`` (5, 10, 20, 50, 100, 200, 500, 1000), on batches of
``--seqs`` source messages parsed by SenMLParse (1000: a batch of the shared query at 10
events/s per source over 100 s, or one of a loaded shard), without Spark. Two levels:

- ``kernel``: the members' kernels one by one (``unfused``: each explodes, lays out and sums
  its own blocks) against :func:`reuse.tasks.columnar.slices.run_sliced` (``fused``);
- ``window``: :func:`reuse.runtime.common.window.run_window`'s columnar path over a task list
  ``source -> k BWAs`` (the source hands over the parsed batch), ``fuse_windows`` off and on:
  what the shard pays, tasks rebuilt from their JSON states each batch.

The members' states are carried from batch to batch (``--pool`` parsed batches, cycled);
after a warm-up batch per mode, whose outputs and states are checked equal between the modes,
the modes run interleaved ``A B A B ...`` (``--repeat`` repetitions of ``--batches`` batches
each). Printed: CPU ms per batch (``time.process_time``) median [min, max]
(:class:`reuse.runtime.spread.Spread`) per ``k``, level and mode, and the unfused/fused ratio
of each repetition. ``--json PATH`` writes them as a raw file with provenance
(:func:`benchmarks.provenance.raw_file`).

Run: ``PYTHONPATH=. nice -n 19 .venv/bin/python benchmarks/window_slices.py [--ks 1 2 4 8]
[--repeat 5] [--json docs/bench/window_slices.json]``; a smoke run: ``--seqs 50 --pool 2
--batches 1 --repeat 1 --ks 1 2``.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.provenance import raw_file  # noqa: E402
from reuse.core.paths import riotbench_dir  # noqa: E402
from reuse.runtime.common.window import run_window  # noqa: E402
from reuse.runtime.spread import Spread, interleave  # noqa: E402
from reuse.tasks import make_task  # noqa: E402
from reuse.tasks.columnar import Batch, kernel_for  # noqa: E402
from reuse.tasks.columnar.slices import run_sliced  # noqa: E402
from reuse.tasks.sources import replay  # noqa: E402
from reuse.workloads.riotbench import source_configs  # noqa: E402

MODES = ("unfused", "fused")
LEVELS = ("kernel", "window")


def parsed_batches(src: str, seqs: int, pool: int, data: Path) -> list[Batch]:
    """``pool`` consecutive batches of ``seqs`` messages each, parsed, as batches (``seq``
    renumbered per batch position, so cycling them keeps ``seq`` increasing)."""
    parse = make_task("SenMLParse", source_configs(src, data)["SenMLParse"])
    out = []
    # the sample files hold 1,000 messages (SYS): cycled, as the engine's replay cycles them
    once = list(replay(src, data, limit=seqs * pool))
    events = list(itertools.islice(itertools.cycle(once), seqs * pool))
    for b in range(pool):
        obs = [o for e in events[b * seqs:(b + 1) * seqs] for o in parse.process(e)]
        out.append(Batch.from_events(obs))
    return out


class Run:
    """One mode at one level: its members' state carried over consecutive batches."""

    def __init__(self, level: str, mode: str, cfgs: list[dict[str, Any]],
                 pool: list[Batch], seqs: int) -> None:
        self.level, self.mode, self.cfgs, self.pool, self.seqs = level, mode, cfgs, pool, seqs
        self.tasks = [make_task("BlockWindowAverage", c) for c in cfgs]
        self.specs = [{"id": "src", "type": "SYS", "config": "source", "parents": [],
                       "kind": "source", "start": 0, "end": None, "record": False}]
        self.specs += [{"id": f"w{i}", "type": "BlockWindowAverage", "config": c,
                        "parents": ["src"], "kind": "task", "start": 0, "end": None,
                        "record": False} for i, c in enumerate(cfgs)]
        self.states: dict[str, Any] = {}
        self.at = 0

    def step(self) -> tuple[float, list[list[dict[str, Any]]], list[Any]]:
        """One batch: its CPU seconds, each member's outputs and states."""
        batch = self.pool[self.at % len(self.pool)]
        lo = self.at * self.seqs
        self.at += 1
        shifted = batch.with_columns(seq=batch.cols["seq"] - batch.cols["seq"][0] + lo)
        c0 = time.process_time()
        if self.level == "kernel":
            if self.mode == "fused":
                outs = run_sliced(self.tasks, shifted, [(0, shifted.n)] * len(self.tasks))
            else:
                outs = [kernel_for(t).run(shifted) for t in self.tasks]
            cpu = time.process_time() - c0
            return cpu, [o.to_events() for o in outs], [t.get_state() for t in self.tasks]
        res = run_window(self.specs, lo, lo + self.seqs, self.states,
                         {"columnar": True, "fuse_windows": self.mode == "fused"},
                         source=lambda t, a, b: [], source_batch=lambda t, a, b: shifted,
                         now_ms=lambda: 0.0)
        cpu = time.process_time() - c0
        self.states = json.loads(json.dumps(res.states))
        ids = [s["id"] for s in self.specs[1:]]
        return cpu, [res.batches[i].to_events() for i in ids], [self.states[i] for i in ids]


def compare(k: int, level: str, cfgs: list[dict[str, Any]], pool: list[Batch],
            args: argparse.Namespace) -> dict[str, Any]:
    """Fused vs unfused for ``k`` members at ``level``, interleaved; printed and returned."""
    runs = {m: Run(level, m, cfgs, pool, args.seqs) for m in MODES}
    warm = {m: r.step()[1:] for m, r in runs.items()}
    if warm["fused"] != warm["unfused"]:
        raise SystemExit(f"k={k} {level}: fused and unfused outputs or states differ")
    ms: dict[str, list[float]] = {m: [] for m in MODES}
    for rep, mode in interleave(list(MODES), args.repeat):
        gc.collect()
        cpu = sum(runs[mode].step()[0] for _ in range(args.batches))
        ms[mode].append(1000 * cpu / args.batches)
        print(f"  {rep} {level:6s} {mode:8s} {ms[mode][-1]:.3f} ms/batch", flush=True)
    ratio = [u / f for u, f in zip(ms["unfused"], ms["fused"], strict=True)]
    out: dict[str, Any] = {m: Spread.of(ms[m]).to_dict() for m in MODES}
    out["ratio"] = Spread.of(ratio).to_dict()
    out["raw_ms"] = ms
    print(f"k={k} {level}: " + ", ".join(f"{m} {Spread.of(ms[m])} ms/batch" for m in MODES)
          + f"; unfused/fused {Spread.of(ratio)}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default="SYS", choices=("SYS", "TAXI", "FIT"))
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--windows", type=int, nargs="+",
                    default=[5, 10, 20, 50, 100, 200, 500, 1000])
    ap.add_argument("--group-by", choices=("field", "sensor"), default="field")
    ap.add_argument("--seqs", type=int, default=1000, help="source messages per batch")
    ap.add_argument("--pool", type=int, default=4, help="parsed batches, cycled")
    ap.add_argument("--batches", type=int, default=3, help="timed batches per repetition")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--levels", nargs="+", choices=LEVELS, default=list(LEVELS))
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--json", default=None, help="write the raw results (with provenance)")
    args = ap.parse_args()
    if max(args.ks) > len(args.windows):
        raise SystemExit(f"--ks up to {max(args.ks)} needs as many --windows")
    data = riotbench_dir(args.data)
    base = dict(source_configs(args.src, data)["BlockWindowAverage"])
    base["group_by"] = ["obs"] if args.group_by == "field" else ["sensor", "obs"]
    pool = parsed_batches(args.src, args.seqs, args.pool, data)
    print(f"{args.src}: batches of {args.seqs} messages ({pool[0].n} observations in the "
          f"first), fields {base['fields']}, group_by {base['group_by']}", flush=True)
    res: dict[str, Any] = {}
    for k in args.ks:
        cfgs = [{**base, "window": w} for w in args.windows[:k]]
        for level in args.levels:
            res[f"k={k} {level}"] = {"windows": args.windows[:k],
                                     **compare(k, level, cfgs, pool, args)}
    if args.json:
        path = raw_file(args.json, res, config={k: v for k, v in vars(args).items()
                                                if k not in ("json", "data")})
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
