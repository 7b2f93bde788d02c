"""PySpark Columns read as the SQL a user would write: the same window Column built with classic
PySpark (its JVM ColumnNode) and with Spark Connect's Python objects (no server needed) translates
into the same window calls as the SQL text beside it; what cannot be translated is named."""

import pytest

from overwindow.errors import WindowSpecError
from overwindow.logical.parse import parse_window
from overwindow.spark import columns as C
from overwindow.spark.column_sql import to_sql

# (the Column, built from a functions module F and a Window class W; the SQL it means)
CASES = [
    (lambda F, W, w: F.lag("x").over(w), "lag(x) OVER (PARTITION BY k ORDER BY ts)"),
    (lambda F, W, w: F.lag("x", 2, 0).over(w), "lag(x, 2, 0) OVER (PARTITION BY k ORDER BY ts)"),
    (lambda F, W, w: F.lead("x", 3).over(w), "lead(x, 3) OVER (PARTITION BY k ORDER BY ts)"),
    (
        lambda F, W, w: F.avg("x").over(w.rowsBetween(-9, 0)),
        "avg(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 9 PRECEDING AND CURRENT ROW)",
    ),
    (
        lambda F, W, w: F.sum("x").over(w.rowsBetween(W.unboundedPreceding, W.currentRow)),
        "sum(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
    ),
    (
        lambda F, W, w: F.sum("x").over(W.partitionBy("k").orderBy("n").rangeBetween(-10, W.currentRow)),
        "sum(x) OVER (PARTITION BY k ORDER BY n RANGE BETWEEN 10 PRECEDING AND CURRENT ROW)",
    ),
    (
        lambda F, W, w: F.max(F.col("x") * 2).over(w.rowsBetween(-1, W.unboundedFollowing)),
        "max(x * 2) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND UNBOUNDED FOLLOWING)",
    ),
    (lambda F, W, w: F.row_number().over(w), "row_number() OVER (PARTITION BY k ORDER BY ts)"),
    (lambda F, W, w: F.rank().over(w), "rank() OVER (PARTITION BY k ORDER BY ts)"),
    (lambda F, W, w: F.ntile(4).over(w), "ntile(4) OVER (PARTITION BY k ORDER BY ts)"),
    (lambda F, W, w: F.count("*").over(w), "count(*) OVER (PARTITION BY k ORDER BY ts)"),
    (
        lambda F, W, w: F.first("x", ignorenulls=True).over(w),
        "first_value(x) IGNORE NULLS OVER (PARTITION BY k ORDER BY ts)",
    ),
    (
        lambda F, W, w: F.stddev("x").over(W.partitionBy("k", "j").orderBy(F.col("ts").desc(), "n")),
        "stddev_samp(x) OVER (PARTITION BY k, j ORDER BY ts DESC NULLS LAST, n)",
    ),
    (
        lambda F, W, w: F.mean(F.when(F.col("x") > 1, F.col("x")).otherwise(0)).over(W.orderBy("ts")),
        "avg(CASE WHEN x > 1 THEN x ELSE 0 END) OVER (ORDER BY ts)",
    ),
    (
        lambda F, W, w: (F.col("x") - F.lag("x").over(w)).alias("d"),
        "x - lag(x) OVER (PARTITION BY k ORDER BY ts) AS d",
    ),
    (
        lambda F, W, w: F.expr("lag(x) OVER (PARTITION BY k ORDER BY ts)").alias("a"),
        "lag(x) OVER (PARTITION BY k ORDER BY ts) AS a",
    ),
    (lambda F, W, w: F.expr("lag(x)").over(w), "lag(x) OVER (PARTITION BY k ORDER BY ts)"),
    # what the reader has no node of its own for: an element of an array, a struct's field
    (
        lambda F, W, w: F.lag(F.array("x", "n")[1]).over(w),
        "lag(array(x, n)[1]) OVER (PARTITION BY k ORDER BY ts)",
    ),
    (lambda F, W, w: F.lag(F.col("s")["a"]).over(w), "lag(s['a']) OVER (PARTITION BY k ORDER BY ts)"),
]


def _calls(sql: str):
    return parse_window(sql if " AS " in sql else sql + " AS a").calls


def _check(F, W):
    w = W.partitionBy("k").orderBy("ts")
    for build, want in CASES:
        node = C.read(build(F, W, w))
        assert node.has_window
        assert _calls(to_sql(node)) == _calls(want), (to_sql(node), want)


def test_connect_columns_translate_as_sql():
    from pyspark.sql.connect import functions as F
    from pyspark.sql.connect.window import Window

    _check(F, Window)


def test_classic_columns_translate_as_sql(spark):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    _check(F, Window)


def test_columns_without_window_and_what_cannot_be_read(spark):
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.connect import functions as CF
    from pyspark.sql.connect.window import Window as CW

    for f, win in ((F, Window), (CF, CW)):
        assert C.read(f.col("x")) == C.Node("column", name=("x",))
        assert not C.read(f.col("x") + 1).has_window
        udf = f.udf(lambda v: v, "double")
        node = C.read(f.lag(udf("x")).over(win.orderBy("ts")))
        assert node.has_window and "Python UDF" in C.opaque_parts(node)[0]
        # a frame on lag other than its own is kept, so it is refused as Spark refuses it
        with pytest.raises(WindowSpecError, match="does not take a window frame"):
            _calls(to_sql(C.read(f.lag("x").over(win.orderBy("ts").rowsBetween(-2, 0)))))
        # Spark's own frame of lag (ROWS BETWEEN 1 PRECEDING AND 1 PRECEDING) is SQL's lag
        own = C.read(f.lag("x").over(win.orderBy("ts").rowsBetween(-1, -1)))
        assert _calls(to_sql(own)) == _calls("lag(x) OVER (ORDER BY ts)")


def test_string_constants_keep_their_backslashes_as_in_spark(spark):
    """A Python string in a Column (a lag default, ``F.lit``) is the value Spark computes with:
    Spark SQL reads backslash escapes in string literals, so the translation escapes backslashes
    (``'C:\\temp'`` was read as C:<tab>emp)."""
    import pyarrow as pa
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.connect import functions as CF
    from pyspark.sql.connect.window import Window as CW

    import overwindow
    from overwindow.spark import compat

    values = ["C:\\temp", "\\u0041", "a\\'b", "x\\", "it's", "tab\there"]
    df = spark.createDataFrame([("k", 1, "s")], "k STRING, ts INT, s STRING")
    for f, win in ((F, Window), (CF, CW)):
        w = win.partitionBy("k").orderBy("ts")
        for v in values:
            sql = to_sql(C.read(f.lag("s", 1, v).over(w))) + " AS d"
            sql_lit = to_sql(C.read(f.max(f.lit(v)).over(w))) + " AS m"
            ours = overwindow.evaluate(pa.table({"k": ["k"], "ts": [1], "s": ["s"]}), sql, sql_lit)
            theirs = compat.to_arrow(df.select(F.lag("s", 1, v).over(Window.partitionBy("k").orderBy("ts"))))
            assert ours["d"].to_pylist() == theirs.column(0).to_pylist() == [v], (v, sql)
            assert ours["m"].to_pylist() == [v], (v, sql_lit)


def test_decimal_constants_keep_spark_s_type(spark):
    """``F.lit(Decimal("1E+2"))`` is DECIMAL(3,0) to Spark; its translation was the DOUBLE 1E+2."""
    from decimal import Decimal

    import pyarrow as pa
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    import overwindow
    from overwindow.spark.boundary import spark_type

    w = Window.partitionBy("k").orderBy("ts")
    df = spark.createDataFrame([("k", 1)], "k STRING, ts INT")
    for d in (Decimal("1E+2"), Decimal("-1E+3"), Decimal("1.50"), Decimal("0E-5")):
        column = F.max(F.lit(d)).over(w)
        ours = overwindow.evaluate(pa.table({"k": ["k"], "ts": [1]}), to_sql(C.read(column)) + " AS m")
        theirs = df.select(column.alias("m"))
        assert spark_type(ours.schema.field("m").type) == theirs.schema["m"].dataType, d
        assert ours["m"].to_pylist() == [r["m"] for r in theirs.collect()], d
