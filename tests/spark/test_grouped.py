"""Windows over a GROUP BY on a stream (``overwindow.spark.grouped``): the changelog, applied by
group key after every micro-batch, equals Spark's batch SQL of the same query over the rows so far:
daily totals and their 7-day moving average, a key Spark computes (``date_trunc``), an aggregate
under a window and beside it, several aggregates, NULL keys."""

import datetime as dt
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.spark import compat

pytestmark = pytest.mark.skipif(compat.version() < compat.SPARK_4, reason="needs PySpark 4 (refused on 3.5)")

SCHEMA = "k STRING, ts TIMESTAMP, amount BIGINT, x DOUBLE"
ARROW = pa.schema(
    [("k", pa.string()), ("ts", pa.timestamp("us")), ("amount", pa.int64()), ("x", pa.float64())]
)
QUERIES = [
    # the daily totals and their 7-day moving average
    "SELECT day, sum(amount) AS total, avg(sum(amount)) OVER (ORDER BY day ROWS 6 PRECEDING) AS avg7 "
    "FROM {} GROUP BY day",
    # a key Spark computes, NULL keys, several aggregates, a window over keys and aggregates
    "SELECT k, date_trunc('DAY', ts) AS d, count(*) AS n, max(x) AS hi, "
    "sum(count(*)) OVER (PARTITION BY k ORDER BY date_trunc('DAY', ts)) AS running, "
    "rank() OVER (PARTITION BY date_trunc('DAY', ts) ORDER BY sum(amount) DESC) AS r "
    "FROM {} WHERE amount > 0 GROUP BY k, date_trunc('DAY', ts)",
]


def _files(tmp_path) -> str:
    """Three files of rows over ten days: the later files add to the earlier days' groups."""
    src = tmp_path / "src"
    src.mkdir()
    start = dt.datetime(2024, 3, 1)
    for f in range(3):
        rows = [
            {
                "k": [None, "a", "b"][(i + f) % 3],
                "ts": start + dt.timedelta(hours=7 * i + f),
                "amount": (i * 7 + f) % 11 - 2,
                "x": float((i * 3 + f) % 5),
            }
            for i in range(34)
        ]
        path = str(src / f"part-{f}.parquet")
        pq.write_table(pa.Table.from_pylist(rows, schema=ARROW), path)
        os.utime(path, (time.time() + f, time.time() + f))
    return str(src)


@pytest.mark.parametrize("query", QUERIES)
def test_windows_over_a_group_by_equal_spark_batch_after_every_micro_batch(spark, rocksdb, tmp_path, query):
    from pyspark.sql import functions as F

    src = _files(tmp_path)
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    stream.withColumn("day", F.to_date("ts")).createOrReplaceTempView("ow_grouped_s")
    out = overwindow.sql(spark, query.format("ow_grouped_s"), emit="on_update")
    names = [c for c in out.columns if c != "_change"]
    batch_names = None
    table: dict = {}
    seen: list[str] = []

    def check(df, batch_id):
        nonlocal batch_names
        for r in compat.to_arrow(df).to_pylist():
            key = tuple(r[c] for c in keys)
            if r["_change"] == "delete":
                table.pop(key, None)
            else:
                table[key] = tuple(r[c] for c in names)
        seen.append(sorted(os.listdir(src))[batch_id])
        done = spark.read.schema(SCHEMA).parquet(*[os.path.join(src, f) for f in seen])
        done.withColumn("day", F.to_date("ts")).createOrReplaceTempView("ow_grouped_b")
        want = spark.sql(query.format("ow_grouped_b"))
        batch_names = want.columns
        rows = {
            tuple(r[c] for c in keys): tuple(r[c] for c in names) for r in compat.to_arrow(want).to_pylist()
        }
        assert table.keys() == rows.keys()
        for key, got in table.items():
            assert [pytest.approx(w) if isinstance(w, float) else w for w in rows[key]] == list(got), key

    keys = names[:2] if "k," in query else names[:1]
    q = (
        out.writeStream.foreachBatch(check)
        .option("checkpointLocation", str(tmp_path / "chk"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    assert len(seen) == 3 and batch_names == names
    assert out.dtypes[: len(names)] == spark.sql(query.format("ow_grouped_b")).dtypes


# the daily totals and their 7-day moving average, on window close: each day once, when the
# watermark passes its end
CLOSING = (
    "SELECT to_date(ts) AS day, sum(amount) AS total, count(*) AS n, max(x) AS hi, "
    "avg(sum(amount)) OVER (ORDER BY to_date(ts) ROWS 6 PRECEDING) AS avg7, "
    "sum(count(*)) OVER (ORDER BY to_date(ts)) AS running, lag(max(x), 2) OVER (ORDER BY to_date(ts)) AS hi2 "
    "FROM {} WHERE amount > -2 GROUP BY to_date(ts)"
)


def test_windows_over_a_group_by_on_window_close_emit_each_closed_day_once_as_spark_batch(
    spark, rocksdb, tmp_path
):
    """Three files of rows in time order over twelve days, one per micro-batch, a watermark 2 hours
    behind: each day comes out once, after the watermark passed its end, with the values of Spark's
    batch SQL over every row (a day's moving average reads only the days before it); the last day,
    within the delay of the newest row, is not out. A non-insert change of the windows would show as
    a day twice."""

    src = tmp_path / "src"
    src.mkdir()
    start = dt.datetime(2024, 3, 1)
    for f in range(3):
        rows = [
            {"k": "a", "ts": start + dt.timedelta(hours=f * 96 + 5 * i), "amount": (i * 7 + f) % 11 - 3,
             "x": float((i * 3 + f) % 5)}
            for i in range(20)
        ]  # fmt: skip
        path = str(src / f"part-{f}.parquet")
        pq.write_table(pa.Table.from_pylist(rows, schema=ARROW), path)
        os.utime(path, (time.time() + f, time.time() + f))
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(src))
    stream.withWatermark("ts", "2 hours").createOrReplaceTempView("ow_grouped_c")
    out = overwindow.sql(spark, CLOSING.format("ow_grouped_c"))
    assert "_change" not in out.columns
    got: list = []
    q = (
        out.writeStream.foreachBatch(lambda df, _: got.extend(compat.to_arrow(df).to_pylist()))
        .option("checkpointLocation", str(tmp_path / "chk"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    spark.read.schema(SCHEMA).parquet(str(src)).createOrReplaceTempView("ow_grouped_cb")
    want = {r["day"]: r for r in compat.to_arrow(spark.sql(CLOSING.format("ow_grouped_cb"))).to_pylist()}
    days = [r["day"] for r in got]
    assert len(days) == len(set(days))  # each day once
    last = max(want)
    assert 0 < len(days) < len(want) and last not in days
    for r in got:
        assert r == {c: pytest.approx(v) if isinstance(v, float) else v for c, v in want[r["day"]].items()}
    assert out.dtypes == spark.sql(CLOSING.format("ow_grouped_cb")).dtypes


def test_a_group_by_on_window_close_without_a_time_key_is_refused(spark, tmp_path):
    (tmp_path / "none").mkdir()
    stream = spark.readStream.schema(SCHEMA).parquet(str(tmp_path / "none"))
    stream.withWatermark("ts", "1 hour").createOrReplaceTempView("ow_grouped_e")
    with pytest.raises(
        WindowSpecError, match=r"GROUP BY k on window close: .*time bucket of `ts`.*on_update"
    ):
        overwindow.sql(spark, "SELECT k, lag(sum(x)) OVER (ORDER BY k) AS p FROM ow_grouped_e GROUP BY k")


TIME_KEYS = [
    "ts",
    "to_date(ts)",
    "CAST(ts AS DATE)",
    *(f"date_trunc('{u}', ts)" for u in ("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY")),
    *(f"date_trunc('{u}', ts)" for u in ("WEEK", "MONTH", "MM", "QUARTER", "YEAR", "yyyy")),
]


@pytest.mark.parametrize("key", TIME_KEYS)
def test_a_group_closes_where_the_next_bucket_of_its_time_key_starts(spark, key):
    """Spark's value of a time key's closing time C (``grouped.closing``) over timestamps spread over
    centuries (before 1970, leap days, month and year ends): C - 1 microsecond has the row's key and C
    has another (C is the first instant of the next bucket), so once the watermark reaches C no row
    of the group can come: every later row has a time at or past the watermark."""
    from overwindow.spark.grouped import closing
    from overwindow.spark.select import parse_query

    query = parse_query(f"SELECT {key} AS k, count(*) OVER (ORDER BY {key}) AS n FROM v GROUP BY {key}")
    at = closing(query, "ts")
    rng = np.random.default_rng(len(key))
    micros = rng.integers(-12_000_000_000_000_000, 13_000_000_000_000_000, 300)
    edges = [dt.datetime(2024, 2, 29, 23, 59, 59, 999_999), dt.datetime(1969, 12, 31, 23, 59, 59, 999_999)]
    stamps = [dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(m)) for m in micros] + edges
    base = spark.createDataFrame([(t,) for t in stamps], "ts TIMESTAMP").selectExpr("ts", f"{at.sql} AS c")

    def keys(times: str) -> list:
        return [r[0] for r in base.selectExpr(f"{times} AS ts").selectExpr(key).collect()]

    own, before, after = keys("ts"), keys("timestampadd(MICROSECOND, -1, c)"), keys("c")
    assert own == before
    assert all(a != o for a, o in zip(after, own))
