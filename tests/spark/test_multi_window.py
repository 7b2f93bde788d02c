"""Windows over several PARTITION BY and ORDER BY in one ``overwindow.select`` / ``overwindow.sql``:
one streaming query (the fan-out and the row assembly of ``overwindow.spark.fanout``), one row per
input row carrying every window's column. The oracle is Spark's own batch ``select`` over the same
rows: names, order, types and values, on window close (each row once, whole) and on update (the
changelog kept by row key equals the batch query over the live rows after every micro-batch, with
inserts, updates, deletes and rows moving between partitions)."""

import datetime as dt
import math
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_select import SCHEMA, _assert_as_spark, _collect, _source

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.spark import compat

pytestmark = pytest.mark.skipif(compat.version() < compat.SPARK_4, reason="needs PySpark 4 (refused on 3.5)")


def _with_g(df):
    from pyspark.sql import functions as F

    # a second partition key: rid % 3, NULL for every 7th row
    return df.withColumn("g", F.when(F.col("rid") % 7 != 0, F.col("rid") % 3))


@pytest.mark.parametrize("buckets", [None, 8])  # chosen (a TINYINT bucket), or given (a BIGINT)
def test_pyspark_windows_over_three_partitionings_on_window_close_equal_spark_batch(
    spark, rocksdb, chained, tmp_path, buckets
):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    src, rids = _source(tmp_path)
    wk = Window.partitionBy("k").orderBy("ts")
    columns = [
        "k",
        "g",
        "ts",
        "rid",
        F.lag("x").over(wk).alias("prev"),
        F.avg("x").over(wk.rowsBetween(-2, 1)).alias("a"),  # FOLLOWING: the far rows close each k
        F.count("*").over(Window.orderBy("ts").rangeBetween(Window.unboundedPreceding, 0)).alias("n"),
        # g holds ties in ts (every k has a row each 7 s): a RANGE frame, which ties do not move
        F.expr(
            "sum(n) OVER (PARTITION BY g ORDER BY ts "
            "RANGE BETWEEN INTERVAL 7 SECONDS PRECEDING AND CURRENT ROW)"
        ).alias("s"),
    ]
    events = _with_g(spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src))
    out = overwindow.select(events.withWatermark("ts", "0 seconds"), *columns, keyBuckets=buckets)
    rows = _collect(out, str(tmp_path / "chk"), "append")
    batch = _with_g(spark.read.schema(SCHEMA).parquet(src)).select(*columns)
    assert out.columns == batch.columns
    assert len([r for r in rows if r["rid"] in rids]) == len(rids)  # each row once
    _assert_as_spark(out, rows, batch, rids)


CDC = "k STRING, g BIGINT, ts TIMESTAMP, rid BIGINT, x DOUBLE, op STRING"
CDC_ARROW = pa.schema(
    [
        ("k", pa.string()),
        ("g", pa.int64()),
        ("ts", pa.timestamp("us")),
        ("rid", pa.int64()),
        ("x", pa.float64()),
        ("op", pa.string()),
    ]
)


def _cdc_batches() -> list[list[dict]]:
    """Three micro-batches of changes: inserts (ties in ts, NULL keys, NaN), then updates in place,
    deletes and moves (a delete and an insert of the same rid under other keys), then more."""
    start = dt.datetime(2024, 3, 1)
    first = [
        {
            "k": [None, "a", "b"][i % 3],
            "g": None if i % 5 == 0 else i % 2,
            "ts": start + dt.timedelta(seconds=10 * (i // 2)),
            "rid": i,
            "x": [1.5, None, math.nan, -2.0, 4.25, 0.0][i % 6],
            "op": "insert",
        }
        for i in range(24)
    ]
    live = {r["rid"]: r for r in first}
    second = [
        dict(live[3], x=10.0, op="update"),
        dict(live[4], op="delete"),
        dict(live[7], op="delete"),
        dict(live[7], k="b", g=None, op="insert"),  # moved in both partitionings
        dict(live[8], op="delete"),
        dict(live[8], g=1, op="insert"),  # moved in g only
        dict(live[0], ts=start + dt.timedelta(seconds=95), op="update"),
        {"k": "a", "g": 0, "ts": start + dt.timedelta(seconds=5), "rid": 100, "x": 3.0, "op": "insert"},
    ]
    third = [
        dict(live[10], op="delete"),
        {"k": None, "g": None, "ts": start + dt.timedelta(seconds=40), "rid": 101, "x": -1.0, "op": "insert"},
        dict(live[11], x=None, op="update"),
    ]
    return [first, second, third]


def _write(folder, i, batch):
    path = os.path.join(folder, f"part-{i}.parquet")
    pq.write_table(pa.Table.from_pylist(batch, schema=CDC_ARROW), path)
    os.utime(path, (time.time() + i, time.time() + i))


@pytest.mark.parametrize("qualify", [None, "rk <= 2"])
def test_sql_windows_over_several_partitionings_on_update_keep_the_batch_query(
    spark, rocksdb, tmp_path, qualify
):
    """The query stops after two micro-batches and restarts from its checkpoint for the third
    (both operators' state read back)."""
    src = str(tmp_path / "src")
    os.makedirs(src)
    batches = _cdc_batches()
    windows = (
        "SELECT rid, k, g, ts, x, "
        "lag(x) OVER (PARTITION BY k ORDER BY ts, rid) AS prev, "
        "sum(x) OVER (PARTITION BY g ORDER BY ts "
        "RANGE BETWEEN INTERVAL 20 SECONDS PRECEDING AND CURRENT ROW) AS s, "
        "rank() OVER (PARTITION BY k ORDER BY x DESC NULLS LAST) AS rk, "
        "count(*) OVER () AS n "
        "FROM {}"
    )
    query = windows + (f" QUALIFY {qualify}" if qualify else "")
    stream = spark.readStream.schema(CDC).option("maxFilesPerTrigger", 1).parquet(src)
    stream.createOrReplaceTempView("ow_multi_stream")
    out = overwindow.sql(
        spark, query.format("ow_multi_stream"), emit="on_update", rowKey="rid", opColumn="op"
    )
    per_batch = []
    for run in ([0, 1], [2]):
        for i in run:
            _write(src, i, batches[i])
        q = (
            out.writeStream.foreachBatch(lambda df, _: per_batch.append(compat.to_arrow(df).to_pylist()))
            .option("checkpointLocation", str(tmp_path / "chk"))
            .outputMode("append")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
    assert len(per_batch) == len(batches)
    table, live = {}, {}
    for changes, batch in zip(per_batch, batches):
        for r in batch:
            if r["op"] == "delete":
                live.pop(r["rid"], None)
            else:
                live[r["rid"]] = r
        assert len({r["rid"] for r in changes}) == len(changes)  # one change per row and batch
        for r in changes:
            if r["_change"] == "delete":
                assert r["rid"] in table
                del table[r["rid"]]
            else:
                table[r["rid"]] = r
        spark.createDataFrame(list(live.values()), CDC).createOrReplaceTempView("ow_multi_batch")
        want = spark.sql(
            f"SELECT * FROM ({windows.format('ow_multi_batch')})" + (f" WHERE {qualify}" if qualify else "")
        )
        assert out.columns == [*want.columns, "_change"]
        assert set(table) == {r["rid"] for r in want.collect()}
        _assert_as_spark(out, list(table.values()), want, set(table))


def _random_columns(rng, F, W) -> list:
    """A PySpark select list of random windows over three partitionings of ``_with_g``'s rows
    (by k: ts unique, so every function; by g and over all rows: ties in ts, so functions ties
    cannot change, over RANGE frames), some combined with each other or with input columns,
    at least one combining windows of two partitionings."""
    by = {"k": W.partitionBy("k").orderBy("ts"), "g": W.partitionBy("g").orderBy("ts"), "": W.orderBy("ts")}
    value = ["x", "n"]

    def window(part):
        w = by[part]
        if part == "k":
            kind = rng.choice(["lag", "lead", "row_number", "first", "rows", "rows", "rank"])
            if kind == "lag":
                return F.lag(rng.choice(value), int(rng.integers(1, 4)), rng.choice([None, 0.5])).over(w)
            if kind == "lead":
                return F.lead(rng.choice(value), int(rng.integers(1, 3))).over(w)
            if kind == "row_number":
                return F.row_number().over(w)
            if kind == "first":
                return F.first(rng.choice(value), ignorenulls=bool(rng.integers(0, 2))).over(
                    w.rowsBetween(int(rng.integers(-3, 1)), 0)
                )
            if kind == "rank":
                return F.rank().over(w)
            lo = W.unboundedPreceding if rng.random() < 0.3 else int(rng.integers(-3, 1))
            frame = w.rowsBetween(lo, int(rng.integers(0, 3)))
        else:
            kind = rng.choice(["rank", "dense_rank", "agg", "agg"])
            if kind == "rank":
                return F.rank().over(w)
            if kind == "dense_rank":
                return F.dense_rank().over(w)
            frame = w.rangeBetween(W.unboundedPreceding, W.currentRow) if rng.random() < 0.5 else w
        agg = rng.choice(["sum", "avg", "min", "max", "count"])
        return getattr(F, agg)(rng.choice(value)).over(frame)

    columns = ["rid", "k", "g", "ts"]
    parts = ["k", "g", ""]
    for i in range(int(rng.integers(3, 6))):
        part = parts[i % 3] if i < 3 else rng.choice(parts)
        columns.append(window(part).alias(f"w{i}"))
    a, b = rng.choice(parts, size=2, replace=False)
    combined = rng.choice(["minus", "plus_col", "coalesce"])
    if combined == "minus":
        both = window(a) - window(b)
    elif combined == "plus_col":
        both = window(a) + window(b) * F.col("n")
    else:
        both = F.coalesce(window(a).cast("double"), window(b).cast("double"), F.lit(-1.0))
    columns.append(both.alias("mixed"))
    return columns


SELECT_SEEDS = int(os.environ.get("OVERWINDOW_RANDOM_SELECTS", "2"))


@pytest.mark.parametrize("seed", range(SELECT_SEEDS))
def test_random_pyspark_windows_over_several_partitionings_equal_spark_batch(
    spark, rocksdb, chained, tmp_path, seed
):
    """Random window Columns over three partitionings, one combining two of them, through
    ``overwindow.select`` (even seeds on window close, odd on update keyed by rid, inserts only):
    Spark's batch ``select`` of the same columns over the same rows gives the names, types and
    values (``OVERWINDOW_RANDOM_SELECTS`` seeds; 2 by default)."""
    import numpy as np
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rng = np.random.default_rng(seed)
    columns = _random_columns(rng, F, Window)
    src, rids = _source(tmp_path)
    events = _with_g(spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src))
    everything = _with_g(spark.read.schema(SCHEMA).parquet(src))
    if seed % 2 == 0:
        out = overwindow.select(events.withWatermark("ts", "0 seconds"), *columns)
        rows = _collect(out, str(tmp_path / "chk"), "append")
        assert len([r for r in rows if r["rid"] in rids]) == len(rids), columns  # each row once
    else:
        out = overwindow.select(events, *columns, emit="on_update", rowKey="rid")
        table = {}
        for r in _collect(out, str(tmp_path / "chk"), "append"):  # the changelog in order
            table.pop(r["rid"]) if r["_change"] == "delete" else table.__setitem__(r["rid"], r)
        rows, rids = list(table.values()), {r.rid for r in everything.select("rid").collect()}
    batch = everything.select(*columns)
    assert out.columns[: len(batch.columns)] == batch.columns
    _assert_as_spark(out, rows, batch, rids)


def test_what_several_window_groups_need_is_asked_for(spark, rocksdb, tmp_path):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    (tmp_path / "none").mkdir()
    events = _with_g(spark.readStream.schema(SCHEMA).parquet(str(tmp_path / "none")))
    two = [
        F.lag("x").over(Window.partitionBy("k").orderBy("ts")),
        F.lag("x").over(Window.partitionBy("g").orderBy("ts")),
    ]
    with pytest.raises(WindowSpecError, match="on update need rowKey"):
        overwindow.select(events, "rid", *two, emit="on_update")
    closing = events.withWatermark("ts", "1 second")
    with pytest.raises(WindowSpecError, match="checkCorrectness.enabled', 'false'"):
        overwindow.select(closing, "rid", *two)
