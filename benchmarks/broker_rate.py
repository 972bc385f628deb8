"""Issue 23's broker figures, without Spark: the broker's own limit and the publisher's rate.

Every run starts its own mosquitto (``reuse broker start``'s config: ``max_queued_messages``
1,000,000, the default 20 QoS 1 messages in flight per client) from a temporary folder on a free
port, and stops it by its PID at the end, also on error. The messages are the ones ``reuse
publish`` sends: the RIoTBench sources' events (SYS, TAXI, FIT, SenML packs, 540-1,610 bytes,
1,091 on average), each the real ``encode_message`` of ``source_event``
(:func:`reuse.runtime.dataplane.publish.message`), QoS 1 on ``sensors/<source>``.

Modes (``--parts``; ``--repeat N`` runs them interleaved, ``A B C A B C ...``):

``broker``
    The broker's own limit: mosquitto pinned to core 0, this process to core 1.
    :func:`reuse.runtime.dataplane.mqtt_load.flood` publishes on one connection and receives on
    another (subscribed to ``sensors/#`` with QoS 1, as the ingest is), on plain sockets, with at
    most ``--in-flight`` messages between sent and delivered, for ``--flood-seconds``. Printed:
    messages/s delivered end to end, the broker's CPU seconds per message (psutil, user +
    system), how busy the broker's core was, and the rate that CPU per message gives on a whole
    core (``1 / CPU per message``). When the broker's core is near 100% the delivered rate is
    the broker's limit; when this process's core is, the client limited it.
``ingest-file``, ``ingest-redis``
    What :class:`reuse.runtime.dataplane.ingest.Ingest` sustains: the same publisher (increasing
    ``seq``, ``--ingest-seqs`` per source, at most ``--flood-seconds``), the window now counted
    against the ingest's received messages; the ingest runs in this process on core 1 (paho,
    QoS 1) and appends frames every 0.2 s to a FileBus in a temporary folder, or to a RedisBus
    on a redis-server (``start_redis``, pinned to core 0 beside the broker; skipped when
    redis-server is not installed). Printed: messages appended per second from the first send
    to the ingest's stop (its last frame written), the events read back from the bus against
    those sent (lost), and this process's CPU per message (the ingest's threads plus the raw
    publisher's small share) with the rate it gives on a whole core (a lower bound for the
    ingest alone, as the publisher's share is in it).
``publish``
    The publisher's rate: ``reuse publish``'s :class:`~reuse.runtime.dataplane.publish.Publisher`
    in a process of its own at ``--rate`` messages/s per source, every RIoT source, for
    ``--seconds``, with a :class:`~reuse.runtime.dataplane.pacing.SendLog` as its ``on_send``;
    nothing pinned. A paho subscriber here counts what the broker delivered per source, with
    receipt times. Printed: the achieved rate over the run and the lowest and highest
    ``--window``-second window (deviation from the target in %; a window that would end after
    ``--seconds`` is left out), both as sent (per ``seq``, which goes on every source at once)
    and as delivered per source; the late sends (percentiles of start - due, counts over
    1/10/100 ms); lost = acknowledged - delivered.
    Issue 23's target: within 2% for 10 minutes at 1,000 messages/s per source.

Every mode also prints how busy each core was (every process counted), to show when other work
took the pinned cores.

    PYTHONPATH=. .venv/bin/python benchmarks/broker_rate.py --repeat 3 \\
        --json OUT.json                                             # about 32 min, 3 x 10 min
    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/broker_rate.py --seconds 30  # ~1.5 min
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from reuse.core.paths import riotbench_dir
from reuse.runtime import SparkRuntimeError
from reuse.runtime.dataplane import mosquitto
from reuse.runtime.dataplane.bus import Bus, FileBus
from reuse.runtime.dataplane.frames import decode_frame
from reuse.runtime.dataplane.ingest import Ingest
from reuse.runtime.dataplane.mqtt import SUBSCRIPTION, MqttError, bus_topic
from reuse.runtime.dataplane.mqtt_load import flood
from reuse.runtime.dataplane.pacing import SendLog, deviation_pct, window_counts
from reuse.runtime.dataplane.publish import Publisher, Stream, message, workload_streams
from reuse.runtime.spread import Spread, interleave

ROOT = Path(__file__).resolve().parent.parent
MODES = ("broker", "ingest-file", "ingest-redis", "publish")
BROKER_CORE, CLIENT_CORE = 0, 1


# --- processes we start, and stop by PID --------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


def cores_now() -> list[tuple[float, float]]:
    """Per core, (busy, total) CPU seconds so far, every process counted."""
    out = []
    for t in psutil.cpu_times(percpu=True):
        idle = t.idle + getattr(t, "iowait", 0.0)
        total = sum(getattr(t, f) for f in ("user", "nice", "system", "idle", "iowait", "irq",
                                            "softirq", "steal") if hasattr(t, f))
        out.append((total - idle, total))
    return out


def cores_busy(before: list[tuple[float, float]]) -> list[float]:
    """Per core, the share of the time since ``before`` it was busy (every process): shows
    whether other work took the pinned cores."""
    return [(b1 - b0) / (t1 - t0) if t1 > t0 else math.nan
            for (b0, t0), (b1, t1) in zip(before, cores_now(), strict=True)]


def listens(proc: psutil.Process, port: int) -> bool:
    """Whether ``proc`` itself listens on ``port`` (not another broker that took the port
    between our check and our start)."""
    try:
        return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                   for c in proc.net_connections(kind="tcp"))
    except psutil.Error:
        return False


@contextmanager
def broker(pin: int | None) -> Iterator[tuple[str, psutil.Process]]:
    """A mosquitto of our own (``mosquitto.start`` on a free port), pinned to core ``pin``;
    stopped by its PID on the way out. An error raised inside names the broker's last log
    line."""
    d = Path(tempfile.mkdtemp(prefix="broker-rate-"))
    try:
        for _ in range(3):  # a free port can be taken by someone else's broker meanwhile
            port = free_port()
            try:
                info = mosquitto.start(d, port=port)
                proc = psutil.Process(info["pids"]["mosquitto"])
            except (MqttError, psutil.Error):
                continue
            if listens(proc, port):
                break
            if mosquitto.pid(d) is not None:
                mosquitto.stop(d)
        else:
            raise MqttError("three free ports in a row were taken before mosquitto bound them")
        if pin is not None:
            proc.cpu_affinity([pin])
        try:
            yield info["url"], proc
        except (MqttError, OSError) as exc:
            raise MqttError(f"{exc} (mosquitto's last log line: "
                            f"{last_log_line(d / 'mosquitto.log')!r})") from exc
    finally:
        if mosquitto.pid(d) is not None:
            mosquitto.stop(d)
        shutil.rmtree(d, ignore_errors=True)


def last_log_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


@contextmanager
def pinned(cpus: set[int] | None) -> Iterator[None]:
    """This thread (and the threads it starts) on ``cpus`` (``None``: as it is)."""
    if cpus is None:
        yield
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


def can_pin() -> bool:
    return hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2


# --- messages -----------------------------------------------------------------------------------

def riot_messages(streams: Sequence[Stream], seqs: int, data_dir: str, rate: float = 1000.0,
                  ) -> list[tuple[str, bytes]]:
    """``seqs`` events of every stream, in the order ``reuse publish`` sends them (each ``seq``
    on every stream), as ``(topic, payload)``."""
    return [(s.topic, message(s, q, 0, rate, data_dir)) for q in range(seqs) for s in streams]


# --- (1) the broker's limit, and the ingest ---------------------------------------------------

def run_broker(streams: Sequence[Stream], data_dir: str, args: argparse.Namespace,
               ) -> dict[str, Any]:
    msgs = riot_messages(streams, max(1000, args.window // len(streams) + 1), data_dir)
    pin = can_pin()
    with broker(BROKER_CORE if pin else None) as (url, bproc), \
            pinned({CLIENT_CORE} if pin else None):
        c0, k0 = cpu_s(bproc), cores_now()
        r = flood(url, msgs, seconds=args.flood_seconds, window=args.window)
        bcpu, busy = cpu_s(bproc) - c0, cores_busy(k0)
    per = bcpu / r.delivered if r.delivered else math.nan
    return {"mode": "broker", "pinned": pin, "sent": r.sent, "acked": r.acked,
            "delivered": r.delivered, "lost": r.sent - r.delivered, "seconds": r.seconds,
            "rate": r.rate, "broker_cpu_s": bcpu, "broker_us_per_msg": per * 1e6,
            "broker_util": bcpu / r.seconds if r.seconds else math.nan,
            "one_core_rate": 1 / per if per > 0 else math.nan,
            "client_util": r.cpu_s / r.seconds if r.seconds else math.nan, "cores_busy": busy,
            "mean_bytes": sum(len(p) for _, p in msgs) / len(msgs)}


def bus_events(bus: Bus, sources: Sequence[str]) -> dict[str, list[int]]:
    """Per source, the ``seq`` of the events its bus topic holds, in order."""
    out = {}
    for src in sources:
        topic = bus_topic(src)
        seqs: list[int] = []
        for key, data in bus.read(topic, "", bus.latest(topic)):
            for v in decode_frame(data, topic=topic, key=key).values:
                seqs.append(json.loads(v)["seq"])
        out[src] = seqs
    return out


def run_ingest(kind: str, streams: Sequence[Stream], data_dir: str, args: argparse.Namespace,
               ) -> dict[str, Any]:
    from reuse.runtime.dataplane.redis_bus import start_redis

    msgs = riot_messages(streams, args.ingest_seqs, data_dir)
    pin = can_pin()
    work = tempfile.mkdtemp(prefix="broker-rate-bus-")
    redis = None
    try:
        if kind == "redis":
            redis = start_redis(Path(work) / "redis")
            if pin:
                psutil.Process(redis.pid).cpu_affinity([BROKER_CORE])
            bus: Bus = redis.bus()
        else:
            bus = FileBus(Path(work) / "bus")
        with broker(BROKER_CORE if pin else None) as (url, bproc), \
                pinned({CLIENT_CORE} if pin else None):
            ing = Ingest(bus, url).start()
            try:
                def received() -> int:
                    return sum(c.received for c in ing.counts().values())

                c0, k0, t0 = cpu_s(bproc), cores_now(), time.monotonic()
                p0 = time.process_time()
                r = flood(url, msgs, seconds=args.flood_seconds, cycle=False,
                          window=args.window, delivered=received)
            finally:
                counts = ing.stop()
            t1 = time.monotonic()
            pcpu, busy = time.process_time() - p0, cores_busy(k0)
            bcpu = cpu_s(bproc) - c0
        sent_per = {s.name: 0 for s in streams}
        for topic, _ in msgs[:r.sent]:
            sent_per[topic.split("/", 1)[1]] += 1
        del msgs
        held = bus_events(bus, [s.name for s in streams])
        in_order = all(v == list(range(len(v))) for v in held.values())
        appended = sum(c.appended for c in counts.values())
        stored = sum(len(v) for v in held.values())
    finally:
        if redis is not None:
            redis.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {"mode": f"ingest-{kind}", "pinned": pin, "sent": r.sent, "received": r.delivered,
            "appended": appended, "stored": stored, "lost": r.sent - stored,
            "in_order": in_order, "per_source_sent": sent_per,
            "stale": sum(c.stale for c in counts.values()),
            "malformed": sum(c.malformed for c in counts.values()),
            "missed": sum(c.missed for c in counts.values()),
            "seconds": t1 - t0, "rate": appended / (t1 - t0),
            "broker_us_per_msg": bcpu / max(1, r.delivered) * 1e6,
            "broker_util": bcpu / (t1 - t0),
            "process_us_per_msg": pcpu / max(1, appended) * 1e6,
            "one_core_rate": appended / pcpu if pcpu > 0 else math.nan,
            "process_util": pcpu / (t1 - t0), "cores_busy": busy}


# --- (2) the publisher's rate -------------------------------------------------------------------

def publisher_child(spec: dict[str, Any]) -> None:
    """In its own process: publish as ``reuse publish`` does, print one JSON line."""
    streams = [Stream(n, t) for n, t in spec["streams"]]
    log = SendLog(spec["rate"], window_s=spec["window"])
    pub = Publisher(spec["url"], streams, rate=spec["rate"], data_dir=spec["data_dir"],
                    on_send=log)
    c0 = time.process_time()
    pub.connect()
    try:
        pub.run(spec["seconds"])
    finally:
        rep = pub.close()
    st = log.stats(spec["seconds"])
    print(json.dumps({"sent": rep.sent, "elapsed_s": rep.elapsed_s, "achieved": rep.achieved,
                      "max_late_ms": rep.max_late_ms, "unacked": rep.unacked, "m0": log.m0,
                      "pace": st.to_dict(), "cpu_s": time.process_time() - c0}), flush=True)


class Counter:
    """A paho subscriber to ``sensors/#`` (QoS 1) that keeps every message's receipt time
    (``time.monotonic``, the publisher's clock too) per topic."""

    def __init__(self, url: str) -> None:
        import paho.mqtt.client as mqtt

        from reuse.runtime.dataplane.mqtt import parse_broker_url

        b = parse_broker_url(url)
        self.times: dict[str, array[float]] = {}
        self._ready = threading.Event()
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, clean_session=True)

        def on_connect(cl: Any, ud: Any, flags: Any, reason: Any, props: Any) -> None:
            cl.subscribe(SUBSCRIPTION, qos=1)

        def on_subscribe(cl: Any, ud: Any, mid: Any, reasons: Any, props: Any) -> None:
            self._ready.set()

        def on_message(cl: Any, ud: Any, msg: Any) -> None:
            t = self.times.get(msg.topic)
            if t is None:
                t = self.times[msg.topic] = array("d")
            t.append(time.monotonic())

        c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
        c.connect(b.host, b.port, keepalive=30)
        c.loop_start()
        self.client = c
        if not self._ready.wait(10):
            self.stop()
            raise MqttError(f"no subscription to {SUBSCRIPTION} at {url} within 10 s")

    def counts(self) -> dict[str, int]:
        return {t: len(v) for t, v in list(self.times.items())}

    def stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def run_publish(streams: Sequence[Stream], data_dir: str, args: argparse.Namespace,
                ) -> dict[str, Any]:
    with broker(None) as (url, bproc):
        sub = Counter(url)
        proc = None
        try:
            spec = {"url": url, "streams": [(s.name, s.type) for s in streams],
                    "rate": args.rate, "seconds": args.seconds, "window": args.window,
                    "data_dir": data_dir}
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
            c0, k0 = cpu_s(bproc), cores_now()
            proc = subprocess.Popen([sys.executable, __file__, "--publisher-child",
                                     json.dumps(spec)], stdout=subprocess.PIPE, env=env,
                                    text=True)
            out, _ = proc.communicate(timeout=args.seconds * 1.5 + 120)
            if proc.returncode != 0:
                raise MqttError(f"the publisher process failed (exit {proc.returncode})")
            got = json.loads(out.strip().splitlines()[-1])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(
                    sub.counts().get(t, 0) < n for t, n in got["sent"].items()):
                time.sleep(0.05)
            bcpu, busy = cpu_s(bproc) - c0, cores_busy(k0)
        finally:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
            sub.stop()
    pace, m0, w = got["pace"], got["m0"], args.window
    full = len(pace["windows"])
    delivered = {}
    for topic, n in got["sent"].items():
        times = sub.times.get(topic, array("d"))
        rates = [c / w for c in window_counts([t - m0 for t in times], w, full)]
        devs = [deviation_pct(r, args.rate) for r in rates]
        span = times[-1] - times[0] if len(times) > 1 else 0.0
        delivered[topic] = {
            "acked": n, "delivered": len(times), "lost": n - len(times),
            "rate": (len(times) - 1) / span if span > 0 else 0.0,
            "window_min_pct": min(devs, default=math.nan),
            "window_max_pct": max(devs, default=math.nan)}
    return {"mode": "publish", "rate_target": args.rate, "seconds": args.seconds,
            "sent": got["sent"], "unacked": got["unacked"], "achieved": got["achieved"],
            "max_late_ms": got["max_late_ms"], "pace": pace, "delivered": delivered,
            "publisher_cores": got["cpu_s"] / max(1e-9, got["elapsed_s"]),
            "broker_cores": bcpu / max(1e-9, got["elapsed_s"]), "cores_busy": busy}


# --- printing -----------------------------------------------------------------------------------

def busy(r: dict[str, Any]) -> str:
    return "/".join(f"{b:.0%}" for b in r["cores_busy"])


def line(r: dict[str, Any]) -> str:
    m = r["mode"]
    if m == "broker":
        return (f"broker: {r['rate']:,.0f} msg/s delivered ({r['delivered']:,} of "
                f"{r['sent']:,} sent, lost {r['lost']}) in {r['seconds']:.1f} s; broker CPU "
                f"{r['broker_us_per_msg']:.1f} us/msg, its core {r['broker_util']:.0%} busy "
                f"-> {r['one_core_rate']:,.0f} msg/s on a whole core; client core "
                f"{r['client_util']:.0%} busy" + ("" if r["pinned"] else " (not pinned)")
                + f"; cores busy (all processes) {busy(r)}")
    if m.startswith("ingest"):
        return (f"{m}: {r['rate']:,.0f} msg/s appended ({r['appended']:,} of {r['sent']:,} "
                f"sent; read back {r['stored']:,}, lost {r['lost']}, in order "
                f"{'yes' if r['in_order'] else 'NO'}; stale {r['stale']}, malformed "
                f"{r['malformed']}) in {r['seconds']:.1f} s; this process "
                f"{r['process_us_per_msg']:.1f} us/msg ({r['process_util']:.0%} of its core) "
                f"-> {r['one_core_rate']:,.0f} msg/s on a whole core, "
                f"broker {r['broker_us_per_msg']:.1f} us/msg ({r['broker_util']:.0%}); cores "
                f"busy (all processes) {busy(r)}")
    p = r["pace"]
    lm, lo = p["late_ms"], p["late_over"]
    per = "; ".join(f"{t.split('/')[-1]} {d['rate']:,.1f}/s, windows "
                    f"{d['window_min_pct']:+.2f}% to {d['window_max_pct']:+.2f}%, lost "
                    f"{d['lost']}" for t, d in r["delivered"].items())
    return (f"publish: {p['achieved']:,.2f} msg/s per source sent (target "
            f"{r['rate_target']:g}, {p['deviation_pct']:+.3f}%); {len(p['windows'])} windows "
            f"of {p['window_s']:g} s: {p['window_min_pct']:+.2f}% to "
            f"{p['window_max_pct']:+.2f}%; late p50 {lm['p50']:.3f} p99 {lm['p99']:.3f} "
            f"p99.9 {lm['p99.9']:.3f} max {lm['max']:.1f} ms, "
            + ", ".join(f"{k} {v}" for k, v in lo.items()) + f" of {p['seqs']:,} seq"
            + f"\n    delivered per source: {per}"
            + f"\n    publisher {r['publisher_cores']:.2f} cores, broker "
            f"{r['broker_cores']:.2f}, cores busy (all processes) {busy(r)}; within 2%: "
            f"{'yes' if p['within_2pct'] else 'NO'}")


#: Per mode, the figures summarised over repetitions: (key, label, format).
SUMMARY: dict[str, list[tuple[Callable[[dict[str, Any]], float], str, str]]] = {
    "broker": [(lambda r: r["rate"], "delivered msg/s", ",.0f"),
               (lambda r: r["broker_us_per_msg"], "broker us/msg", ".2f"),
               (lambda r: r["broker_util"] * 100, "broker core busy %", ".0f"),
               (lambda r: r["one_core_rate"], "msg/s on a whole core", ",.0f")],
    "ingest-file": [(lambda r: r["rate"], "appended msg/s", ",.0f"),
                    (lambda r: r["process_us_per_msg"], "process us/msg", ".1f"),
                    (lambda r: r["one_core_rate"], "msg/s on a whole core", ",.0f")],
    "ingest-redis": [(lambda r: r["rate"], "appended msg/s", ",.0f"),
                     (lambda r: r["process_us_per_msg"], "process us/msg", ".1f"),
                     (lambda r: r["one_core_rate"], "msg/s on a whole core", ",.0f")],
    "publish": [(lambda r: r["pace"]["deviation_pct"], "run deviation %", "+.3f"),
                (lambda r: r["pace"]["window_min_pct"], "lowest window %", "+.2f"),
                (lambda r: r["pace"]["window_max_pct"], "highest window %", "+.2f"),
                (lambda r: min(d["window_min_pct"] for d in r["delivered"].values()),
                 "lowest delivered window %", "+.2f"),
                (lambda r: max(d["window_max_pct"] for d in r["delivered"].values()),
                 "highest delivered window %", "+.2f"),
                (lambda r: r["pace"]["late_ms"]["p99"], "late p99 ms", ".3f"),
                (lambda r: r["pace"]["late_ms"]["max"], "late max ms", ".1f")],
}


def summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float | int]]]:
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    print("== median [min, max] over the runs of each mode")
    for mode, figures in SUMMARY.items():
        mine = [r for r in runs if r["mode"] == mode]
        if not mine:
            continue
        out[mode] = {}
        parts = []
        for get, label, fmt in figures:
            s = Spread.of(get(r) for r in mine)
            out[mode][label] = s.to_dict()
            parts.append(f"{label} {s.median:{fmt}} [{s.lo:{fmt}}, {s.hi:{fmt}}]")
        print(f"{mode} ({len(mine)} runs): " + "; ".join(parts), flush=True)
    return out


def machine() -> dict[str, Any]:
    try:
        exe = mosquitto.mosquitto_exe()
        ver = subprocess.run([exe, "-h"], capture_output=True, text=True).stdout.splitlines()[0]
    except (MqttError, IndexError, OSError):
        ver = "mosquitto: not found"
    model = ""
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                model = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "mosquitto": ver, "redis": shutil.which("redis-server") is not None,
            "load_avg_1m": os.getloadavg()[0]}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--publisher-child":
        publisher_child(json.loads(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600.0,
                    help="how long the publisher runs (issue 23's target: 600)")
    ap.add_argument("--rate", type=float, default=1000.0, help="messages/s per source")
    ap.add_argument("--window", type=float, default=10.0, help="seconds per rate window")
    ap.add_argument("--flood-seconds", type=float, default=10.0,
                    help="how long each broker and ingest flood runs (at most)")
    ap.add_argument("--ingest-seqs", type=int, default=40_000,
                    help="events per source for each ingest flood (built before it starts)")
    ap.add_argument("--in-flight", dest="in_flight", type=int, default=1000,
                    help="messages at most between sent and delivered in a flood")
    ap.add_argument("--parts", default=",".join(MODES),
                    help=f"modes to run, comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved runs of every mode")
    ap.add_argument("--workload", default="riot")
    ap.add_argument("--data", default=None, help="RIoTBench data folder")
    ap.add_argument("--json", default=None, help="write every run and the spreads here")
    args = ap.parse_args()
    modes = [m for m in args.parts.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"unknown mode {unknown[0]} (of {', '.join(MODES)})")
    info = machine()
    if "ingest-redis" in modes and not info["redis"]:
        print("ingest-redis: skipped (redis-server is not installed)")
        modes.remove("ingest-redis")
    mosquitto.mosquitto_exe()  # a one-line error when it is missing
    data_dir = str(riotbench_dir(args.data))
    streams = workload_streams(args.workload)
    # the flood's window is --in-flight; the pacing window is --window
    flood_args = argparse.Namespace(**{**vars(args), "window": args.in_flight})
    sample = riot_messages(streams, 1000, data_dir)
    mean_bytes = sum(len(m) for _, m in sample) / len(sample)
    print(f"{info['mosquitto']}; {info['cpus']} cores ({info['cpu']}), Python "
          f"{info['python']}, load {info['load_avg_1m']:.2f}; sources "
          f"{', '.join(s.name for s in streams)} ({mean_bytes:,.0f} bytes a message on "
          f"average); {args.repeat} run(s) per mode, interleaved",
          flush=True)
    runs: list[dict[str, Any]] = []
    order = interleave(modes, args.repeat)
    failed: list[dict[str, Any]] = []
    for i, (rep, mode) in enumerate(order, 1):
        load = os.getloadavg()[0]
        try:
            if mode == "broker":
                r = run_broker(streams, data_dir, flood_args)
            elif mode.startswith("ingest-"):
                r = run_ingest(mode.split("-", 1)[1], streams, data_dir, flood_args)
            else:
                r = run_publish(streams, data_dir, args)
        except (SparkRuntimeError, OSError) as exc:  # MqttError is one; the others still run
            failed.append({"mode": mode, "repetition": rep, "error": f"{exc}"})
            print(f"[{i}/{len(order)}] (load {load:.2f}) {mode}: FAILED: "
                  f"{type(exc).__name__}: {exc}", flush=True)
            continue
        r["repetition"], r["load_avg_1m"] = rep, load
        runs.append(r)
        print(f"[{i}/{len(order)}] (load {load:.2f}) {line(r)}", flush=True)
    spreads = summary(runs)
    if failed:
        print(f"{len(failed)} run(s) failed and are left out: "
              + ", ".join(f"{f['mode']} (repetition {f['repetition']})" for f in failed))
    if "publish" in modes and args.seconds < 600:
        print(f"(the publisher ran {args.seconds:g} s; issue 23's target is 10 minutes)")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"machine": info, "args": vars(args), "runs": runs, "failed": failed,
             "spread": spreads}, indent=1,
            default=str))


if __name__ == "__main__":
    main()
