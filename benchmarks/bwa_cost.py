"""BlockWindowAverage's cost per event, and a pane residual's (issue 25, item 3).

Times ``BlockWindowAverage.process`` over the parsed observations of the first messages of the
SYS and TAXI samples (the workload's configs, series per field so blocks fill), best of
``--repeat`` runs, in microseconds per input event. Run it against two checkouts to compare
(the exact sum of the pane rule against the float sum before it)::

    PYTHONPATH=. .venv/bin/python benchmarks/bwa_cost.py [--messages 2000] [--repeat 7]

Where the tree has the ``panes`` containment rule, it also times a residual ``BWA(k*w)`` that
reads a running ``BWA(w)``'s panes, per raw event the wide task saw (what the residual costs
beside the wide task, against a ``BWA(k*w)`` over the raw events).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reuse.core.paths import riotbench_dir  # noqa: E402
from reuse.tasks import make_task  # noqa: E402
from reuse.tasks.containment import RULES  # noqa: E402
from reuse.tasks.sources import replay  # noqa: E402
from reuse.workloads.riotbench import source_configs  # noqa: E402


def parsed(src: str, data: Path, n: int) -> list[dict[str, Any]]:
    parse = make_task("SenMLParse", source_configs(src, data)["SenMLParse"])
    return [o for ev in replay(src, data, limit=n) for o in parse.process(ev)]


def per_event(config: dict[str, Any], events: list[dict[str, Any]], repeat: int,
              ) -> tuple[float, list[dict[str, Any]]]:
    """Best-of-``repeat`` microseconds per event of a fresh task over ``events``, and its
    outputs."""
    best, out = float("inf"), []
    for _ in range(repeat):
        task = make_task("BlockWindowAverage", config)
        t0 = time.perf_counter()
        out = [o for e in events for o in task.process(e)]
        best = min(best, time.perf_counter() - t0)
    return best / len(events) * 1e6, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--k", type=int, default=4, help="the residual's window over the wide one's")
    args = ap.parse_args()
    data = riotbench_dir(args.data)
    panes = "panes" in RULES
    print(f"python {sys.version.split()[0]}; {args.messages} messages per source; "
          f"pane rule: {'yes' if panes else 'no'}")
    for src in ("SYS", "TAXI"):
        events = parsed(src, data, args.messages)
        cfg = {**source_configs(src, data)["BlockWindowAverage"], "group_by": ["obs"]}
        us, wide_out = per_event(cfg, events, args.repeat)
        line = (f"{src}: {len(events)} observations, window {cfg['window']}: "
                f"{us:.3f} us/event, {len(wide_out)} blocks")
        if panes:
            narrow = {**cfg, "window": args.k * cfg["window"]}
            raw_us, raw_out = per_event(narrow, events, args.repeat)
            res_us, res_out = per_event(narrow, wide_out, args.repeat)
            assert res_out == raw_out, "the residual must equal the narrow task alone"
            res_us *= len(wide_out) / len(events)
            line += (f"; BWA({narrow['window']}) on the raw events {raw_us:.3f} us/event, "
                     f"as a residual on the panes {res_us:.3f} us per raw event "
                     f"({len(res_out)} blocks, identical)")
        print(line)


if __name__ == "__main__":
    main()
