"""How fast Spark moves opaque bytes between two stages: DataFrame against RDD (issue 22).

The split engine's exchange carries orjson parcels, opaque to Spark. Two ways to move them:
``repartition(N, col)`` between two ``mapInPandas`` (Arrow, then Spark's row format, then
Arrow again: every byte copied several times) or ``partitionBy(N)`` between two RDD
``mapPartitions`` (pickled batches of ``bytes``). Each of 2 partitions makes ``--mb`` MB of
incompressible bytes, half for each destination, in 2 rows per destination; the consumers
count what they got. The two ways alternate (``--repeat`` times each) in one local[2] session;
the first pair warms the JVM and Python workers up.

Run: ``.venv/bin/python benchmarks/exchange_path.py --mb 25 --repeat 4``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterable, Iterator
from typing import Any

ROWS = 2  # rows per partition per destination


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=25, help="MB each partition sends")
    ap.add_argument("--repeat", type=int, default=4)
    args = ap.parse_args()
    size = args.mb * 1_000_000 // (2 * ROWS)

    def gen(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        body = os.urandom(size // 4) * 4
        out = [(d, body) for f in frames for _ in f["p"] for d in (0, 1) for _ in range(ROWS)]
        yield pd.DataFrame(out, columns=["dest", "body"])

    def consume(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        yield pd.DataFrame([(sum(len(bytes(b)) for f in frames for b in f["body"]),)],
                           columns=["n"])

    def rdd_gen(it: Iterable[int]) -> Iterator[tuple[int, bytes]]:
        body = os.urandom(size // 4) * 4
        for _ in it:
            for d in (0, 1):
                for _ in range(ROWS):
                    yield (d, body)

    def rdd_consume(it: Iterable[tuple[int, bytes]]) -> Iterator[int]:
        yield sum(len(b) for _, b in it)

    from pyspark.sql import functions as F

    from reuse.runtime.engines.shared.split_batch import to_partition
    from reuse.runtime.session import get_session, stop_session

    spark = get_session("local[2]")
    try:
        base = spark.createDataFrame([(0,), (1,)], "p int").repartition(2)
        base.cache().count()
        route: dict[int, int] = {}  # an int whose hash lands in each partition
        for r, p in spark.range(64).selectExpr(
                "cast(id as int) r", "pmod(hash(cast(id as int)), 2) p").collect():
            route.setdefault(int(p), int(r))
        times: dict[str, list[float]] = {"dataframe": [], "rdd": []}
        for rep in range(args.repeat + 1):
            t = time.time()
            df = base.mapInPandas(gen, "dest int, body binary").withColumn(
                "route", F.when(F.col("dest") == 0, route[0]).otherwise(route[1]))
            got_df = sum(r[0] for r in df.repartition(2, "route")
                         .mapInPandas(consume, "n long").collect())
            a = time.time() - t
            t = time.time()
            got_rdd = sum(base.rdd.mapPartitions(lambda it: rdd_gen(r.p for r in it))
                          .partitionBy(2, to_partition).mapPartitions(rdd_consume).collect())
            b = time.time() - t
            assert got_df == got_rdd == 2 * args.mb * 1_000_000 // (2 * ROWS) * 2 * ROWS
            if rep == 0:
                continue  # warm-up
            times["dataframe"].append(a)
            times["rdd"].append(b)
            print(f"run {rep}: {2 * args.mb} MB moved: dataframe {a:.3f} s, rdd {b:.3f} s",
                  flush=True)
        for k, v in times.items():
            print(f"{k}: median {statistics.median(v):.3f} s [{min(v):.3f}, {max(v):.3f}] for "
                  f"{2 * args.mb} MB", flush=True)
    finally:
        stop_session(spark)


if __name__ == "__main__":
    main()
