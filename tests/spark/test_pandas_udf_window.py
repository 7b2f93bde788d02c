"""Grouped-aggregate pandas_udfs over windows on a stream equal Spark's batch over the same rows
(``overwindow.spark.pandas_udf``): the same PySpark Columns, run by Spark's batch ``df.select`` and
by ``overwindow.select`` on a stream (files source -> foreachBatch collector, as test_select.py),
on window close and on update, over ROWS sliding, running, RANGE and whole-partition frames, of
one and two arguments, DOUBLE and INT results; random rows (hypothesis draws the seed) holding NULL,
NaN, +-inf, -0.0, NULL keys and ties. A frame the function raises on is a row set aside and
counted. (The frames Spark refuses for a pandas_udf are refused in tests/test_udaf.py.)"""

import datetime as dt
import math
import os
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_select import ARROW, SCHEMA, _applied, _assert_as_spark, _collect, _stream_as_spark

import overwindow

X = [None, math.nan, math.inf, -math.inf, -0.0, 1.5, -2.25, 1e3, 7.0, 3.125]
EXAMPLES = settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    phases=[Phase.generate],  # no shrinking: each example is a streaming query
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _udfs():
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("double")
    def mean_udf(v: pd.Series) -> float:
        return v.mean()

    @pandas_udf("int")
    def count_udf(v: pd.Series, w: pd.Series) -> int:
        return int(v.notna().sum() + w.isna().sum())

    @pandas_udf("double")
    def weighted(v: pd.Series, w: pd.Series) -> float:
        return float((v.fillna(0.0) * w).sum()) if len(v) else None

    return mean_udf, count_udf, weighted


def _source(tmp_path, seed: int) -> tuple[str, set]:
    """Random rows for keys a, b and NULL in three parquet files (a micro-batch each: the second's
    rows fall among the first's), then three files of a row per key one, two and three days later,
    closing every window (a frame reaching 2 FOLLOWING waits for two rows after the key's last, and
    the watermark past the second of them: the third moves it there). Per key ``ts``
    rises (ROWS frames need a total order), ``n`` has ties. Returns the folder and the rows' ids."""
    rng = np.random.default_rng(seed)
    rows, rid = [], 0
    start = dt.datetime(2024, 3, 1)
    for key in ("a", "b", None):
        n = 0
        for j in range(int(rng.integers(1, 14))):
            n += int(rng.integers(0, 3))
            rows.append(
                {
                    "k": key,
                    "ts": start + dt.timedelta(seconds=2 * j),
                    "rid": rid,
                    "n": n,
                    "x": X[int(rng.integers(0, len(X)))],
                }
            )
            rid += 1
    order = rng.permutation(len(rows))
    first, second = [rows[i] for i in order[::2]], [rows[i] for i in order[1::2]]
    last = {r["k"]: r for r in rows}
    far = [
        [
            dict(r, ts=r["ts"] + dt.timedelta(days=d), rid=10_000 * d + r["rid"], n=r["n"] + 100 * d)
            for r in last.values()
        ]
        for d in (1, 2, 3)
    ]
    src = str(tmp_path / "src")
    os.makedirs(src)
    for i, part in enumerate((first, second, *far)):
        path = os.path.join(src, f"part-{i}.parquet")
        pq.write_table(pa.Table.from_pylist(part, schema=ARROW), path)
        os.utime(path, (time.time() + i, time.time() + i))
    return src, {r["rid"] for r in rows}


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_pandas_udf_windows_on_window_close_equal_spark_batch(spark, tmp_path_factory, seed):
    from pyspark.sql import Window

    tmp_path = tmp_path_factory.mktemp("close")
    src, rids = _source(tmp_path, seed)
    mean_udf, count_udf, weighted = _udfs()
    w = Window.partitionBy("k").orderBy("ts")
    columns = [
        "k",
        "ts",
        "rid",
        mean_udf("x").over(w.rowsBetween(-2, 0)).alias("m3"),
        count_udf("x", "n").over(w.rowsBetween(-1, 1)).alias("c"),
        weighted("x", "n").over(w).alias("running"),
        mean_udf("x").over(w.rowsBetween(Window.unboundedPreceding, -1)).alias("before"),
        mean_udf("x").over(w.rowsBetween(1, 2)).alias("ahead"),
    ]
    _stream_as_spark(spark, src, columns, str(tmp_path / "chk"), rids)


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_pandas_udf_windows_on_update_equal_spark_batch(spark, tmp_path_factory, seed):
    from pyspark.sql import Window

    tmp_path = tmp_path_factory.mktemp("update")
    src, rids = _source(tmp_path, seed)
    mean_udf, count_udf, weighted = _udfs()
    w = Window.partitionBy("k").orderBy("n")
    columns = [
        "*",
        mean_udf("x").over(w.rangeBetween(-2, 0)).alias("m2"),
        count_udf("x", "rid").over(w.rangeBetween(-1, 3)).alias("c"),
        weighted("x", "n").over(w).alias("running"),
        mean_udf("x")
        .over(w.rangeBetween(Window.unboundedPreceding, Window.unboundedFollowing))
        .alias("whole"),
        weighted("x", "rid")
        .over(w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))
        .alias("all"),
    ]
    _stream_as_spark(spark, src, columns, str(tmp_path / "chk"), rids, emit="on_update")


# pandas_udfs called by the names Spark's session registered them under, in SQL text
BY_NAME = (
    "SELECT k, ts, rid, ow_wavg(x, n) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) AS w3, "
    "round(ow_mean(x) OVER (PARTITION BY k ORDER BY ts), 3) AS running, "
    "x - ow_mean(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS dx "
    "FROM {}"
)


@pytest.mark.parametrize("emit", ["on_window_close", "on_update"])
def test_pandas_udfs_registered_by_name_run_in_sql_text_as_spark_batch_sql(spark, tmp_path, emit):
    """``spark.udf.register("ow_wavg", weighted)``, then ``overwindow.sql`` of a query calling it by
    name (sliding, running and centred frames, under an expression Spark computes after the
    windows) equals Spark's batch SQL of the same query over the same rows: names, types, values."""
    mean_udf, _, weighted = _udfs()
    spark.udf.register("ow_wavg", weighted)
    spark.udf.register("ow_mean", mean_udf)
    src, rids = _source(tmp_path, 39)
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    if emit == "on_window_close":
        events = events.withWatermark("ts", "0 seconds")
    events.createOrReplaceTempView("ow_by_name_s")
    spark.read.schema(SCHEMA).parquet(src).createOrReplaceTempView("ow_by_name_b")
    batch = spark.sql(BY_NAME.format("ow_by_name_b"))
    out = overwindow.sql(spark, BY_NAME.format("ow_by_name_s"), emit=emit, rowKey="rid")
    chk = str(tmp_path / "chk")
    if emit == "on_window_close":
        rows = _collect(out, chk, "append")
    else:
        rows = list(_applied(_collect(out, chk, "update")).values())
    assert out.columns[: len(batch.columns)] == batch.columns
    _assert_as_spark(out, rows, batch, rids)


def test_a_frame_the_function_raises_on_is_a_row_set_aside_and_counted(spark, tmp_path):
    from pyspark.sql import Window
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("double")
    def picky(v: pd.Series) -> float:
        if (v == 7.0).any():
            raise ValueError("seven")
        return float(v.sum())

    src = str(tmp_path / "src")
    os.makedirs(src)
    rows = [
        {"k": "a", "ts": dt.datetime(2024, 3, 1, 0, 0, s), "rid": s, "n": s, "x": x}
        for s, x in enumerate([1.0, 2.0, 7.0, 3.0, 4.0, 5.0])
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=ARROW), os.path.join(src, "part-0.parquet"))
    events = spark.readStream.schema(SCHEMA).parquet(src)
    w = Window.partitionBy("k").orderBy("n").rowsBetween(-1, 0)
    out = overwindow.select(events, "rid", picky("x").over(w).alias("p"), emit="on_update", rowKey="rid")
    got = {
        r["rid"]: r["p"] for r in _collect(out, str(tmp_path / "chk"), "update") if r["_change"] != "delete"
    }
    # rows 2 and 3 read the 7.0: set aside, not NULL; the others are Spark's sums
    assert got == {0: 1.0, 1: 3.0, 4: 7.0, 5: 9.0}
    assert out.overwindow_counts.take()[2] == 2  # set aside, counted
