"""The bind step on streams: Spark computes every expression the windows read (arguments, FILTER,
PARTITION BY and ORDER BY keys) with its own functions, values, types and errors; the state
machines read plain columns. The oracle is Spark's batch ``select`` over the same rows; a row one
of those expressions fails on (an ANSI error) is set aside and counted, the rest equal Spark's batch
over the rows without it."""

import os

import pyarrow as pa
import pytest
from test_select import SCHEMA, _assert_as_spark, _collect, _source, _stream_as_spark

import overwindow
from overwindow.logical.bind import bind
from overwindow.logical.parse import parse_window
from overwindow.spark import compat
from overwindow.spark.bind import with_computed


def _functions_beyond_the_evaluator(F, Window):
    """Window columns whose arguments and keys need Spark's own scalar functions."""
    w = Window.partitionBy("k").orderBy("ts")
    by_hour = Window.partitionBy(F.date_trunc("hour", "ts"), "k").orderBy("ts")
    return [
        "k",
        "ts",
        "rid",
        F.avg(F.length(F.regexp_replace(F.coalesce("k", F.lit("")), "a", "xyz"))).over(w).alias("len"),
        F.lag(F.date_trunc("minute", "ts")).over(w).alias("minute"),
        F.max(F.concat_ws("-", "k", F.col("n").cast("string"))).over(w.rowsBetween(-2, 0)).alias("tag"),
        F.lag(F.array("n", "rid")[1]).over(w).alias("second"),
        F.sum("n").over(by_hour.rowsBetween(-3, 0)).alias("hourly"),
        F.expr(
            "count(*) FILTER (WHERE startswith(coalesce(k, ''), 'a')) OVER (PARTITION BY k ORDER BY ts)"
        ).alias("fa"),
        F.lag(F.sha2(F.coalesce("k", F.lit("-")), 256)).over(w).alias("digest"),
        # a third group, by an expression; ties in ts there (a RANGE frame, which ties do not move)
        F.expr(
            "count(*) OVER (PARTITION BY n % 3 ORDER BY ts "
            "RANGE BETWEEN INTERVAL 14 SECONDS PRECEDING AND CURRENT ROW)"
        ).alias("near"),
    ]


def test_spark_functions_in_arguments_and_keys_on_window_close_equal_spark_batch(
    spark, rocksdb, chained, tmp_path
):
    """Three window groups in one query, two of them partitioned by expressions."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    src, rids = _source(tmp_path)
    columns = _functions_beyond_the_evaluator(F, Window)
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    out = overwindow.select(events.withWatermark("ts", "0 seconds"), *columns, rowKey="rid")
    rows = _collect(out, str(tmp_path / "chk"), "append")
    batch = spark.read.schema(SCHEMA).parquet(src).select(*columns)
    assert out.columns == batch.columns
    _assert_as_spark(out, rows, batch, rids)


def test_spark_functions_and_an_order_by_expression_on_update_equal_spark_batch(spark, tmp_path):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    src, rids = _source(tmp_path)
    by_minus = Window.partitionBy(F.upper("k")).orderBy(F.col("n") * -1, "rid")
    columns = [
        "*",
        F.sum(F.pow("n", 2)).over(by_minus.rowsBetween(-2, 1)).alias("sq"),
        F.rank().over(by_minus).alias("r"),
        F.lead(F.format_string("%s/%d", "k", "n")).over(by_minus).alias("nxt"),
    ]
    _stream_as_spark(spark, src, columns, str(tmp_path / "chk"), rids, emit="on_update")


def test_a_row_an_argument_fails_on_is_set_aside_and_the_rest_equal_spark_batch(spark, tmp_path):
    """``n / (rid % 5)`` divides by zero on every fifth row (Spark's ANSI error): those rows are
    set aside and counted, not turned into NULLs, and the query goes on; the view equals Spark's
    batch over the other rows."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    src, rids = _source(tmp_path)
    w = Window.partitionBy("k").orderBy("ts")
    columns = [
        "k",
        "ts",
        "rid",
        F.sum(F.col("n") / (F.col("rid") % 5)).over(w.rowsBetween(-2, 0)).alias("q"),
        # the same subexpression in another guarded argument: computed inside each guard
        F.max((F.col("n") / (F.col("rid") % 5)) * 2).over(w).alias("q2"),
        F.lag(F.col("x").cast("string")).over(w).alias("xs"),
    ]
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    out = overwindow.select(events.withWatermark("ts", "0 seconds"), *columns, rowKey="rid")
    rows = _collect(out, str(tmp_path / "chk"), "append")
    good = spark.read.schema(SCHEMA).parquet(src).where(F.col("rid") % 5 != 0)
    failing = {r["rid"] for r in compat.to_arrow(spark.read.schema(SCHEMA).parquet(src)).to_pylist()}
    failing = {rid for rid in failing if rid % 5 == 0}
    assert failing and not failing & {r["rid"] for r in rows}
    assert out.overwindow_counts.take()[2] == len(failing)  # set aside, counted
    _assert_as_spark(out, rows, good.select(*columns), rids - failing)


def test_a_constant_partition_key_on_update_with_an_op_column(spark, tmp_path):
    """``PARTITION BY CAST(1 AS INT)`` on update with a row key and an op column ran into Spark's
    MISSING_ATTRIBUTES error inside the stateful operator; the key is now a column Spark computes."""
    import pyarrow.parquet as pq

    src = tmp_path / "src"
    src.mkdir()
    rows = [{"id": i, "foo": (i * 7) % 5, "rid": i, "op": "insert"} for i in range(12)]
    pq.write_table(pa.Table.from_pylist(rows), str(src / "part-0.parquet"))
    schema = "id BIGINT, foo BIGINT, rid BIGINT, op STRING"
    spark.readStream.schema(schema).parquet(str(src)).createOrReplaceTempView("ow_bind_t")
    query = "SELECT id, rank() OVER (PARTITION BY CAST(1 AS INT) ORDER BY foo) AS r1, rid FROM {}"
    out = overwindow.sql(spark, query.format("ow_bind_t"), emit="on_update", rowKey="rid", opColumn="op")
    table = {r["rid"]: r for r in _collect(out, str(tmp_path / "chk"), "update") if r["_change"] == "upsert"}
    spark.read.schema(schema).parquet(str(src)).createOrReplaceTempView("ow_bind_b")
    want = {r["rid"]: r["r1"] for r in spark.sql(query.format("ow_bind_b")).collect()}
    assert {rid: r["r1"] for rid, r in table.items()} == want


@pytest.mark.parametrize(
    "text",
    [
        "x / y",
        "(x / y) * 2",
        "x div y + x / y + x / y",
        "CAST(s AS INT) + CAST(s AS INT)",
        "transform(array(x, y), v -> v / y)[0]",
        "element_at(array(x), y + 1)",
    ],
)
def test_the_guard_catches_what_spark_fails_on_and_nothing_else(spark, text):
    """Each expression beside the others (shared subexpressions, a lambda of the user's own, an
    index out of bounds) on rows it fails on and rows it does not: NULL and the expression's SQL in
    ``__ow_error`` exactly where Spark's own evaluation of it fails, Spark's value elsewhere."""
    rows = [(1, 0, "a"), (4, 2, "7"), (6, 3, "8"), (7, -1, "x"), (None, 1, None)]
    df = spark.createDataFrame(rows, "x INT, y INT, s STRING")
    others = ["x / y", "(x / y) * 2", "CAST(s AS INT) + 1"]
    texts = [text] + [o for o in others if o != text]
    bound = bind([parse_window(f"lag({t}) OVER (ORDER BY x) AS w{i}") for i, t in enumerate(texts)])
    got = compat.to_arrow(with_computed(df, bound.pre)).to_pylist()
    name = next(n for n, e in bound.pre if e == bound.pre[0][1])
    for i, row in enumerate(rows):
        one = spark.createDataFrame([row], "x INT, y INT, s STRING")
        try:
            want, failed = one.selectExpr(f"{bound.pre[0][1].sql} AS v").collect()[0]["v"], False
        except Exception:  # Spark's own error on this row
            want, failed = None, True
        assert got[i][name] == want
        if failed:
            assert got[i]["__ow_error"] == bound.pre[0][1].sql
        elif got[i]["__ow_error"] is not None:  # another expression failed on it
            assert got[i]["__ow_error"] != bound.pre[0][1].sql


def test_a_backquoted_view_and_its_qualified_columns(spark, tmp_path):
    """``SELECT `t`.`k` ... FROM `t``` reads as ``SELECT t.k ... FROM t`` (it raised sqlglot's own
    parse error); a qualified column in a call or key is Spark's to resolve."""
    (tmp_path / "none").mkdir()
    spark.readStream.schema(SCHEMA).parquet(str(tmp_path / "none")).createOrReplaceTempView("t")
    query = "SELECT `t`.`k`, lag(`t`.`n`) OVER (PARTITION BY `t`.`k` ORDER BY ts) AS p, rid FROM `t`"
    out = overwindow.sql(spark, query, emit="on_update", rowKey="rid")
    assert out.columns == ["k", "p", "rid", "_change"]
    assert out.dtypes[1] == ("p", "bigint")


BIND_SEEDS = int(os.environ.get("OVERWINDOW_RANDOM_BINDS", "2"))


def _random_bound_columns(rng, F, Window, closing: bool) -> list:
    """Random window Columns whose arguments, keys and surroundings are Spark functions: a key that
    keeps the keys apart (an expression of ``k``), ORDER BY ts on window close and a random
    expression then rid on update, ROWS frames, and a few columns computed over windows."""
    pick = lambda options: options[int(rng.integers(len(options)))]  # noqa: E731
    numbers = [
        lambda: F.col("n") + F.col("rid"),
        lambda: F.col("n") * 2,
        lambda: F.abs(F.col("x")),
        lambda: F.coalesce(F.col("x"), F.lit(0.0)),
        lambda: F.when(F.col("n") > 3, F.col("x")).otherwise(-F.col("x")),
        lambda: F.length(F.coalesce(F.col("k"), F.lit(""))),
        lambda: F.hour(F.col("ts")),
        lambda: F.unix_timestamp(F.col("ts")) % 1000,
        lambda: F.round(F.col("x"), 1),
        lambda: F.greatest(F.col("n"), F.col("rid") % 7),
        lambda: F.col("rid") % 5,
    ]
    anything = numbers + [
        lambda: F.upper(F.col("k")),
        lambda: F.concat_ws("-", F.col("k"), F.col("n").cast("string")),
        lambda: F.date_trunc("minute", F.col("ts")),
        lambda: F.sha1(F.coalesce(F.col("k"), F.lit("-"))),
        lambda: F.array(F.col("n"), F.col("rid"))[1],
    ]
    key = pick([F.col("k"), F.upper(F.col("k")), F.coalesce(F.col("k"), F.lit("none"))])
    order = [F.col("ts")] if closing else [pick(numbers)(), F.col("rid")]
    w = Window.partitionBy(key).orderBy(*order)
    columns = ["k", "ts", "rid"]
    for i in range(int(rng.integers(3, 7))):
        # on window close the two far rows of each key close at most one FOLLOWING row
        lo, hi = sorted(int(v) for v in rng.integers(-4, 2, size=2))
        frame = w.rowsBetween(lo, hi if closing else int(rng.integers(hi, 4)))
        offset = 1 if closing else int(rng.integers(1, 3))
        kind = int(rng.integers(5))
        if kind == 0:
            column = pick([F.sum, F.avg, F.min, F.max, F.count])(pick(numbers)()).over(frame)
        elif kind == 1:
            column = pick([F.lag, F.lead])(pick(anything)(), offset).over(w)
        elif kind == 2:
            column = pick([F.first, F.last])(pick(anything)(), bool(rng.integers(2))).over(frame)
        elif kind == 3:
            column = F.round(F.avg(pick(numbers)()).over(frame), 2)  # Spark computes it after the window
        else:
            column = F.col("n") - F.max(pick(numbers)()).over(frame)
        columns.append(column.alias(f"c{i}"))
    return columns


@pytest.mark.parametrize("seed", range(BIND_SEEDS))
def test_random_spark_expressions_around_windows_equal_spark_batch(spark, tmp_path, seed):
    """Random window Columns over Spark functions (``OVERWINDOW_RANDOM_BINDS`` seeds, 2 by default;
    even seeds on window close, odd on update keyed by rid): the stream's names, types and values
    are Spark's batch ``select`` of the same columns over the same rows."""
    import numpy as np
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    closing = seed % 2 == 0
    rng = np.random.default_rng(1000 + seed)
    columns = _random_bound_columns(rng, F, Window, closing)
    src, rids = _source(tmp_path)
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    everything = spark.read.schema(SCHEMA).parquet(src)
    if closing:
        out = overwindow.select(events.withWatermark("ts", "0 seconds"), *columns, rowKey="rid")
        rows = _collect(out, str(tmp_path / "chk"), "append")
    else:
        out = overwindow.select(events, *columns, emit="on_update", rowKey="rid")
        table = {}
        for r in _collect(out, str(tmp_path / "chk"), "update"):
            table.pop(r["rid"]) if r["_change"] == "delete" else table.__setitem__(r["rid"], r)
        rows, rids = list(table.values()), {r.rid for r in everything.select("rid").collect()}
    batch = everything.select(*columns)
    assert out.columns[: len(batch.columns)] == batch.columns
    _assert_as_spark(out, rows, batch, rids)
