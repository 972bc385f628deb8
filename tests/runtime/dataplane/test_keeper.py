"""A broker-fed run's own Redis killed by PID (``kill -9``) is started again by the keeper, and
the ingest in front of it loses nothing (issue 34, item 1: Redis restarts when it dies)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from reuse.runtime.dataplane.broker_feed import dump_recorded, load_recorded
from reuse.runtime.dataplane.frames import decode_frame, encode_frame
from reuse.runtime.dataplane.ingest import Ingest
from reuse.runtime.dataplane.keeper import Keeper
from reuse.runtime.dataplane.publish import Publisher, PublishReport, Stream
from reuse.testing import missing

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


@pytest.fixture
def redis_exe() -> None:
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)  # reaped by the keeper (its Popen's poll)


def test_a_killed_redis_is_restarted_from_its_file_and_patient_writers_lose_nothing(
        tmp_path: Path, redis_exe: None) -> None:
    from reuse.runtime.dataplane.redis_bus import start_redis

    broker = start_redis(tmp_path / "redis", durable=True, password="pw")
    keeper = Keeper({"redis": broker}, period_s=0.05).start()
    bus = broker.bus(patience_s=10)
    try:
        first = broker.pid
        for i in range(50):
            bus.publish("t", f"k{i:04d}", encode_frame(i, [f"e{i}"]))
        _kill(first)
        # written while the server is down or starting: the client waits for it
        for i in range(50, 100):
            bus.publish("t", f"k{i:04d}", encode_frame(i, [f"e{i}"]))
        got = [decode_frame(f, topic="t", key=k).hw for k, f in bus.read("t", "", "+")]
        assert got == list(range(100))  # what was answered before the kill is still there
        assert broker.pid != first and broker.alive()
        events = keeper.stop()
        assert len(events) == 1 and events[0]["service"] == "redis"
        assert events[0]["back_ms"] is not None and events[0]["error"] is None
        assert events[0]["back_ms"] - events[0]["died_ms"] < 5000
        # the restarted server takes the same password: a client without it is refused
        import redis

        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=broker.port).ping()
    finally:
        keeper.stop()
        broker.stop()


def test_a_resumed_owner_adopts_a_live_server_and_restarts_a_dead_one_from_its_file(
        tmp_path: Path, redis_exe: None) -> None:
    """A resumed apps coordinator (issue 34) finds its dead predecessor's durable Redis: a live
    one is taken over as it is (same process, its data there, restarted by a keeper when it
    dies later, stopped by ``stop``); a dead one is started again from its file. A server
    that does not answer with the run's password is not adopted."""
    from reuse.runtime.dataplane.redis_bus import Broker, start_redis

    def held(b: Broker, patience_s: float = 0.0) -> list[int]:
        bus = b.bus(patience_s=patience_s)
        return [decode_frame(f, topic="t", key=k).hw for k, f in bus.read("t", "", "+")]

    d = tmp_path / "redis"
    first = start_redis(d, durable=True, password="pw")
    first.bus().publish("t", "k0001", encode_frame(1, ["e1"]))
    adopted = start_redis(d, first.port, durable=True, password="pw", adopt=True)
    try:
        assert adopted.pid == first.pid and adopted.alive()
        assert held(adopted) == [1]
        keeper = Keeper({"redis": adopted}, period_s=0.05).start()
        _kill(first.pid)
        first.proc.wait(timeout=10)  # reaped by the process that started it, as init would
        deadline = time.time() + 10
        while not (adopted.pid != first.pid and adopted.alive()):
            assert time.time() < deadline, "the adopted server was not restarted"
            time.sleep(0.05)
        keeper.stop()
        assert held(adopted, 5.0) == [1]
        # the wrong password: not adopted, and the server running there is replaced
        other = start_redis(d, adopted.port, durable=True, password="other", adopt=True)
        assert other.pid != adopted.pid and not adopted.alive()
        other.stop()
        # none running: started again from the file
        again = start_redis(d, adopted.port, durable=True, password="pw", adopt=True)
        assert held(again) == [1]
        again.stop()
        assert not again.alive()
    finally:
        for b in (first, adopted):
            if b.alive():
                b.stop()


def test_a_killed_redis_behind_the_ingest_loses_no_message(
        tmp_path: Path, redis_exe: None, mqtt_broker: str) -> None:
    """A publisher at 200 messages/s, an ingest appending to a durable Redis that is killed
    twice: every ``seq`` is on the bus once, none missed or stale."""
    from reuse.runtime.dataplane.redis_bus import start_redis

    broker = start_redis(tmp_path / "redis", durable=True)
    keeper = Keeper({"redis": broker}, period_s=0.05).start()
    bus = broker.bus(patience_s=10)
    ingest = Ingest(bus, mqtt_broker, flush_s=0.05, client_id="keeper-test", persistent=True)
    pub = Publisher(mqtt_broker, [Stream("SYS", "SYS")], rate=200.0)
    try:
        ingest.start()
        pub.connect()
        sender = threading.Thread(target=pub.run, args=(3.0,), daemon=True)
        sender.start()
        for _ in range(2):
            time.sleep(0.8)
            _kill(broker.pid)
            deadline = time.time() + 10
            while not broker.alive() and time.time() < deadline:
                time.sleep(0.02)
        sender.join(timeout=30)
        report = pub.close()
        deadline = time.time() + 20
        while sum(c.appended for c in ingest.counts().values()) < 600 and \
                time.time() < deadline:
            time.sleep(0.05)
        counts = ingest.stop()["sensors/SYS"]
    finally:
        keeper.stop()
        broker.stop()
    assert report.sent == {"sensors/SYS": 600}
    assert counts.appended == 600 and counts.missed == 0 and counts.malformed == 0
    assert len([e for e in keeper.events if e.back_ms is not None]) == 2
    again = start_redis(tmp_path / "redis", durable=True)  # what the bus holds, from its file
    try:
        dump_recorded(again.bus(), ["SYS"], tmp_path / "recorded", 600)
    finally:
        again.stop()
    assert sorted(load_recorded(tmp_path / "recorded")["SYS"]) == list(range(600))


def test_a_killed_mqtt_broker_is_restarted_and_the_stream_loses_nothing(
        tmp_path: Path) -> None:
    """``reuse broker start``'s keeper starts a killed mosquitto again; the publisher and the
    ingest reconnect, and what the dead broker held is sent again by the publisher (its
    rewinds, and its answers to the ingest's resend requests for the holes) and dropped by
    ``seq`` where it had arrived: every ``seq`` on the bus once."""
    from reuse.runtime.dataplane import mosquitto
    from reuse.runtime.dataplane.bus import FileBus
    from reuse.runtime.dataplane.mqtt import MqttError
    from reuse.runtime.dataplane.redis_bus import free_port

    try:
        mosquitto.mosquitto_exe()
    except MqttError as exc:
        pytest.skip(missing("mqtt", str(exc)))
    d = tmp_path / "broker"
    url = str(mosquitto.start(d, port=free_port())["url"])
    bus = FileBus(tmp_path / "bus")
    ingest = Ingest(bus, url, flush_s=0.05, client_id="keeper-mqtt", persistent=True,
                    first_seq=0)  # the broker's first death may take the first seq with it
    pub = Publisher(url, [Stream("SYS", "SYS")], rate=200.0)
    n = 800
    try:
        ingest.start()
        pub.connect()
        sender = threading.Thread(target=pub.run, args=(n / 200.0,), daemon=True)
        sender.start()
        killed = []
        for _ in range(2):
            time.sleep(1.2)
            p = mosquitto.pid(d)
            assert p is not None
            killed.append(p)
            _kill(p)
            deadline = time.time() + 10
            while mosquitto.pid(d) in (None, p) and time.time() < deadline:
                time.sleep(0.02)
        sender.join(timeout=60)
        reports: list[PublishReport] = []  # rewinds, acks, then answers to late requests
        closer = threading.Thread(target=lambda: reports.append(
            pub.close(timeout_s=30, linger_s=60)), daemon=True)
        closer.start()
        deadline = time.time() + 30
        while time.time() < deadline:  # all of it on the bus: no hole waiting
            c = ingest.counts().get("sensors/SYS")  # None: nothing has arrived yet
            if c is not None and c.last_seq == n - 1 and c.pending == 0:
                break
            time.sleep(0.05)
        counts = ingest.stop()["sensors/SYS"]
        deadline = time.time() + 40
        while closer.is_alive() and time.time() < deadline:
            pub.halt()  # ends its lingering (again: close() clears a halt that came first)
            closer.join(timeout=0.2)
        report = reports[0]
        deaths = mosquitto.restarts(d)
    finally:
        if mosquitto.pid(d) is not None:
            mosquitto.stop(d)
    assert [e["rc"] for e in deaths] == [-9, -9] and all(e["back_ms"] for e in deaths)
    assert report.sent == {"sensors/SYS": n} and report.unacked == 0
    assert pub.republished > 0  # the last seconds before each drop went again
    assert counts.missed == 0 and counts.malformed == 0 and counts.last_seq == n - 1
    dump_recorded(bus, ["SYS"], tmp_path / "recorded", n)
    assert sorted(load_recorded(tmp_path / "recorded")["SYS"]) == list(range(n))
    lines = (tmp_path / "recorded" / "SYS.jsonl").read_text().splitlines()
    assert len(lines) == n  # none twice
