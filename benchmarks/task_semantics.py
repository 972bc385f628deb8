"""RIoTBench task semantics: the effect of each choice, measured on the sample streams.

Runs the workload's task configs (``reuse.workloads.riotbench.source_configs``) over the SYS, TAXI
and FIT sample files, once per choice, and prints one table per item of ``docs/task-semantics.md``
("RIoTBench task semantics"):

1. keying: outputs and series of every keyed stateful task, per field vs per (sensor, field);
2. Bloom filter: pass fraction when trained on every line vs on the even lines only;
3. DistinctApproxCount: the estimate with the original's constants vs the estimator the
   workbench used before (64-bit hash, rank from 1, bias-corrected alpha_m), beside the truth;
4. SecondOrderMoment: each field's final estimate over its exact F2, for the original's
   estimator (ours), AMS, and a literal replay of the Java code;
5. SenMLParse: observations per message, the id field counted or not.

    PYTHONPATH=. .venv/bin/python benchmarks/task_semantics.py [--data data/riotbench]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reuse.core.paths import riotbench_dir
from reuse.tasks import make_task
from reuse.tasks.base import Event, as_float, stable_hash64
from reuse.tasks.sources import replay
from reuse.workloads.riotbench import SOURCES, group_by, source_configs

ROOT = Path(__file__).resolve().parents[1]


def run(task: Any, events: Iterable[Event]) -> list[Event]:
    return [o for ev in events for o in task.process(ev)]


def parsed(src: str, cfg: dict[str, Any], data: Path) -> tuple[list[Event], list[Event]]:
    """The source events and their SenMLParse outputs."""
    events = list(replay(src, data))
    return events, run(make_task("SenMLParse", cfg["SenMLParse"]), events)


def keying_table(data: Path) -> None:
    print("1. Keying: outputs (series) of each keyed task, per field vs per (sensor, field);")
    print("   a series' first output is its first step (Kalman: 0.99 z, no smoothing yet)")
    print(f"{'src':5} {'task':28} {'field':>14} {'sensor':>14}")
    for src in SOURCES:
        by = {k: source_configs(src, data, keying=k) for k in ("field", "sensor")}
        _, obs = parsed(src, by["field"], data)
        cells: dict[str, list[str]] = {}
        for keying, cfg in by.items():
            g = group_by(keying)
            kf_out = run(make_task("KalmanFilter", cfg["KalmanFilter"]), obs)
            kalman_in = [o for o in obs if o["obs"] in cfg["KalmanFilter"]["fields"]]
            slr = run(make_task("SlidingLinearRegression", cfg["SlidingLinearRegression"]),
                      kf_out)
            bwa = run(make_task("BlockWindowAverage", cfg["BlockWindowAverage"]), obs)
            nulled = run(make_task("RangeFilter", cfg["RangeFilter.null"]), obs)
            interp = run(make_task("Interpolation", cfg["Interpolation"]), nulled)
            som = run(make_task("SecondOrderMoment", cfg["SecondOrderMoment"]), obs)

            def series(evs: list[Event], fields: Iterable[str], g: list[str] = g) -> int:
                want = set(fields)
                return len({tuple(str(e.get(k)) for k in g) for e in evs if e["obs"] in want})

            rows = {
                "KalmanFilter outputs": f"{len(kf_out)} ({series(kalman_in, cfg['KalmanFilter']['fields'])})",
                "SlidingLinearRegression": f"{len(slr)} ({series(kf_out, cfg['KalmanFilter']['fields'])})",
                "BlockWindowAverage": f"{len(bwa)} ({series(obs, cfg['BlockWindowAverage']['fields'])})",
                "Interpolation fills/nulls": f"{sum(1 for o in interp if o.get('interpolated'))}"
                                             f"/{sum(1 for o in nulled if o.get('filtered'))}",
                "SecondOrderMoment": f"{len(som)} ({series(obs, cfg['SecondOrderMoment']['fields'])})",
            }
            for name, cell in rows.items():
                cells.setdefault(name, []).append(cell)
        for name, (f, s) in cells.items():
            print(f"{src:5} {name:28} {f:>14} {s:>14}")


def bloom_table(data: Path) -> None:
    print("\n2. BloomFilterCheck pass fraction (trained lines / held-out lines / all)")
    print(f"{'src':5} {'ids':>5} {'trained on':>14} {'trained':>8} {'held-out':>9} {'all':>6}")
    for src in SOURCES:
        cfg = source_configs(src, data)
        events, _ = parsed(src, cfg, data)
        parse = make_task("SenMLParse", cfg["SenMLParse"])
        firsts = [parse.process(e)[0] for e in events]
        ids = len({o["sensor"] for o in firsts})
        for label, stride in (("every line", 1), ("even lines", 2)):
            task = make_task("BloomFilterCheck", {**cfg["BloomFilterCheck"], "train_stride": stride},
                             data_dir=data)
            passed = [bool(task.process(o)) for o in firsts]
            trained = [p for i, p in enumerate(passed) if i % stride == 0]
            held = [p for i, p in enumerate(passed) if i % stride != 0]
            held_s = f"{sum(held) / len(held):.3f}" if held else "-"
            print(f"{src:5} {ids:>5} {label:>14} {sum(trained) / len(trained):>8.3f} {held_s:>9} "
                  f"{sum(passed) / len(passed):>6.3f}")


def previous_loglog(items: Iterable[str], k: int) -> float:
    """The workbench's DistinctApproxCount before issue 14, for comparison only."""
    m = 1 << k
    alpha = 0.39701 - (2 * math.pi**2 + math.log(2) ** 2) / (48 * m)
    reg = [0] * m
    for item in items:
        h = stable_hash64(item, 7)
        j, w = h & (m - 1), h >> k
        reg[j] = max(reg[j], (w & -w).bit_length() if w else 64 - k + 1)
    return alpha * m * 2 ** (sum(reg) / m)


def distinct_table(data: Path) -> None:
    print("\n3. DistinctApproxCount at the end of each stream (estimate / true distinct ids)")
    print(f"{'src':5} {'true':>5} {'original consts':>16} {'ratio':>6} {'previous':>9} {'ratio':>6}"
          f" {'new/prev':>9}")
    for src in SOURCES:
        cfg = source_configs(src, data)
        _, obs = parsed(src, cfg, data)
        outs = run(make_task("DistinctApproxCount", cfg["DistinctApproxCount"]), obs)
        true = len({o["sensor"] for o in obs})
        new = outs[-1]["value"]
        prev = previous_loglog((str(o["sensor"]) for o in obs),
                               cfg["DistinctApproxCount"]["buckets"])
        print(f"{src:5} {true:>5} {new:>16.0f} {new / true:>6.2f} {prev:>9.1f} {prev / true:>6.2f}"
              f" {new / prev:>9.2f}")


def java_som(values: list[float], size: int, rng: random.Random) -> tuple[list[float], int | None]:
    """A literal replay of RIoTBench's SecondOrderMoment on one series, for comparison only.

    Sums ``counter * (2 f - 1)`` over all ``size`` slots (empty ones too) and advances the next
    free slot on every item while the map is not full. Returns the estimates and the item
    number at which the Java code throws ArrayIndexOutOfBoundsException (None if it does not).
    """
    index: dict[float, int] = {}
    items = [0.0] * size
    freq = [0] * size
    nxt = 0
    out: list[float] = []
    for n, v in enumerate(values, start=1):
        if v in index:
            freq[index[v]] += 1
        elif len(index) < size:
            if nxt >= size:
                return out, n
            index[v], freq[nxt], items[nxt] = nxt, 1, v
        else:
            slot = index.pop(items[rng.randrange(size)])
            index[v], freq[slot], items[slot] = slot, 1, v
        out.append(sum(n * (2 * f - 1) for f in freq) / len(index))
        if len(index) < size:
            nxt += 1
    return out, None


def moment_table(data: Path) -> None:
    print("\n4. SecondOrderMoment: final estimate / exact F2 per series (median), ours and AMS;")
    print("   the literal Java code on the same values: series it crashes on (index out of")
    print("   bounds), share of negative outputs; and on the random floats it is fed as shipped")
    print(f"{'src':5} {'keying':7} {'series':>6} {'ours':>6} {'ams':>6} "
          f"{'java crashes':>12} {'java <0':>8} {'shipped <0':>10}")
    rng = random.Random(0)
    for src in SOURCES:
        for keying in ("field", "sensor"):
            cfg = source_configs(src, data, keying=keying)
            som_cfg = cfg["SecondOrderMoment"]
            _, obs = parsed(src, cfg, data)
            g = som_cfg["group_by"]
            series: dict[str, list[float]] = {}
            for o in obs:
                v = as_float(o["value"])
                if o["obs"] in som_cfg["fields"] and v is not None:
                    series.setdefault("|".join(str(o[k]) for k in g), []).append(v)
            ours = run(make_task("SecondOrderMoment", som_cfg), obs)
            ams = run(make_task("SecondOrderMoment", {**som_cfg, "estimator": "ams"}), obs)
            last_ours: dict[str, float] = {}
            last_ams: dict[str, float] = {}
            for a, b in zip(ours, ams, strict=True):
                key = "|".join(str(a[k]) for k in g)
                last_ours[key], last_ams[key] = a["value"], b["value"]
            exact = {k: float(sum(c * c for c in Counter(v).values())) for k, v in series.items()}
            r_ours = statistics.median(last_ours[k] / exact[k] for k in series)
            r_ams = statistics.median(last_ams[k] / exact[k] for k in series)
            crashed = neg = total = shipped_neg = shipped_total = 0
            for vals in series.values():
                est, crash = java_som(vals, som_cfg["max_map_size"], rng)
                crashed += crash is not None
                neg += sum(1 for e in est if e < 0)
                total += len(est)
                # as shipped the item is a random float (USE_MSG_FIELD -1 / 0): all distinct
                shipped, _ = java_som([rng.random() for _ in vals], som_cfg["max_map_size"], rng)
                shipped_neg += sum(1 for e in shipped if e < 0)
                shipped_total += len(shipped)
            print(f"{src:5} {keying:7} {len(series):>6} {r_ours:>6.2f} {r_ams:>6.2f} "
                  f"{crashed:>12} {neg / max(total, 1):>8.2f} "
                  f"{shipped_neg / shipped_total:>10.2f}")


def parse_table(data: Path) -> None:
    print("\n5. SenMLParse observations per message (id field excluded before / kept now)")
    for src in SOURCES:
        cfg = source_configs(src, data)
        events, obs = parsed(src, cfg, data)
        id_field = cfg["SenMLParse"]["id_field"]
        kept = sum(1 for o in obs if o["obs"] == id_field)
        distinct = len({o["value"] for o in obs if o["obs"] == id_field})
        print(f"{src:5} {len(obs) / len(events):.1f} obs/message; id field {id_field!r}: "
              f"{kept / len(events):.1f}/message, {distinct} distinct")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(riotbench_dir()))
    args = ap.parse_args()
    data = Path(args.data)
    keying_table(data)
    bloom_table(data)
    distinct_table(data)
    moment_table(data)
    parse_table(data)


if __name__ == "__main__":
    main()
