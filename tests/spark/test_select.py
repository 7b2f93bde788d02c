"""``overwindow.select`` and ``overwindow.sql`` on streams equal Spark's batch ``df.select`` /
``spark.sql`` over the same rows: the same PySpark Columns and SQL text, the same column names,
order and types, the same values (files source -> select -> foreachBatch collector, as
test_parity_streams.py). Refusals name what the user wrote."""

import datetime as dt
import math
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.spark import compat
from overwindow.spark.handback import ROWS

SCHEMA = "k STRING, ts TIMESTAMP, rid BIGINT, n BIGINT, x DOUBLE"
ARROW = pa.schema(
    [
        ("k", pa.string()),
        ("ts", pa.timestamp("us")),
        ("rid", pa.int64()),
        ("n", pa.int64()),
        ("x", pa.float64()),
    ]
)
X = [None, math.nan, -0.0, 1.5, -2.25, 1e3, 7.0, 3.125, 4.0]


def _rows() -> list[dict]:
    """18 rows for each of three keys (one NULL): a row every 7 s from 2024-03-01, n rising by 0
    to 9 (ties), x from the edge cases."""
    rows, rid = [], 0
    for key in ("a", "b", None):
        n = 0
        for j in range(18):
            n += (j * 7 + len(key or "")) % 10
            rows.append(
                {
                    "k": key,
                    "ts": dt.datetime(2024, 3, 1) + dt.timedelta(seconds=7 * j),
                    "rid": rid,
                    "n": n,
                    "x": X[(j * 5 + rid) % len(X)],
                }
            )
            rid += 1
    return rows


def _source(tmp_path) -> tuple[str, set]:
    """The rows in one parquet file, then two files of one row per key a day and two days later
    (they close every window of a stream watermarked on ts, read a file per micro-batch). Returns
    the folder and the first file's row ids."""
    src = str(tmp_path / "src")
    os.makedirs(src)
    rows = _rows()
    last = {r["k"]: r for r in rows}
    far = [
        [
            dict(r, ts=r["ts"] + dt.timedelta(days=d), rid=1000 * d + r["rid"], n=r["n"] + 100 * d)
            for r in last.values()
        ]
        for d in (1, 2)
    ]
    for i, part in enumerate((rows, *far)):
        path = os.path.join(src, f"part-{i}.parquet")
        pq.write_table(pa.Table.from_pylist(part, schema=ARROW), path)
        os.utime(path, (time.time() + i, time.time() + i))
    return src, {r["rid"] for r in rows}


def _collect(out, chk, mode) -> list[dict]:
    got = []
    q = (
        out.writeStream.foreachBatch(lambda df, _: got.append(compat.to_arrow(df)))
        .option("checkpointLocation", chk)
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return pa.concat_tables(got).to_pylist() if got else []


def _applied(changes, key: str = "rid") -> dict:
    """The table a changelog keyed by ``key`` leaves: key -> its last upserted row."""
    table = {}
    for r in changes:
        if r["_change"] == "delete":
            table.pop(r[key], None)
        else:
            table[r[key]] = r
    return table


def _same(got, want) -> bool:
    if want is None or got is None:
        return got is None and want is None
    if isinstance(want, float):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return got == want or math.isclose(got, want, rel_tol=1e-9)
    return got == want


def _assert_as_spark(out, rows, batch, rids):
    """The stream's columns, types and values (rows by rid, those in ``rids``) are Spark's batch."""
    want_types = batch.dtypes
    assert out.dtypes[: len(want_types)] == want_types
    want = {r["rid"]: r for r in compat.to_arrow(batch).to_pylist()}
    names = batch.columns
    seen = set()
    for r in rows:
        if r["rid"] in rids:
            seen.add(r["rid"])
            for c in names:
                assert _same(r[c], want[r["rid"]][c]), (c, r, want[r["rid"]])
    assert seen == rids


def _stream_as_spark(spark, src, columns, chk, rids, emit="on_window_close"):
    """``overwindow.select(events, *columns, rowKey="rid")`` over a stream of ``src``'s files (a
    micro-batch each; watermarked on ts on window close) equals Spark's batch ``df.select(*columns)``
    over the same rows: its names, types and values, on window close of the rows emitted (every row
    of ``rids``), on update of the table its changelog leaves (holding every row of ``rids``).
    Returns the stream's DataFrame."""
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    batch = spark.read.schema(SCHEMA).parquet(src).select(*columns)
    if emit == "on_window_close":
        out = overwindow.select(events.withWatermark("ts", "0 seconds"), *columns, rowKey="rid")
        rows = _collect(out, chk, "append")
        assert out.columns == batch.columns
        _assert_as_spark(out, rows, batch, rids)
        return out
    out = overwindow.select(events, *columns, emit="on_update", rowKey="rid")
    table = _applied(_collect(out, chk, "update"))
    assert out.columns == [*batch.columns, "_change"]
    _assert_as_spark(out, list(table.values()), batch, set(table))
    assert rids <= set(table)
    return out


def test_pyspark_columns_on_window_close_equal_spark_batch(spark, tmp_path):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    src, rids = _source(tmp_path)
    w = Window.partitionBy("k").orderBy("ts")

    def columns(text):
        return [
            "k",
            F.col("ts"),
            "rid",
            (F.col("x") * 2).alias("x2"),
            F.lag("x").over(w).alias("prev"),
            F.lag("x", 2, 0).over(w),
            F.lead("x").over(w),
            F.avg("x").over(w.rowsBetween(-9, 0)),
            F.row_number().over(w),
            F.rank().over(w),
            F.sum("n").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("total"),
            (F.col("x") - F.lag("x").over(w)).alias("dx"),
            F.first("x", ignorenulls=True).over(w.rowsBetween(-3, 0)).alias("fx"),
            # scalar functions over and inside windows: ROUND, IF/CASE, GREATEST, <=>, CEIL, NULLIF
            F.round(F.avg("x").over(w.rowsBetween(-2, 0)), 1).alias("r1"),
            F.sum(F.when(F.col("x") > 1, 1).otherwise(0)).over(w).alias("above"),
            F.greatest(F.lag("x").over(w), F.col("x")).alias("g"),
            F.lag(F.col("x").eqNullSafe(F.lit(1.5))).over(w).alias("same"),
            F.lag(F.ceil("x")).over(w).alias("cx"),
            F.lag(F.expr("nullif(bround(x, 0), 4)")).over(w).alias("nx"),
            (F.unix_timestamp("ts") - F.lag(F.unix_timestamp("ts")).over(w)).alias("gap_s"),
            F.datediff(F.col("ts"), F.lag("ts").over(w)).alias("gap_d"),
            F.lag(F.hour("ts")).over(w).alias("h"),
            text(
                "count(*) OVER (PARTITION BY k ORDER BY ts "
                "RANGE BETWEEN INTERVAL 20 SECONDS PRECEDING AND CURRENT ROW) AS c20"
            ),
        ]

    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    out = overwindow.select(events.withWatermark("ts", "0 seconds"), *columns(lambda t: t), rowKey="rid")
    rows = _collect(out, str(tmp_path / "chk"), "append")
    batch = spark.read.schema(SCHEMA).parquet(src).select(*columns(F.expr))
    assert out.columns == batch.columns
    _assert_as_spark(out, rows, batch, rids)


def test_pyspark_range_frame_on_update_equals_spark_batch(spark, tmp_path):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    src, rids = _source(tmp_path)
    w = Window.partitionBy("k").orderBy("n")
    columns = [
        "*",
        F.sum("x").over(w.rangeBetween(-10, Window.currentRow)).alias("s10"),
        F.count("x").over(w.rangeBetween(-5, 5)).alias("c5"),
        F.dense_rank().over(w).alias("dr"),
    ]
    _stream_as_spark(spark, src, columns, str(tmp_path / "chk"), rids, emit="on_update")


def test_sql_over_a_streaming_view_with_where_equals_spark_sql(spark, tmp_path):
    src, _ = _source(tmp_path)
    query = (
        "SELECT rid, k, x, lag(x, 1, -1.0) OVER (PARTITION BY k ORDER BY ts) AS prev, "
        "x - avg(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS off, "
        "round(avg(x) OVER (PARTITION BY k ORDER BY ts ROWS 1 PRECEDING), 2) AS r2, "
        "sum(IF(x > 1, 1, 0)) OVER (PARTITION BY k ORDER BY ts) AS above, "
        "row_number() OVER (PARTITION BY k ORDER BY ts) FROM {} WHERE x IS NOT NULL AND rid % 3 != 1"
    )
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    stream.withWatermark("ts", "0 seconds").createOrReplaceTempView("ow_select_stream")
    spark.read.schema(SCHEMA).parquet(src).createOrReplaceTempView("ow_select_batch")
    out = overwindow.sql(spark, query.format("ow_select_stream"), rowKey="rid")
    rows = _collect(out, str(tmp_path / "chk"), "append")
    batch = spark.sql(query.format("ow_select_batch"))
    assert out.columns == batch.columns
    kept = {r["rid"] for r in compat.to_arrow(batch).to_pylist() if r["rid"] < 1000}
    _assert_as_spark(out, rows, batch, kept)


def test_a_query_holds_only_the_input_columns_its_result_keeps(spark, tmp_path):
    """The stateful operator takes every input column and hands back (as Arrow, ``handback``) only
    those the result keeps and its windows read (``rid`` and ``n`` stay out of the state); the values
    are Spark's batch SQL, and the ``_row_id`` of each row is the one a query keeping every column
    gives it (a row without a row key is its whole input row)."""
    import re

    src, _ = _source(tmp_path)
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    stream.createOrReplaceTempView("ow_carried_stream")
    spark.read.schema(SCHEMA).parquet(src).createOrReplaceTempView("ow_carried_batch")
    query = "SELECT k, ts, x - lag(x) OVER (PARTITION BY k ORDER BY ts) AS d FROM {}"
    out = overwindow.sql(spark, query.format("ow_carried_stream"), emit="on_update")
    plan = out._jdf.queryExecution().analyzed().toString()
    # its rows come back as Arrow streams, one binary column, which the mapInArrow after it opens
    (operator,) = [x for x in plan.splitlines() if "FlatMapGroupsInPandasWithState" in x]
    assert set(re.findall(r"(\w+)#\d+", operator.split("], [")[1])) == {ROWS}
    (line,) = [x for x in plan.splitlines() if "MapInArrow" in x]
    handed_back = set(re.findall(r"(\w+)#\d+", line.split(", [")[1]))
    assert {"k", "ts", "x"} <= handed_back and not {"rid", "n"} & handed_back
    kept = _applied_by_id(_collect(out, str(tmp_path / "chk"), "update"))
    want = compat.to_arrow(spark.sql(query.format("ow_carried_batch"))).to_pylist()
    assert set(kept) == {(r["k"], r["ts"]) for r in want} and len(kept) == len(want)
    for r in want:
        assert _same(kept[(r["k"], r["ts"])]["d"], r["d"]), r
    every = "SELECT *, x - lag(x) OVER (PARTITION BY k ORDER BY ts) AS d FROM ow_carried_stream"
    whole = _applied_by_id(
        _collect(overwindow.sql(spark, every, emit="on_update"), str(tmp_path / "chk2"), "update")
    )
    assert {k: r["_row_id"] for k, r in kept.items()} == {k: r["_row_id"] for k, r in whole.items()}


def _applied_by_id(changes) -> dict:
    """The table a changelog keyed by ``_row_id`` leaves, by (k, ts) (one row each here)."""
    return {(r["k"], r["ts"]): r for r in _applied(changes, "_row_id").values()}


@pytest.fixture
def events(spark, tmp_path):
    (tmp_path / "none").mkdir()
    return spark.readStream.schema(SCHEMA).parquet(str(tmp_path / "none")).withWatermark("ts", "1 second")


def test_refusals_name_what_the_user_wrote(events):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("k").orderBy("ts")
    # several PARTITION BY or ORDER BY run on transformWithStateInPandas (test_multi_window.py)
    needs = "in one query runs on Spark's transformWithStateInPandas, which needs the RocksDB state store"
    if compat.version() < compat.SPARK_4:
        needs = "in one query .* needs PySpark 4.0 or later"
    for other in (Window.partitionBy("n").orderBy("ts"), Window.partitionBy("k").orderBy("n")):
        with pytest.raises(WindowSpecError, match=needs):
            overwindow.select(events, "k", F.lag("x").over(w).alias("prev"), F.avg("x").over(other))
    udf = F.udf(lambda v: v, "double")
    with pytest.raises(WindowSpecError, match="Python UDF"):
        overwindow.select(events, F.lag(udf("x")).over(w))
    with pytest.raises(WindowSpecError, match="(?i)hll_sketch_agg.*is not computed over a window"):
        overwindow.select(events, F.hll_sketch_agg("n").over(w).alias("sketch"))
    with pytest.raises(WindowSpecError, match=r"TIMESTAMP column \(`n` is BIGINT\): use emit=\"on_update\""):
        overwindow.select(events, F.lag("x").over(Window.partitionBy("k").orderBy("n")))
    with pytest.raises(WindowSpecError, match="JOIN is not supported yet"):
        overwindow.sql(
            events.sparkSession, "SELECT lag(x) OVER (ORDER BY ts) AS p FROM a JOIN b ON a.k = b.k"
        )


def test_a_struct_field_is_read_as_spark_reads_it_not_as_the_top_level_column_of_its_name(spark, tmp_path):
    """Spark reads ``s.a`` as the field ``a`` of the struct column ``s``, not the top-level column
    ``a`` beside it; on a stream Spark computes it (the bind step), so the stream reads the field
    too, in arguments and in ORDER BY, and a qualifier naming the view (``v.a``) reads the column."""
    import pyarrow.parquet as pq
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    schema = "k STRING, ts TIMESTAMP, s STRUCT<a: BIGINT, t: TIMESTAMP>, a BIGINT"
    t0 = dt.datetime(2024, 3, 1)
    rows = [("k", t0 + dt.timedelta(seconds=i), (10 * i, t0 + dt.timedelta(seconds=-i)), i) for i in range(6)]
    src = tmp_path / "src"
    src.mkdir()
    arrow = pa.Table.from_pylist(
        [{"k": k, "ts": ts, "s": {"a": sa, "t": st}, "a": a} for k, ts, (sa, st), a in rows]
    )
    pq.write_table(arrow, str(src / "part-0.parquet"))
    w = Window.partitionBy("k").orderBy("ts")
    by_field = Window.partitionBy("k").orderBy("s.t")
    batch = spark.read.schema(schema).parquet(str(src))
    got = compat.to_arrow(batch.select("ts", F.lag("s.a").over(w), F.lag("a").over(w))).sort_by("ts")
    assert [c.to_pylist() for c in got.columns[1:]] == [[None, 0, 10, 20, 30, 40], [None, 0, 1, 2, 3, 4]]
    stream = spark.readStream.schema(schema).parquet(str(src))
    for n, columns in enumerate(
        [
            ["k", "ts", F.lag("s.a").over(w).alias("p"), F.lag("a").over(w).alias("q")],
            ["k", "ts", F.lag("a").over(by_field).alias("p"), F.sum("s.a").over(by_field).alias("q")],
        ]
    ):
        out = overwindow.select(stream, *columns, emit="on_update", rowKey="ts")
        changes = _collect(out, str(tmp_path / f"chk{n}"), "update")
        table = {r["ts"]: (r["p"], r["q"]) for r in changes if r["_change"] == "upsert"}
        want = {r["ts"]: (r["p"], r["q"]) for r in compat.to_arrow(batch.select(*columns)).to_pylist()}
        assert table == want
    stream.withWatermark("ts", "1 second").createOrReplaceTempView("v")
    kept = overwindow.sql(spark, "SELECT k, lag(v.a) OVER (PARTITION BY k ORDER BY ts) AS p FROM v")
    assert kept.columns == ["k", "p"]
    # a carried struct field is Spark's to compute: the field (a TIMESTAMP), not the BIGINT `a`
    carried = overwindow.sql(
        spark, "SELECT k, s.t AS st, v.a, lag(a) OVER (PARTITION BY k ORDER BY ts) AS p FROM v"
    )
    assert [(f.name, f.dataType.simpleString()) for f in carried.schema.fields][:3] == [
        ("k", "string"),
        ("st", "timestamp"),
        ("a", "bigint"),
    ]


def test_a_query_reads_string_literals_as_spark_does():
    """WHERE, QUALIFY and the SELECT list read 'it''s' as the string it's and 'a' 'b' as ab, as
    Spark does (sqlglot reads both as CONCAT calls, which Spark's WHERE would then compare with)."""
    from overwindow.spark.query import parse_query

    q = parse_query(
        "SELECT k, lag(s, 1, 'a' \"b\") OVER (ORDER BY ts) AS p FROM v WHERE s = 'it''s' QUALIFY p <> 'a' 'b'"
    )
    assert (q.where, q.filter) == ("s = 'it\\'s'", "p <> 'ab'")
    assert q.columns[1].sql(dialect="spark") == "LAG(s, 1, 'ab') OVER (ORDER BY ts) AS p"


def test_a_timestamp_ntz_value_of_a_call_is_refused_on_a_stream(spark, tmp_path):
    """Spark's batch types ``lag(n)`` of a TIMESTAMP_NTZ column TIMESTAMP_NTZ; a stream's naive
    timestamps are TIMESTAMP to overwindow, so the stream would declare TIMESTAMP: refused before
    it starts, for a column and for a CAST, while ORDER BY and PARTITION BY may read one."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType

    schema = "k STRING, ts TIMESTAMP, n TIMESTAMP_NTZ"
    w = Window.partitionBy("k").orderBy("ts")
    batch = spark.createDataFrame([], schema).select(F.lag("n").over(w).alias("p"))
    assert isinstance(batch.schema["p"].dataType, TimestampNTZType)
    (tmp_path / "none").mkdir()
    stream = spark.readStream.schema(schema).parquet(str(tmp_path / "none")).withWatermark("ts", "1 second")
    with pytest.raises(WindowSpecError, match=r"lag\(n\) reads a TIMESTAMP_NTZ value \(`n`\)"):
        overwindow.select(stream, "k", F.lag("n").over(w).alias("p"))
    with pytest.raises(
        WindowSpecError, match=r"lag\(CAST\(ts AS TIMESTAMP_NTZ\)\) reads.*not supported on streams yet"
    ):
        stream.groupBy("k").overWindow(
            overwindow.OverWindow("lag(CAST(ts AS TIMESTAMP_NTZ)) OVER (ORDER BY ts) AS p", emit="on_update")
        )
    # Spark types coalesce(n, ts) TIMESTAMP, and so does the stream (Spark computes it)
    widened = F.last_value(F.coalesce("n", "ts")).over(w).alias("lv")
    assert spark.createDataFrame([], schema).select(widened).dtypes == [("lv", "timestamp")]
    kept = overwindow.select(
        stream,
        "k",
        F.count("n").over(w).alias("c"),
        F.lag(F.col("n").cast("timestamp")).over(w).alias("lt"),
        F.lag(F.col("n").isNull()).over(w).alias("ln"),
        widened,
    )
    assert kept.columns == ["k", "c", "lt", "ln", "lv"] and kept.dtypes[-1] == ("lv", "timestamp")
