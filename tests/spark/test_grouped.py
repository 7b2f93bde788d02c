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
    # an outer WHERE over the windows' results: days enter it, leave it (deleted) and come back
    "SELECT * FROM (SELECT day, sum(amount) AS total, "
    "avg(sum(amount)) OVER (ORDER BY day ROWS 2 PRECEDING) AS avg3 FROM {} GROUP BY day) "
    "WHERE avg3 < 11 OR avg3 > 30",
]


def _each_batch(out, check, tmp_path) -> None:
    """Runs the stream ``out`` over every file there is, ``check(df, batch_id)`` on each micro-batch."""
    q = (
        out.writeStream.foreachBatch(check)
        .option("checkpointLocation", str(tmp_path / "chk"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()


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
    _each_batch(out, check, tmp_path)
    assert len(seen) == 3 and batch_names == names
    assert out.dtypes[: len(names)] == spark.sql(query.format("ow_grouped_b")).dtypes


HAVING_ON_UPDATE = (
    "SELECT k, ts DIV 10 AS d, sum(x) AS total, "
    "avg(sum(x)) OVER (PARTITION BY k ORDER BY ts DIV 10 ROWS 1 PRECEDING) AS avg2, "
    "lag(count(*)) OVER (PARTITION BY k ORDER BY ts DIV 10) AS n_before "
    "FROM {} GROUP BY k, ts DIV 10 "
    "HAVING count(*) > 2 AND (total > -4 OR max(x) IS NULL) AND (k IS NULL OR k <> 'c') AND {guard}"
)
# on the stream HAVING fails (DIVIDE_BY_ZERO) on groups of 4 rows, which are set aside; Spark's batch
# query would fail on them, so the batch oracle leaves them out instead
FAILS, LEFT_OUT = "1 DIV (count(*) - 4) IS NOT NULL", "count(*) <> 4"
CDC = "id BIGINT, op STRING, k STRING, ts BIGINT, x DOUBLE"


def test_having_on_update_under_cdc_changes_equals_spark_batch_after_every_micro_batch(
    spark, rocksdb, tmp_path
):
    """HAVING on update over a change stream (Flink's +I, -U/+U, -D: updates move rows between
    groups, NULL keys included, deletes shrink groups): HAVING reads aggregates the SELECT list shows
    (by its alias) and ones it does not (count(*), max(x)), and a key; the windows run over the
    groups it keeps (a group leaving HAVING changes its neighbours' values). After every
    micro-batch the changelog, applied by group key, equals Spark's batch SQL of the query over the
    live rows, and along the way groups enter HAVING and leave it while they still have rows (a
    delete or a move making a group fail it). A group the condition fails on (an ANSI error) is out
    of the result and counted as set aside."""
    from cdc_history import cut, flink, history

    rng = np.random.default_rng(39)
    changes = history(39, changes=140, keys=(None, "a", "b", "c"))
    batches = cut(changes, rng, 4)
    src = tmp_path / "src"
    src.mkdir()
    for n, batch in enumerate(batches):
        rows = flink(batch)
        path = str(src / f"part-{n}.parquet")
        pq.write_table(pa.Table.from_pylist(rows, schema=_arrow(CDC)), path)
        os.utime(path, (time.time() + n, time.time() + n))
    stream = spark.readStream.schema(CDC).option("maxFilesPerTrigger", 1).parquet(str(src))
    stream.createOrReplaceTempView("ow_having_s")
    out = overwindow.sql(
        spark,
        HAVING_ON_UPDATE.format("ow_having_s", guard=FAILS),
        emit="on_update",
        rowKey="id",
        opColumn="op",
    )
    names = [c for c in out.columns if c != "_change"]
    table: dict = {}
    live: dict = {}
    seen: list[int] = []
    moves = {"entered": 0, "left": 0, "aside": 0, "failing": 0}

    def check(df, batch_id):
        before = set(table)
        rows = compat.to_arrow(df).to_pylist()
        moves["aside"] += out.overwindow_counts.take()[2]
        for r in rows:
            key = (r["k"], r["d"])
            if r["_change"] == "delete":
                table.pop(key, None)
            else:
                table[key] = tuple(r[c] for c in names)
        for kind, old, new in batches[batch_id]:
            if kind == "delete":
                live.pop(old["id"])
            else:
                live[new["id"]] = new
        seen.append(batch_id)
        spark.createDataFrame(
            list(live.values()), "k STRING, ts BIGINT, x DOUBLE, id BIGINT"
        ).createOrReplaceTempView("ow_having_b")
        want = {
            (r["k"], r["d"]): r
            for r in compat.to_arrow(
                spark.sql(HAVING_ON_UPDATE.format("ow_having_b", guard=LEFT_OUT))
            ).to_pylist()
        }
        assert table.keys() == want.keys()
        for key, got in table.items():
            assert [
                pytest.approx(want[key][c]) if isinstance(want[key][c], float) else want[key][c]
                for c in names
            ] == list(got), key
        groups = {(r["k"], r["ts"] // 10) for r in live.values()}
        sizes = [sum((r["k"], r["ts"] // 10) == g for r in live.values()) for g in groups]
        moves["failing"] += sizes.count(4)
        moves["entered"] += len((set(table) - before) & groups)
        moves["left"] += len((before - set(table)) & groups)

    _each_batch(out, check, tmp_path)
    assert seen == [0, 1, 2, 3]
    assert moves["entered"] > 0 and moves["left"] > 0
    assert moves["failing"] > 0 and moves["aside"] > 0
    assert (
        out.dtypes[: len(names)] == spark.sql(HAVING_ON_UPDATE.format("ow_having_b", guard=LEFT_OUT)).dtypes
    )


def _arrow(ddl: str) -> pa.Schema:
    types = {"BIGINT": pa.int64(), "STRING": pa.string(), "DOUBLE": pa.float64()}
    return pa.schema([(name, types[kind]) for name, kind in (c.split() for c in ddl.split(", "))])


# the daily totals and their 7-day moving average, on window close: each day once, when the
# watermark passes its end
CLOSING = (
    "SELECT to_date(ts) AS day, sum(amount) AS total, count(*) AS n, max(x) AS hi, "
    "avg(sum(amount)) OVER (ORDER BY to_date(ts) ROWS 6 PRECEDING) AS avg7, "
    "sum(count(*)) OVER (ORDER BY to_date(ts)) AS running, lag(max(x), 2) OVER (ORDER BY to_date(ts)) AS hi2 "
    "FROM {} WHERE amount > -2 GROUP BY to_date(ts) HAVING n > 3 OR max(x) = 4"
)


def test_a_change_the_group_by_stage_sets_aside_counts_on_its_micro_batch(spark, rocksdb, tmp_path):
    """A change whose op no changelog knows is set aside by the GROUP BY stage, before the windows:
    the query's counts (what each progress line takes) have it on its micro-batch, beside the
    windows' own."""
    src = tmp_path / "src"
    src.mkdir()
    for n, op in enumerate(["+I", "zap"]):
        rows = [
            {"id": n, "op": op, "k": "a", "ts": n, "x": 1.0},
            {"id": 10 + n, "op": "+I", "k": "b", "ts": n, "x": 2.0},
        ]
        path = str(src / f"part-{n}.parquet")
        pq.write_table(pa.Table.from_pylist(rows, schema=_arrow(CDC)), path)
        os.utime(path, (time.time() + n, time.time() + n))
    spark.readStream.schema(CDC).option("maxFilesPerTrigger", 1).parquet(str(src)).createOrReplaceTempView(
        "ow_grouped_zap"
    )
    query = (
        "SELECT k, ts DIV 10 AS d, sum(x) AS total, lag(count(*)) OVER (PARTITION BY k ORDER BY ts DIV 10) "
        "AS n_before FROM ow_grouped_zap GROUP BY k, ts DIV 10"
    )
    out = overwindow.sql(spark, query, emit="on_update", rowKey="id", opColumn="op")
    taken = {}

    def check(df, batch_id):
        compat.to_arrow(df)
        taken[batch_id] = out.overwindow_counts.take(batch_id)

    _each_batch(out, check, tmp_path)
    assert taken == {0: (0, 0, 0), 1: (0, 0, 1)}


def test_windows_over_a_group_by_on_window_close_emit_each_closed_day_once_as_spark_batch(
    spark, rocksdb, tmp_path
):
    """Three files of rows in time order over twelve days, one per micro-batch, a watermark 2 hours
    behind: each day HAVING keeps comes out once, after the watermark passed its end, with the
    values of Spark's batch SQL over every row (a day's moving average reads only the days kept
    before it); the days HAVING drops, and the last day, within the delay of the newest row, are not
    out. A non-insert change of the windows would show as a day twice."""

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
    _each_batch(out, lambda df, _: got.extend(compat.to_arrow(df).to_pylist()), tmp_path)
    spark.read.schema(SCHEMA).parquet(str(src)).createOrReplaceTempView("ow_grouped_cb")
    want = {r["day"]: r for r in compat.to_arrow(spark.sql(CLOSING.format("ow_grouped_cb"))).to_pylist()}
    days = [r["day"] for r in got]
    assert len(days) == len(set(days))  # each day once
    every = spark.sql(CLOSING.split(" HAVING")[0].format("ow_grouped_cb")).select("day").collect()
    last = max(r.day for r in every)
    assert 0 < len(days) and last not in days and set(days) <= set(want)
    assert any(r.day not in want and r.day < max(days) for r in every)  # HAVING dropped a closed day
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
    from overwindow.spark.query import parse_query

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
