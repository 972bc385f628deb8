"""Bus frames: the entropy gate (as Neptune's Figure 5) and the relay hop, without Spark.

(a) Entropy table. For the RIoTBench SYS, TAXI and FIT event streams (the JSON texts the source
queries publish) and for random bytes (``os.urandom`` events of the same sizes as SYS's, Neptune's
synthetic high-entropy stream), per batch size: the sampled entropy, the bytes of the old
JSON-lines message, of a frame without and with LZ4, the gate's decision, and encode+decode
throughput both ways (events per second of this process's CPU time).

(b) Relay hop: publish a frame to a FileBus topic, read it, decode, run one trivial task, encode,
publish to the next topic: events per second of this process's CPU time (``time.process_time``,
so file-system work in the kernel counts) at ~200-byte events. Tasks: ``pass`` forwards the
values untouched; ``field`` parses each event (orjson), adds a field and serialises it again.
Both publishes are counted, so the figure is conservative for a chain of hops.

    PYTHONPATH=. .venv/bin/python benchmarks/bus_frames.py [--data data/riotbench]
    PYTHONPATH=. .venv/bin/python benchmarks/bus_frames.py --batches 100 1000 \\
        --hop-batches 1000 --hop-events 20000 --min-time 0.02        # a quick check

``--json PATH`` writes both tables' rows as a raw file with the command, commit and machine
(``benchmarks/provenance.py``), which ``benchmarks/report.py`` renders into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from reuse.core.paths import riotbench_dir
from reuse.runtime.common.execution import source_event
from reuse.runtime.dataplane.bus import FileBus
from reuse.runtime.dataplane.frames import ENTROPY_THRESHOLD, decode_frame, encode_frame, entropy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import raw_file  # noqa: E402

STREAMS = ("SYS", "TAXI", "FIT")


def riot_events(src: str, n: int, data_dir: str) -> list[str]:
    """The first ``n`` events of a RIoTBench source as the source query publishes them."""
    return [json.dumps(source_event(src, src, s, 0, 10.0, data_dir), separators=(",", ":"))
            for s in range(n)]


def per_second(fn: Callable[[], Any], events: int, min_time: float) -> float:
    """Events per CPU second of ``fn`` (which handles ``events`` events), repeated for at least
    ``min_time`` CPU seconds."""
    runs, t0 = 0, time.process_time()
    while True:
        fn()
        runs += 1
        spent = time.process_time() - t0
        if spent >= min_time:
            return runs * events / spent


def codec_rate(events: Sequence[str] | Sequence[bytes], compress: bool, min_time: float,
               ) -> float:
    """Encode+decode events per CPU second of one batch, LZ4 forced on or off."""
    def once() -> None:
        decode_frame(encode_frame(len(events) - 1, events, compress=compress), topic="t", key="-")

    return per_second(once, len(events), min_time)


def entropy_table(batches: Sequence[int], data_dir: str, min_time: float,
                  ) -> list[dict[str, Any]]:
    print(f"(a) entropy gate (threshold {ENTROPY_THRESHOLD} bits/byte); sizes in bytes, "
          "throughput = encode+decode, events/s of CPU")
    print(f"{'stream':7} {'batch':>6} {'ev B':>5} {'H':>5} {'json-lines':>11} {'frame':>11} "
          f"{'frame+lz4':>10} {'ratio':>6} {'gate':>5} {'plain ev/s':>11} {'lz4 ev/s':>11}")
    top = max(batches)
    streams: dict[str, list[str] | list[bytes]] = {s: riot_events(s, top, data_dir)
                                                   for s in STREAMS}
    sizes = [len(e) for e in streams["SYS"]]
    streams["random"] = [os.urandom(n) for n in sizes]
    rows: list[dict[str, Any]] = []
    for name, all_events in streams.items():
        for n in batches:
            events = all_events[:n]
            raw = b"".join((e if isinstance(e, bytes) else e.encode()) + b"\n" for e in events)
            plain = encode_frame(n - 1, events, compress=False)
            packed = encode_frame(n - 1, events, compress=True)
            gated = decode_frame(encode_frame(n - 1, events), topic=name, key="-").compressed
            rates = [codec_rate(events, c, min_time) for c in (False, True)]
            print(f"{name:7} {n:6d} {statistics.mean(len(e) for e in events):5.0f} "
                  f"{entropy(raw):5.2f} {len(raw):11d} {len(plain):11d} {len(packed):10d} "
                  f"{len(plain) / len(packed):6.2f} {'lz4' if gated else 'plain':>5} "
                  f"{rates[0]:11,.0f} {rates[1]:11,.0f}")
            rows.append({"stream": name, "batch": n, "entropy": entropy(raw),
                         "json_lines_b": len(raw), "frame_b": len(plain),
                         "frame_lz4_b": len(packed), "gate": "lz4" if gated else "plain",
                         "plain_ev_s": rates[0], "lz4_ev_s": rates[1]})
    return rows


def hop_events(n: int, size: int, data_dir: str) -> list[str]:
    """``n`` events of about ``size`` bytes: SYS source events with the payload cut to fit."""
    out = []
    for s in range(n):
        ev = source_event("SYS", "SYS", s, 0, 10.0, data_dir)
        head = len(json.dumps({**ev, "payload": ""}, separators=(",", ":")))
        ev["payload"] = ev["payload"][:max(0, size - head)]
        out.append(json.dumps(ev, separators=(",", ":")))
    return out


def _field(values: Sequence[str]) -> list[bytes]:
    out = []
    for v in values:
        ev = orjson.loads(v)
        ev["hop"] = 1
        out.append(orjson.dumps(ev))
    return out


def relay(batches: Sequence[int], total: int, size: int, data_dir: str,
          ) -> list[dict[str, Any]]:
    print(f"(b) relay hop on a FileBus (publish, read, decode, task, encode, publish), "
          f"~{size}-byte events, {total:,} events per cell, events/s of CPU")
    print(f"{'task':6} {'batch':>6} {'mode':>7} {'frame B':>9} {'ev/s':>11}")
    events = hop_events(max(batches), size, data_dir)
    tasks: dict[str, Callable[[Any], Sequence[str] | Sequence[bytes]]] = {
        "pass": lambda values: values, "field": _field}
    rows: list[dict[str, Any]] = []
    for task_name, task in tasks.items():
        for n in batches:
            for compress in (None, False):
                root = tempfile.mkdtemp(prefix="bus-frames-")
                try:
                    bus = FileBus(root)
                    batch, msgs = events[:n], max(1, total // n)
                    size_b = 0
                    t0 = time.process_time()
                    for i in range(msgs):
                        key = f"000001-{i:09d}"
                        bus.publish("in", key, encode_frame(i, batch, compress=compress))
                        for k, data in bus.read("in", "" if i == 0 else f"000001-{i - 1:09d}",
                                                key):
                            frame = decode_frame(data, topic="in", key=k)
                            out = encode_frame(frame.hw, task(frame.values), compress=compress)
                            size_b = len(out)
                            bus.publish("out", k, out)
                    spent = time.process_time() - t0
                finally:
                    shutil.rmtree(root, ignore_errors=True)
                mode = "gate" if compress is None else "plain"
                print(f"{task_name:6} {n:6d} {mode:>7} {size_b:9d} {msgs * n / spent:11,.0f}")
                rows.append({"task": task_name, "batch": n, "frames": mode,
                             "frame_b": size_b, "ev_s": msgs * n / spent, "events": msgs * n})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="RIoTBench data folder")
    ap.add_argument("--batches", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--min-time", type=float, default=0.2,
                    help="CPU seconds per throughput cell of (a)")
    ap.add_argument("--hop-batches", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--hop-events", type=int, default=200_000)
    ap.add_argument("--event-bytes", type=int, default=200)
    ap.add_argument("--json", default=None, help="write both tables' rows as a raw file here")
    args = ap.parse_args()
    data_dir = str(riotbench_dir(args.data))
    print(f"pyarrow {pa.__version__}, data {data_dir}")
    gate = entropy_table(args.batches, data_dir, args.min_time)
    print()
    hop = relay(args.hop_batches, args.hop_events, args.event_bytes, data_dir)
    if args.json:
        got = {"pyarrow": pa.__version__, "threshold": ENTROPY_THRESHOLD, "entropy": gate,
               "relay": hop}
        print(f"wrote {raw_file(args.json, got, args=vars(args))}")


if __name__ == "__main__":
    main()
