"""Runs a small emit-on-window-close view through Spark Connect (a local Connect server), with a
state per key and with keys in buckets (whole state, and on PySpark 4.1+ split state, tagged
``bucketed_chunked``), and the same calls on emit on update in buckets (whole and
chunked state layout; the chunked one first refused on the default state store,
``chunked_refused``; on PySpark 4.0 only its refusal, ``chunked_version_refused``), and prints the
emitted rows as JSON lines (tagged with the hosting); then ``overwindow.select`` over PySpark
window Columns on the same stream, and Spark's own batch ``select`` of the same Columns over the
same rows (tagged ``select`` and ``select_batch``, their column types ``select_types``), and the
same for windows over two partitionings on update (``several``; on PySpark 4.0 its refusal,
``several_refused``). The Columns include a grouped-aggregate pandas_udf over a window. Used by
test_spark_connect.py in a subprocess."""

import json
import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.sql import SparkSession  # noqa: E402

import overwindow  # noqa: E402
from overwindow.spark import compat  # noqa: E402


def main(src: str, work: str) -> None:
    spark = (
        SparkSession.builder.remote("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    events = (
        spark.readStream.schema("k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE")
        .json(src)
        .withWatermark("ts", "5 seconds")
    )
    calls = ("sum(x) OVER (ORDER BY ts ROWS 1 PRECEDING) AS s", "lag(x) OVER (ORDER BY ts) AS p")
    # a state per key, keys in 2 buckets, and the buckets chosen without keyBuckets
    for hosting, buckets in (("per_key", "per key"), ("bucketed", 2), ("chosen", None)):
        window_close(
            spark,
            events,
            calls,
            work,
            hosting,
            overwindow.OverWindow(*calls, rowKey="rid", keyBuckets=buckets),
        )
    # emit on update on buckets, whole state (applyInPandasWithState) and chunked
    # (transformWithStateInPandas, which Spark runs only on the RocksDB state store: set on the
    # Connect session at run time, as a user would): one micro-batch, so each row comes once, as an
    # upsert
    for hosting, layout in (("on_update_bucketed", "whole"), ("on_update_chunked_bucketed", "chunked")):
        spec = overwindow.OverWindow(*calls, emit="on_update", rowKey="rid", keyBuckets=2, stateLayout=layout)
        if layout == "chunked" and compat.version() < compat.CONNECT_TRANSFORM_WITH_STATE:
            try:  # 4.0's Connect GroupedData has no transformWithStateInPandas: refused up front
                events.groupBy("k").overWindow(spec)
            except compat.SparkVersionError as e:
                print(json.dumps({"hosting": "chunked_version_refused", "message": str(e)}))
            continue
        if layout == "chunked":
            # the session's default store first: refused before a query starts, naming the setting
            refused = overwindow.OverWindow(*calls, emit="on_update", rowKey="rid", stateLayout="chunked")
            try:
                events.groupBy("k").overWindow(refused)
            except overwindow.WindowSpecError as e:
                print(json.dumps({"hosting": "chunked_refused", "message": str(e)}))
            spark.conf.set(
                "spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
            )
        q = events.groupBy("k").overWindow(spec).writeStream.format("memory").queryName(f"ow_{hosting}")
        q.outputMode("update").trigger(availableNow=True).start().awaitTermination()
        for row in spark.table(f"ow_{hosting}").toPandas().to_dict("records"):
            fields = {k: (str(v) if k == "ts" else v) for k, v in row.items()}
            print(json.dumps({"hosting": hosting, **fields}))
    if compat.version() >= compat.CONNECT_TRANSFORM_WITH_STATE:  # on RocksDB, set above
        spec = overwindow.OverWindow(*calls, rowKey="rid", keyBuckets=2, stateLayout="chunked")
        window_close(spark, events, calls, work, "bucketed_chunked", spec)
    select_columns(spark, src, events)
    spark.stop()


def window_close(spark, events, calls, work: str, hosting: str, spec) -> None:
    """Emit on window close of ``spec`` into parquet, one availableNow run; prints its rows."""
    out = events.groupBy("k").overWindow(spec)
    q = (
        out.writeStream.format("parquet")
        .option("path", f"{work}/out-{hosting}")
        .option("checkpointLocation", f"{work}/chk-{hosting}")
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    for row in spark.read.parquet(f"{work}/out-{hosting}").toPandas().to_dict("records"):
        print(json.dumps({"hosting": hosting, **{k: (str(v) if k == "ts" else v) for k, v in row.items()}}))


def select_columns(spark, src: str, events) -> None:
    import pandas as pd
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    @F.pandas_udf("double")
    def mean_udf(v: pd.Series) -> float:
        return v.mean()

    w = Window.partitionBy("k").orderBy("ts")
    columns = [
        "k",
        "rid",
        F.lag("x").over(w).alias("p"),
        mean_udf("x").over(w.rowsBetween(-2, 0)).alias("m3"),  # a grouped-aggregate pandas_udf
        F.avg("x").over(w.rowsBetween(-2, 0)),
        F.row_number().over(w),
        (F.col("x") - F.lag("x", 2, 0).over(w)).alias("d"),
        "sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 1 PRECEDING) AS s",
    ]
    assert type(columns[2]).__module__.startswith("pyspark.sql.connect")
    out = overwindow.select(events, *columns, rowKey="rid")
    q = out.writeStream.format("memory").queryName("ow_select").outputMode("append")
    q.trigger(availableNow=True).start().awaitTermination()
    batch_columns = [F.expr(c) if isinstance(c, str) and " OVER " in c else c for c in columns]
    batch = spark.read.schema("k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE").json(src).select(*batch_columns)
    print(json.dumps({"hosting": "select_types", "stream": out.dtypes, "batch": batch.dtypes}))
    for hosting, df in (("select", spark.table("ow_select")), ("select_batch", batch)):
        for row in df.collect():
            print(json.dumps({"hosting": hosting, "row": list(row)}))
    several_groups(spark, src, events)


def several_groups(spark, src: str, events) -> None:
    """Windows over two partitionings and a column combining them, on update (one micro-batch: each
    row once, an upsert): the fan-out's two chained operators through Connect (RocksDB, set at run
    time as a user would); on PySpark 4.0, whose Connect has no transformWithStateInPandas, the
    refusal."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark.conf.set(
        "spark.sql.streaming.stateStore.providerClass",
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    )
    by_key, everyone = Window.partitionBy("k").orderBy("ts"), Window.orderBy("ts")
    columns = [
        "rid",
        F.lag("x").over(by_key).alias("p"),
        F.count("*").over(everyone).alias("n"),
        (F.sum("x").over(by_key) - F.max("x").over(everyone.rowsBetween(-3, 0))).alias("mixed"),
    ]
    if compat.version() < compat.CONNECT_TRANSFORM_WITH_STATE:  # 4.0's Connect has no such operator
        try:
            overwindow.select(events, *columns, emit="on_update", rowKey="rid")
        except compat.SparkVersionError as e:
            print(json.dumps({"hosting": "several_refused", "message": str(e)}))
        return
    out = overwindow.select(events, *columns, emit="on_update", rowKey="rid")
    q = out.writeStream.format("memory").queryName("ow_several").outputMode("append")
    q.trigger(availableNow=True).start().awaitTermination()
    batch = spark.read.schema("k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE").json(src).select(*columns)
    print(json.dumps({"hosting": "several_types", "stream": out.dtypes, "batch": batch.dtypes}))
    for hosting, df in (("several", spark.table("ow_several")), ("several_batch", batch)):
        for row in df.collect():
            print(json.dumps({"hosting": hosting, "row": list(row)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
