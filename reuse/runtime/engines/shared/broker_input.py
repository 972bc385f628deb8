"""The shared query fed by an MQTT broker (``source="mqtt://host:port"``): the driver's side.

:class:`BrokerInput` owns what a broker-fed run adds to the engine, so the engine itself only
asks it four things: the largest ``seq`` arrived (the engine's clock, :meth:`bound`), where the
shards read (:attr:`spec`, a bus spec), whether the input has stalled (:meth:`check`), and
the recorded events for the reference execution (:meth:`record`).

- **The bus.** A Redis of its own, started in ``<root>/redis`` (stopped by :meth:`close`), or the
  one at ``bus_url``. Redis and not the file bus: the shards read it from the executors, which
  then need the network, not the driver's disk.
- **The ingest.** An :class:`~reuse.runtime.dataplane.ingest.Ingest` subscribed to ``sensors/#``
  appends each source's messages to ``src:<source>``; malformed and stale messages are counted
  per topic (:meth:`counts`), never appended.
- **The ready mark.** A thread writes, every ``tick_s``, the first ``seq`` no batch may claim
  yet (:func:`~reuse.runtime.dataplane.broker_feed.ready_seq` over the sources the deployment
  reads) to a file the tick source reads (``ready_file``): a batch claims a range only once
  all its events are on the bus. The mark never goes back.
- **Paced by arrival (issue 36).** A batch claims everything the mark allows, with no bound
  by default (the engine's ``max_events`` is 0 on a broker-fed run): the publishers' rate,
  whatever it is and however it changes, is the engine's, and ``--rate`` is not needed. When
  batches take longer than the trigger, the next one simply claims more; the backlog and the
  latency show it (measured from each event's own ``ts``). :meth:`arrival_rate` is the rate
  the stream actually has.
- **Stalls are errors, not silence.** No message at all within ``first_message_s`` of the
  start, or a source the deployment reads that has had nothing new for ``stall_s`` while the
  ready mark waits for it, is a one-line :class:`~reuse.runtime.dataplane.mqtt.MqttError`
  naming the topic (:meth:`check`, called by the engine's ``poll``). A slow engine is
  neither. Every source going silent is not an error either: the publishers may simply have
  finished, and the engine then works off what arrived (a run's steps show no new events).

Re-running a batch needs nothing from here: its events are read from the bus by ``seq`` from
the cursor saved with the states (:mod:`reuse.runtime.dataplane.broker_feed`). The bus is not
trimmed during a run (the reference execution needs the recorded events; a 10-minute run at
100 events/s per source holds a few MB per source).

**A driver's death loses nothing (issue 32: a broker-fed ``--resume``).** The ingest holds a
persistent MQTT session (QoS 1, ``clean_session=False``, a client id fixed by the run
directory) and acknowledges a message only once it is on the bus; the Redis of our own writes
every change to an append-only file in ``<root>/redis`` before answering. So when the driver
dies, what it had received is on disk, what it had not yet written is unacknowledged, and what
the publishers send meanwhile waits in the broker's session. A resumed input
(``resume=True``) restarts Redis on its file, takes the session over (what the broker
delivers again is below the bus's last ``seq`` of its source and counted stale, never appended
twice), and numbers its frames after its predecessor's (``ingest.json``). Outputs published on
``out/...`` are at least once across a death: the egress cursor is saved once everything
published before it was acknowledged. What the broker itself holds dies with it
(``reuse broker start`` keeps nothing on disk), but its keeper starts it again, the ingest
resubscribes, and the publisher sends its last seconds again
(:mod:`~reuse.runtime.dataplane.publish`), so the bus still gets every ``seq`` once (issue 34).
Outputs on ``out/...`` published while the broker is down are resent to it, but a consumer
gets them only if subscribed again by then: MQTT keeps nothing for a consumer across a
broker's death without persistence.

**The Redis of our own is restarted when it dies (issue 34).** A
:class:`~reuse.runtime.dataplane.keeper.Keeper` starts it again from its append-only file on
the same port; every bus client (the ingest, the ready mark, the egress, and the shards on the
executors through the bus spec) retries a refused call for :data:`PATIENCE_S`, so the run goes
on without a failed batch. The restarts are in the ledger (``source.restarts``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reuse.runtime.common.files import read_json, write_json
from reuse.runtime.common.ledger import LedgerSource
from reuse.runtime.common.pacing import paced_mark
from reuse.runtime.common.run_secrets import run_secret
from reuse.runtime.dataplane.broker_feed import (
    RECORDED,
    dump_recorded,
    end_offset,
    last_seq,
    ready_seq,
)
from reuse.runtime.dataplane.bus import Bus, RedisBus
from reuse.runtime.dataplane.frames import decode_frame
from reuse.runtime.dataplane.ingest import Ingest, TopicCounts
from reuse.runtime.dataplane.keeper import Keeper
from reuse.runtime.dataplane.mqtt import (
    SUBSCRIPTION,
    BrokerUrl,
    MqttError,
    connect_error,
    keep_output,
    output_bus_topic,
    output_topic,
    parse_broker_url,
    topic_of,
)

#: ``(dataflow, sink, J, R)``: a dataflow a running sink task computes a sink of, and its window
Output = tuple[str, str, int, "int | None"]


def _acked(info: Any) -> bool:
    """A publish the broker acknowledged, or one paho refused (its error is not ours to wait
    for: the records stay in the bus)."""
    try:
        return bool(info.is_published())
    except (ValueError, RuntimeError):
        return True


def _connect(url: BrokerUrl) -> Any:
    """A paho client connected to the broker, its network loop running (publishes outputs)."""
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, clean_session=True)
    client.max_inflight_messages_set(1000)
    client.reconnect_delay_set(1, 2)  # a restarted broker is found again within 2 s
    url.authenticate(client)
    try:
        client.connect(url.host, url.port, keepalive=30)
    except OSError as exc:
        raise connect_error(url, exc) from None
    client.loop_start()
    return client

__all__ = ["BrokerInput", "READY"]


def _client_id(root: Path) -> str:
    """The ingest's MQTT client id: fixed by the run directory, so a resumed run's ingest
    takes over its predecessor's session (and two runs never share one)."""
    import hashlib

    return "reuse-ingest-" + hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]

#: The ready mark's file name, under the shared query's checkpoint folder.
READY = "ready"

#: Seconds over which :meth:`BrokerInput.arrival_rate` measures the stream's rate.
RATE_S = 10.0

#: Seconds a bus call waits for the Redis to answer again (it is restarted when it dies, in
#: well under a second; a server that stays down fails the call after this).
PATIENCE_S = 20.0


class BrokerInput:
    """Ingest a broker's sensor topics into a bus and tell the shared query what is claimable.

    Parameters
    ----------
    root
        The run directory (the Redis of its own, the ready mark, the recorded events).
    broker
        ``mqtt://host:port``.
    needed
        Called (from the mark's thread) for source -> the first ``seq`` the deployment reads it
        from; the engine answers under its lock.
    bus_url
        A Redis to use (``redis://host:port``) instead of starting one.
    tick_s, first_message_s, stall_s
        How often the ready mark is written; how long to wait for the first message; how long
        a needed source may bring nothing new while others do.
    budget_s, trigger_s
        A latency budget (``--latency-budget``; ``None``: none) and the query's trigger: the
        mark is handed over once it makes a batch of
        :data:`~reuse.runtime.common.pacing.PACED_BATCH` ``seq`` or what waits would go past
        the budget at the next trigger (:func:`~reuse.runtime.common.pacing.paced_mark`), so
        a slow stream makes few batches, as a paced replay does.
    """

    def __init__(self, root: str | os.PathLike[str], broker: str, *,
                 needed: Callable[[], Mapping[str, int]],
                 outputs: Callable[[], Mapping[str, Sequence[Output]]] | None = None,
                 bus_url: str | None = None,
                 tick_s: float = 0.1, first_message_s: float = 30.0, stall_s: float = 30.0,
                 resume: bool = False, budget_s: float | None = None,
                 trigger_s: float = 1.0) -> None:
        self.root = Path(root)
        self.url = parse_broker_url(broker)
        self.needed = needed
        self.outputs = outputs or dict
        self._egress_file = self.root / "ckpt" / "shared" / "egress.json"
        self._out_cursor: dict[str, str] = (read_json(self._egress_file) or {}) if resume else {}
        self._out_client: Any = None
        self._out_sent: list[Any] = []  # publishes not yet acknowledged
        self.published: dict[str, int] = {}  # MQTT output topic -> outputs published
        self.tick_s, self.first_message_s, self.stall_s = tick_s, first_message_s, stall_s
        self.budget_s, self.trigger_s = budget_s, trigger_s
        self._waiting_since: float | None = None  # what the mark holds back, since when
        self.ready_file = self.root / "ckpt" / "shared" / READY
        self.ready_file.parent.mkdir(parents=True, exist_ok=True)
        self._mark_lock = threading.Lock()  # self.ready and its file
        self._redis: Any = None
        self.keeper = Keeper({})
        if bus_url is None:
            from reuse.runtime.dataplane.redis_bus import start_redis

            # its own password (issue 34: a client without the run's secret is refused)
            self._redis = start_redis(self.root / "redis", durable=True,
                                      password=run_secret(self.root, "redis"))
            self.bus: Bus = self._redis.bus(patience_s=PATIENCE_S)
            # restarted from its file when it dies (issue 34); the clients wait for it
            self.keeper = Keeper({"redis": self._redis},
                                 log=self.root / "redis" / "restarts.jsonl").start()
        else:
            self.bus = RedisBus(bus_url, patience_s=PATIENCE_S)
        self.ingest = Ingest(self.bus, self.url, flush_s=tick_s, launch=self._launch(resume),
                             client_id=_client_id(self.root), persistent=True,
                             floor=(lambda s: last_seq(self.bus, s)) if resume else None)
        self.ready = -1
        self._advanced: dict[str, tuple[int, float]] = {}  # source -> (last seq, when it grew)
        self._arrivals: list[tuple[float, int]] = []  # (when, bound) over the last RATE_S
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._started = time.time()
        try:
            self.ingest.start()
            self._out_client = _connect(self.url)
        except BaseException:
            if self.ingest._client is not None:
                self.ingest.stop()
            self._stop_redis()
            raise

    @property
    def spec(self) -> dict[str, str]:
        """Where the shards read the source events (a bus spec, ``make_bus`` rebuilds it)."""
        return self.bus.spec()

    @property
    def pids(self) -> list[int]:
        """The processes of our own (the Redis), for the CPU meter."""
        return [self._redis.pid] if self._redis is not None else []

    def bound(self) -> int:
        """The largest ``seq`` received on any topic (``-1``: none): no batch can have seen a
        larger one, so a cut above it is safe (the engine's clock on a broker-fed run)."""
        got = [c.last_seq for c in self.ingest.counts().values()]
        return max(got, default=-1)

    def counts(self) -> dict[str, TopicCounts]:
        """Per MQTT topic: received, appended, malformed, stale, missed."""
        return self.ingest.counts()

    def keep(self, records: Mapping[str, list[str]], key: str, hw: int) -> None:
        """Append each sink's record lines of a batch to its bus topic under the batch's key,
        for :meth:`egress` to publish (a split batch's, gathered by the driver; an unsplit
        shard appends its own). A re-run batch's append is dropped: the bus is idempotent per
        key."""
        for task, lines in records.items():
            if lines:
                keep_output(self.bus, task, key, hw, lines)

    def wait_first(self) -> int:
        """Wait for the first message; returns :meth:`bound`.

        Raises
        ------
        MqttError
            Nothing arrived within ``first_message_s``.
        """
        deadline = time.time() + self.first_message_s
        while self.bound() < 0:
            if time.time() > deadline:
                raise MqttError(f"no message on {SUBSCRIPTION} from the broker at {self.url} "
                                f"within {self.first_message_s:g} s: is a publisher running "
                                f"(reuse publish --workload riot --broker {self.url})?")
            time.sleep(0.05)
        return self.bound()

    @property
    def open(self) -> bool:
        """Not closed yet (the bus can be read)."""
        return not self._stop.is_set()

    def start(self, start_seq: int) -> None:
        """Write the first ready mark (``start_seq``; a restart never moves it back) and keep
        it up to date."""
        with self._mark_lock:
            self.ready = max(self.ready, start_seq)
            self._write(self.ready)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="broker-ready", daemon=True)
            self._thread.start()

    def _write(self, seq: int) -> None:
        """Replace the mark's file (lock held: a restarted query's :meth:`start`, on the
        engine's thread, and :meth:`update`, on this input's, both write it; with one temporary
        file between them, one's rename once found the other's already gone: "No such file or
        directory: ready.tmp -> ready", a loaded suite, 2026-11-28)."""
        tmp = self.ready_file.with_name(READY + ".tmp")
        tmp.write_text(str(seq), encoding="utf-8")
        os.replace(tmp, self.ready_file)

    def arrival_rate(self) -> float:
        """The ``seq`` arrived per second over the last :data:`RATE_S` seconds (0: not known
        yet): the stream's own rate, which a broker-fed run paces by (no ``--rate`` to guess)."""
        got = list(self._arrivals)
        if len(got) < 2 or got[-1][0] <= got[0][0]:
            return 0.0
        return max(0.0, (got[-1][1] - got[0][1]) / (got[-1][0] - got[0][0]))

    def update(self) -> int:
        """Compute and write the ready mark once; returns it."""
        # what is on the bus is read BEFORE what is needed: a submit after the read has its
        # cut above everything received by then (the engine's clock, :meth:`bound`), so the
        # mark, at most one past what was read, cannot pass the new task's cut
        seen = {t.split("/", 1)[1] for t in self.ingest.counts()}
        needed = dict(self.needed())
        # a needed source the ingest has not heard from yet may be on the bus already (an
        # earlier ingest of a resumed run appended it)
        arrived = {s: last_seq(self.bus, s) for s in seen | set(needed)}
        now = time.time()
        self._arrivals.append((now, max(arrived.values(), default=-1)))
        while self._arrivals and self._arrivals[0][0] < now - RATE_S:
            self._arrivals.pop(0)
        for s, q in arrived.items():
            if s not in self._advanced or q > self._advanced[s][0]:
                self._advanced[s] = (q, now)
        floor = max(arrived.values(), default=-1) + 1 if not needed else self.ready
        with self._mark_lock:
            mark = max(self.ready, ready_seq(needed, arrived, floor=floor))
            if self.budget_s is not None:
                mark, self._waiting_since = paced_mark(
                    self.ready, mark, self._waiting_since, now, budget_s=self.budget_s,
                    trigger_s=self.trigger_s)
            if mark != self.ready:
                self.ready = mark
                self._write(mark)
        return mark

    def egress(self) -> int:
        """Publish the sink records appended since the last call on ``out/<dataflow>/<sink>``:
        one message per sink task, batch and dataflow, holding the batch's records of that
        dataflow's window ``[J, R)`` as JSON lines (QoS 1). A message per record would be tens
        of thousands of messages a second at the RIoT SEQ peak (21 sinks, several outputs per
        event); a batch's worth is what a consumer reads at once anyway. Returns the records
        published."""
        sent = 0
        for task, users in self.outputs().items():
            topic = output_bus_topic(task)
            for key, frame in self.bus.read(topic, self._out_cursor.get(task, ""),
                                            end_offset(self.bus)):
                got = decode_frame(frame, topic=topic, key=key)
                lines = [str(x) for x in got.values]
                if not lines:
                    self._out_cursor[task] = key
                    continue
                first = int(json.loads(lines[0])["q"])  # a batch's records are in seq order
                seqs: list[int] | None = None
                for dag, sink, j, r in users:
                    if j <= first and (r is None or got.hw < r):
                        mine = lines  # the whole batch is in the window: nothing to parse
                    else:
                        if seqs is None:
                            seqs = [int(json.loads(line)["q"]) for line in lines]
                        mine = [x for x, q in zip(lines, seqs, strict=True)
                                if j <= q and (r is None or q < r)]
                    if not mine:
                        continue
                    out = output_topic(dag, sink)
                    self._out_sent.append(
                        self._out_client.publish(out, "\n".join(mine), qos=1))
                    self.published[out] = self.published.get(out, 0) + len(mine)
                    sent += len(mine)
                self._out_cursor[task] = key
        self._out_sent = [m for m in self._out_sent if not _acked(m)]
        if sent and not self._out_sent:  # all acknowledged: a resume starts after these
            write_json(self._egress_file, self._out_cursor)
        return sent

    def _launch(self, resume: bool) -> int:
        """This ingest's frame-key prefix: one more than the last ingest's of this run (a
        resumed run's frames sort after its predecessor's), kept in ``ingest.json``."""
        path = self.root / "ckpt" / "shared" / "ingest.json"
        last = read_json(path) if resume else None
        launch = int(last["launch"]) + 1 if last else 1
        write_json(path, {"launch": launch})
        return launch

    def _loop(self) -> None:
        while not self._stop.wait(self.tick_s):
            try:
                self.update()
                self.egress()
            except BaseException as exc:  # noqa: BLE001 - reported by check()
                self._failure = exc
                return

    def check(self) -> None:
        """Raise the one-line error of a stalled input (see the module docstring)."""
        if self._failure is not None:
            raise MqttError(f"the broker input failed: {self._failure}")
        now = time.time()
        ahead = self.bound() + 1 > self.ready  # other topics have what this one lacks
        waiting = []
        for s, j in sorted(self.needed().items()):
            last, since = self._advanced.get(s, (-1, self._started))
            if ahead and max(j, last + 1) == self.ready and now - since > self.stall_s:
                waiting.append(s)
        if waiting:
            s = waiting[0]
            last = self._advanced.get(s, (-1, 0.0))[0]
            seen = "none yet" if last < 0 else f"seq {last}"
            raise MqttError(f"no new message on {topic_of(s)} for {self.stall_s:g} s (last: "
                            f"{seen}) while other topics reached seq {self.bound()}: a "
                            f"dataflow reads source {s}; is it being published?")


    def record(self, upto: int) -> Path:
        """Write the events the bus holds below ``upto`` to ``<root>/recorded`` (the reference
        execution's input, :func:`~reuse.runtime.dataplane.broker_feed.load_recorded`)."""
        folder = self.root / RECORDED
        sources = {t.split("/", 1)[1] for t in self.ingest.counts()}
        dump_recorded(self.bus, sources, folder, upto)
        return folder

    def ledger_source(self, upto: int) -> LedgerSource:
        """The ledger's ``source``: the broker, the counts per topic, the outputs published,
        the servers restarted, and the events received below ``upto`` (written now, while
        the bus is open; after, what the run recorded last)."""
        source: LedgerSource = {"kind": "mqtt", "broker": str(self.url),
                                "counts": {t: c.to_dict() for t, c in self.counts().items()},
                                "published": dict(self.published), "restarts": self.restarts()}
        if self.open:
            source["recorded"] = str(self.record(upto))
        elif (self.root / RECORDED).is_dir():
            source["recorded"] = str(self.root / RECORDED)
        return source

    def close(self) -> dict[str, TopicCounts]:
        """Stop the mark, the ingest and the Redis of our own; the final counts."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            if self._out_client is not None:
                self.egress()  # what the last batches wrote
                deadline = time.time() + 10
                while any(not _acked(m) for m in self._out_sent) and \
                        time.time() < deadline:
                    time.sleep(0.02)
                self._out_client.disconnect()
                self._out_client.loop_stop()
                self._out_client = None
            return self.ingest.stop()
        finally:
            self._stop_redis()

    def restarts(self) -> list[dict[str, Any]]:
        """The run's own servers found dead and started again (:class:`Keeper` events)."""
        return self.keeper.record()

    def _stop_redis(self) -> None:
        self.keeper.stop()  # before the stop, which it would take for a death
        if self._redis is not None:
            self._redis.stop()
            self._redis = None
