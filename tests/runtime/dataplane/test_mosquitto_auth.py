"""Nobody gets into a broker listening beyond loopback (issue 34, item 4): a real mosquitto
started with ``listen="0.0.0.0"`` refuses an anonymous client and a wrong password, and takes
the ingest and the publisher that give the URL's user and password. A run keeps that password
out of its journal, in ``secrets/broker``, for ``--resume``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reuse.core.errors import StateError
from reuse.runtime.dataplane import mosquitto
from reuse.runtime.dataplane.bus import FileBus
from reuse.runtime.dataplane.ingest import Ingest
from reuse.runtime.dataplane.mqtt import BrokerUrl, MqttError, bus_topic, masked, parse_broker_url
from reuse.runtime.dataplane.publish import Publisher, Stream
from reuse.runtime.spec import RunSpec
from reuse.testing import missing

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A broker on every interface (so with a password), stopped by its PID at the end."""
    try:
        mosquitto.mosquitto_exe()
    except MqttError as exc:
        pytest.skip(missing("mqtt", str(exc)))
    d = tmp_path / "broker"
    got = mosquitto.start(d, port=free_port(), listen="0.0.0.0")
    yield got
    mosquitto.stop(d)


def _connects(url: BrokerUrl, username: str | None, password: str | None) -> bool:
    """Whether the broker accepts a paho client with these credentials (its CONNACK)."""
    import paho.mqtt.client as mqtt

    result: list[bool] = []
    done = threading.Event()

    def on_connect(c: Any, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
        result.append(not reason.is_failure)
        done.set()

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.on_connect = on_connect
    if username is not None:
        client.username_pw_set(username, password)
    client.connect(url.host, url.port)
    client.loop_start()
    try:
        assert done.wait(10), "no CONNACK"
    finally:
        client.disconnect()
        client.loop_stop()
    return result[0]


def test_beyond_loopback_only_the_runs_user_gets_in(guarded: dict[str, Any],
                                                    tmp_path: Path) -> None:
    secret_file = Path(guarded["password_file"])
    password = secret_file.read_text().strip()
    assert oct(secret_file.stat().st_mode & 0o777) == "0o600"
    assert oct(secret_file.parent.stat().st_mode & 0o777) == "0o700"
    assert password not in json.dumps(guarded)  # the URL it prints is masked
    assert guarded["url"].startswith("mqtt://reuse:***@127.0.0.1:")
    conf = (Path(guarded["dir"]) / "mosquitto.conf").read_text()
    assert "allow_anonymous false" in conf and password not in conf
    hashed = (Path(guarded["dir"]) / "passwd").read_text()
    assert hashed.startswith("reuse:") and password not in hashed  # hashed in place
    url = parse_broker_url(guarded["url"].replace("***", password))
    assert not _connects(url, None, None)  # anonymous
    assert not _connects(url, "reuse", password + "x")  # a wrong password
    assert _connects(url, "reuse", password)
    # the run's own clients: the ingest refuses to start without the password, one line
    bus = FileBus(tmp_path / "bus")
    bare = BrokerUrl(url.host, url.port)
    with pytest.raises(MqttError, match="refused the connection") as exc:
        Ingest(bus, bare).start(timeout_s=5)
    assert "\n" not in str(exc.value)
    # ... and with it, takes what a publisher (with it too) sends
    ing = Ingest(bus, url).start()
    pub = Publisher(url, [Stream("SYS", "SYS")], rate=50.0).connect()
    sender = threading.Thread(target=pub.run, daemon=True)
    try:
        sender.start()
        deadline = time.time() + 20
        while time.time() < deadline and not list(bus.read(bus_topic("SYS"), "", "\uffff")):
            ing.flush()
            time.sleep(0.1)
        assert list(bus.read(bus_topic("SYS"), "", "\uffff")), "nothing reached the bus"
    finally:
        pub.halt()
        sender.join(timeout=10)
        pub.close()
        ing.stop()


def test_a_broker_url_never_shows_its_password() -> None:
    url = parse_broker_url("mqtt://reuse:p%40ss@10.0.0.5:1884")
    assert (url.username, url.password) == ("reuse", "p@ss")
    assert str(url) == "mqtt://reuse:***@10.0.0.5:1884" and "p@ss" not in repr(url)
    assert masked("mqtt://reuse:p%40ss@10.0.0.5:1884") == "mqtt://reuse:***@10.0.0.5:1884"
    for bad in ("mqtt://reuse@h:1", "mqtt://:pw@h:1"):
        with pytest.raises(MqttError, match="give both a user and a password"):
            parse_broker_url(bad)


def test_the_journal_holds_no_broker_password(tmp_path: Path) -> None:
    spec = RunSpec.of(source="mqtt://reuse:s3cret@h:1883", root=tmp_path).resolved(
        shards=2, max_events=0, data_dir=tmp_path)
    rec = json.loads(json.dumps(spec.to_journal()))
    assert rec["source"] == "mqtt://reuse:***@h:1883"
    journal = str(tmp_path / "journal.jsonl")
    with pytest.raises(StateError, match="password is not in"):
        RunSpec.from_journal(rec, file=journal)
    from reuse.runtime.common.run_secrets import keep_secret

    keep_secret(tmp_path, "broker", "s3cret")
    assert RunSpec.from_journal(rec, file=journal).source == "mqtt://reuse:s3cret@h:1883"
