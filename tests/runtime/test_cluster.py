"""What a standalone cluster is started with, and how a driver joins it (no Spark here: the
daemons' refusal of a client without the secret is in
engines/shared/test_cluster_spark.py)."""

from __future__ import annotations

import stat
from pathlib import Path

from reuse.runtime import cluster
from reuse.runtime.session import spark_conf


def test_a_loopback_cluster_has_no_secret_and_its_drivers_join_as_before(tmp_path: Path) -> None:
    cluster._configure(tmp_path, "127.0.0.1", 7077)
    assert not (tmp_path / "secrets").exists()
    assert cluster.client("spark://127.0.0.1:7077", tmp_path) == cluster.Client()


def test_beyond_loopback_the_daemons_and_drivers_read_one_private_secret(tmp_path: Path) -> None:
    cluster._configure(tmp_path, "10.1.2.3", 7100)
    props = tmp_path / "secrets" / "spark.properties"
    assert stat.S_IMODE(props.stat().st_mode) == 0o600
    assert stat.S_IMODE(props.parent.stat().st_mode) == 0o700
    lines = dict(line.split(" ", 1) for line in props.read_text().splitlines())
    assert lines["spark.authenticate"] == "true" and lines["spark.ui.killEnabled"] == "false"
    assert len(lines["spark.authenticate.secret"]) >= 40  # 32 random bytes, URL-safe
    joins = cluster.client("spark://10.1.2.3:7100", tmp_path)
    assert joins == cluster.Client("10.1.2.3", props)
    # the driver binds and advertises the cluster's address; its settings hold no secret
    conf = spark_conf("spark://10.1.2.3:7100", host=joins.host)
    assert conf["spark.driver.host"] == "10.1.2.3"
    assert not any("secret" in k for k in conf)
    # another master, or a started cluster kept in another folder: joined as before
    assert cluster.client("spark://10.1.2.3:7077", tmp_path) == cluster.Client()
    assert cluster.client("local[2]", tmp_path) == cluster.Client()
    # a restart of the same folder keeps the secret (a driver's copy stays valid)
    secret = lines["spark.authenticate.secret"]
    cluster._configure(tmp_path, "10.1.2.3", 7100)
    assert f"spark.authenticate.secret {secret}" in props.read_text()
