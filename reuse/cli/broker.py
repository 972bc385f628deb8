"""``reuse broker`` and ``reuse publish``: a local Mosquitto, and the RIoTBench replay into it.

``broker`` is :mod:`reuse.runtime.dataplane.mosquitto` (JSON out, as ``reuse cluster``);
``publish`` is :class:`reuse.runtime.dataplane.publish.Publisher` (one summary line out).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from reuse.core.errors import ReuseError

__all__ = ["add_parsers"]


def cmd_broker(args: argparse.Namespace) -> int:
    from reuse.runtime.dataplane import mosquitto

    if args.action == "start":
        res = mosquitto.start(args.dir, port=args.port, listen=args.listen)
    elif args.action == "stop":
        res = mosquitto.stop(args.dir)
    else:
        res = mosquitto.status(args.dir)
    print(json.dumps(res, indent=1))
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from reuse.runtime.dataplane.mqtt import MqttError, parse_broker_url
    from reuse.runtime.dataplane.publish import (
        Publisher,
        parse_schedule,
        select_streams,
        workload_streams,
    )

    broker = parse_broker_url(args.broker)
    names = None if args.sources is None else [n.strip() for n in args.sources.split(",")]
    streams = select_streams(workload_streams(args.workload), names)
    if args.seconds is not None and args.seconds < 0:
        raise ReuseError(f"--seconds must be >= 0, got {args.seconds:g}")
    if not args.linger >= 0:
        raise ReuseError(f"--linger must be >= 0, got {args.linger:g}")
    schedule = None if args.schedule is None else parse_schedule(args.schedule)
    if schedule is not None and args.seconds is not None:
        raise ReuseError("--schedule and --seconds exclude each other (a schedule says how "
                         "long each rate lasts)")
    pub = Publisher(broker, streams, rate=schedule[0][0] if schedule else args.rate,
                    data_dir=args.data_dir or "", start=args.start_seq).connect()
    interrupted = False
    try:
        if schedule is None:
            pub.run(args.seconds)
        for rate, seconds in schedule or ():
            pub.run(seconds, rate=rate)
    except KeyboardInterrupt:
        interrupted = True
    try:
        # after the last send, fill the holes an ingest asks for (not after a Ctrl-C)
        report = pub.close(linger_s=0.0 if interrupted else args.linger)
    except KeyboardInterrupt:  # a Ctrl-C while lingering: stop answering, disconnect
        interrupted = True
        pub.halt()
        report = pub.close()
    print(report.summary() + ("; interrupted" if interrupted else ""))
    if report.unacked:
        raise MqttError(f"the broker at {broker} acknowledged {sum(report.sent.values())} of "
                        f"{sum(report.sent.values()) + report.unacked} messages (did it stop?)")
    return 130 if interrupted else 0


def add_parsers(subparsers: Any) -> None:
    """Add ``broker`` and ``publish`` to an ``argparse`` subparsers object (sets ``func``)."""
    from reuse.runtime.dataplane.mosquitto import DEFAULT_DIR
    from reuse.runtime.dataplane.mqtt import DEFAULT_PORT
    from reuse.workloads.registry import WORKLOADS

    b = subparsers.add_parser("broker", help="a Mosquitto MQTT broker (on 127.0.0.1 unless --listen)")
    b.add_argument("action", choices=["start", "stop", "status"])
    b.add_argument("--dir", default=str(DEFAULT_DIR),
                   help="folder of its config, log and PID (default: %(default)s)")
    b.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help="start: the port to listen on (default: %(default)s)")
    b.add_argument("--listen", default="127.0.0.1", metavar="ADDRESS",
                   help="start: the address to listen on (default: %(default)s, this machine "
                        "only). Any other (0.0.0.0: every interface) refuses anonymous "
                        "clients: user 'reuse', its password in DIR/secrets/mqtt "
                        "(mqtt://reuse:PASSWORD@host:port)")
    b.set_defaults(func=cmd_broker)

    p = subparsers.add_parser(
        "publish", help="replay a workload's source streams as MQTT messages on sensors/<source>",
        description="Each message is the engine's generated event for its seq (the SenML line "
        "in 'payload'), sent at a fixed rate per source on a monotonic schedule, QoS 1.")
    p.add_argument("--workload", required=True,
                   help=f"whose source streams to replay: {', '.join(sorted(WORKLOADS))} "
                   "(the paper's: riot)")
    p.add_argument("--rate", type=float, default=10.0,
                   help="messages/s per source (default: the paper's %(default)g)")
    p.add_argument("--seconds", type=float, default=None,
                   help="publish rate x seconds messages per source (default: until Ctrl-C)")
    p.add_argument("--schedule", default=None, metavar="RATE:SECONDS,...",
                   help="rates that change: e.g. 10:60,200:60,10:60 publishes 60 s at 10/s, "
                        "then 60 s at 200/s, then 60 s at 10/s per source (instead of --rate "
                        "and --seconds); events are stamped with their own send times")
    p.add_argument("--broker", default=f"mqtt://127.0.0.1:{DEFAULT_PORT}",
                   help="mqtt://host:port (default: %(default)s)")
    p.add_argument("--sources", default=None,
                   help="comma-separated source names (default: all of the workload's)")
    p.add_argument("--start-seq", type=int, default=0, metavar="SEQ",
                   help="the first seq (to continue a replay; default 0)")
    p.add_argument("--data-dir", default=None, help="RIoTBench data folder")
    p.add_argument("--linger", type=float, default=2.0, metavar="SECONDS",
                   help="after the last message, keep answering an ingest's requests for "
                        "missed seq (reuse/resend/<source>) until none has come for SECONDS "
                        "(default: %(default)g; 0: disconnect at once; Ctrl-C stops it)")
    p.set_defaults(func=cmd_publish)
