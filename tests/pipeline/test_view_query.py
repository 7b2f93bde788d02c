"""A view file's ``[view] query`` runs as ``overwindow.sql`` runs it: the job's table (files source,
SQLite sink, emit on update) equals Spark's batch SQL of the same query over the same rows, its
QUALIFY included (rows leaving the Top-N are deleted from the table)."""

import json
import os
import sqlite3
import textwrap
import time

import numpy as np
import pytest

from overwindow.pipeline.job import start_view
from overwindow.pipeline.view import load_view
from overwindow.spark import compat

# the first five rows of each key (Top-N), with a WHERE before the windows and computed columns
INNER = (
    "SELECT id, k, x * 2 AS x2, lag(x, 1, -1.0) OVER (PARTITION BY k ORDER BY ts) AS prev, "
    "x - avg(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS off, "
    "row_number() OVER (PARTITION BY k ORDER BY ts) AS rn FROM {} WHERE x IS NOT NULL AND id % 3 != 1"
)
QUERY = INNER + " QUALIFY rn <= 5"
BATCH = "SELECT * FROM (" + INNER + ") WHERE rn <= 5"  # the same, in the form every Spark runs
SCHEMA = "k STRING, id BIGINT, ts TIMESTAMP, x DOUBLE"


def _rows(n, seed, first_id=0):
    rng = np.random.default_rng(seed)
    return [
        {
            "k": str(rng.choice(["a", "b", "c"])),
            "id": first_id + i,
            # distinct times (no ties for row_number), the second file's among the first's
            "ts": f"2024-01-01T00:{(first_id + i) * 997 % 3600 // 60:02d}:{(first_id + i) * 997 % 60:02d}",
            "x": None if rng.random() < 0.1 else float(rng.integers(-9, 9)),
        }
        for i in range(n)
    ]


def _view(tmp_path, query, emit="on_update", delay="1 hour", row_key=True, extra=""):
    path = tmp_path / "view.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "files"
        path = "events"
        schema = "{SCHEMA}"
        max_files_per_trigger = 1

        [watermark]
        column = "ts"
        delay = "{delay}"

        [view]
        query = {json.dumps(query)}
        emit = "{emit}"
        {'row_key = ["id"]' if row_key else ""}
        {extra}

        [sink]
        kind = "sqlite"
        path = "view.sqlite"
        table = "v"
        checkpoint = "chk"
    """)
    )
    (tmp_path / "events").mkdir(exist_ok=True)
    return load_view(str(path))


def _write(tmp_path, name, rows):
    with open(tmp_path / "events" / name, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def _table(tmp_path, columns):
    con = sqlite3.connect(tmp_path / "view.sqlite")
    got = con.execute(f'SELECT {", ".join(columns)} FROM "v"').fetchall()
    con.close()
    return got


def _batch(spark, tmp_path, query):
    """Spark's batch SQL of ``query`` over every row in the source folder."""
    spark.read.schema(SCHEMA).json(str(tmp_path / "events")).createOrReplaceTempView("ow_query_batch")
    return compat.to_arrow(spark.sql(query.format("ow_query_batch"))).to_pylist()


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(sorted(got, key=lambda r: r[0]), sorted(want, key=lambda r: r[0])):
        assert g == pytest.approx(w, nan_ok=True)


def test_a_query_view_equals_spark_batch_sql(spark, tmp_path):
    view = _view(tmp_path, QUERY.format("source"))
    _write(tmp_path, "0.json", _rows(40, 1))
    _write(tmp_path, "1.json", _rows(30, 2, first_id=40))
    query, _ = start_view(spark, view, once=True, quiet=True)
    query.awaitTermination()
    assert len(query.recentProgress) >= 2  # two micro-batches, the second recomputing the first's rows
    columns = ["id", "k", "x2", "prev", "off", "rn"]
    want = [tuple(r[c] for c in columns) for r in _batch(spark, tmp_path, BATCH)]
    _same(_table(tmp_path, columns), want)


# windows over three partitionings: per key, over every row, and per key by value; a column
# combining windows of two of them
SEVERAL = (
    "SELECT id, k, x, lag(x) OVER (PARTITION BY k ORDER BY ts) AS prev, "
    "count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 10 MINUTES PRECEDING AND CURRENT ROW) AS n10, "
    "{third}, x - lag(x) OVER (PARTITION BY k ORDER BY ts) * count(*) OVER (ORDER BY ts) AS mixed "
    "FROM {{}} WHERE id % 5 != 2"
)


@pytest.mark.skipif(compat.version() < compat.SPARK_4, reason="several window groups need PySpark 4")
@pytest.mark.parametrize(
    "emit, third",
    [
        ("on_update", "rank() OVER (PARTITION BY k ORDER BY x DESC) AS r"),
        ("on_window_close", "max(x) OVER (PARTITION BY x ORDER BY ts ROWS 2 PRECEDING) AS r"),
    ],
)
def test_a_query_view_of_several_window_groups_equals_spark_batch_sql(spark, tmp_path, emit, third):
    """One streaming query, one table keyed by row key: on update it equals the batch query over
    every row; on window close each row the watermark closed is there once, with the batch's values."""
    from overwindow.spark.fanout import CHECK

    query = SEVERAL.format(third=third)
    closing = emit == "on_window_close"
    view = _view(tmp_path, query.format("source"), emit=emit, delay="5 minutes" if closing else "1 hour")
    assert view.several
    rows = _rows(40, 3) + _rows(30, 4, first_id=40)
    if closing:  # in time order, 37 s apart: no row is late
        rows = [dict(r, ts=f"2024-01-01T00:{r['id'] * 37 // 60:02d}:{r['id'] * 37 % 60:02d}") for r in rows]
    _write(tmp_path, "0.json", rows[:40])
    _write(tmp_path, "1.json", rows[40:])
    keys = ["spark.sql.streaming.stateStore.providerClass", CHECK]
    before = [spark.conf.get(k, None) for k in keys]
    try:
        stream, _ = start_view(spark, view, once=True, quiet=True)
        stream.awaitTermination()
    finally:
        for k, v in zip(keys, before):
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    columns = ["id", "k", "x", "prev", "n10", "r", "mixed"]
    want = [tuple(r[c] for c in columns) for r in _batch(spark, tmp_path, query)]
    got = _table(tmp_path, columns)
    if closing:  # the rows within the watermark delay of the newest are not out yet
        assert 0 < len(got) < len(want)
        want = [w for w in want if w[0] in {g[0] for g in got}]
    _same(got, want)


def test_the_functions_a_view_may_call_are_sparks_own(spark):
    """The sandbox's list of functions of their arguments names Spark's built-in functions (a name
    Spark does not know would be refused by Spark anyway, but the list says what views may call)."""
    from overwindow.pipeline.sandbox import PURE_FUNCTIONS

    assert [n for n in sorted(PURE_FUNCTIONS) if not spark.catalog.functionExists(n)] == []


# PARTITION BY a column and an expression Spark computes (no column of the source holds the hour)
HOURLY = (
    "SELECT id, k, ts, x, sum(x) OVER (PARTITION BY k, date_trunc('HOUR', ts) ORDER BY ts "
    "ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS s4, "
    "count(*) OVER (PARTITION BY k, date_trunc('HOUR', ts) ORDER BY ts) AS n "
    "FROM {}"
)


@pytest.mark.parametrize("emit", ["on_update", "on_window_close"])
def test_a_view_partitioned_by_an_expression_equals_spark_batch_sql(spark, tmp_path, emit):
    """``PARTITION BY k, date_trunc('HOUR', ts)`` in a view file: validated and run by the job
    (``run_view``: the checks of ``overwindow run``, then the query), equal to Spark's batch SQL."""
    from overwindow.pipeline.job import run_view

    closing = emit == "on_window_close"
    # no row_key: on update a row never moves between hours (the table is keyed by k and _row_id)
    view = _view(tmp_path, HOURLY.format("source"), emit=emit, delay="5 minutes", row_key=False)
    assert view.partition_by == ["k"]
    rows = _rows(40, 5) + _rows(30, 6, first_id=40)
    # in time order across three hours, 5 minutes apart: no row is late
    rows = [dict(r, ts=f"2024-01-01T{r['id'] * 5 // 60:02d}:{r['id'] * 5 % 60:02d}:00") for r in rows]
    _write(tmp_path, "0.json", rows[:40])
    _write(tmp_path, "1.json", rows[40:])
    for i, name in enumerate(("0.json", "1.json")):  # read in this order: the second's rows are not late
        os.utime(tmp_path / "events" / name, (time.time() + i, time.time() + i))
    assert run_view(view, once=True, quiet=True, spark=spark) == 0
    columns = ["id", "k", "x", "s4", "n"]
    want = [tuple(r[c] for c in columns) for r in _batch(spark, tmp_path, HOURLY)]
    got = _table(tmp_path, columns)
    if closing:  # the rows within the watermark delay of the newest are not out yet
        assert 0 < len(got) < len(want)
        want = [w for w in want if w[0] in {g[0] for g in got}]
    _same(got, want)


# daily totals and their 7-day moving average: windows over a GROUP BY
DAILY = (
    "SELECT to_date(ts) AS day, sum(x) AS total, count(*) AS n, "
    "avg(sum(x)) OVER (ORDER BY to_date(ts) ROWS 6 PRECEDING) AS avg7 FROM {} GROUP BY to_date(ts)"
)


@pytest.mark.skipif(compat.version() < compat.SPARK_4, reason="a GROUP BY's windows need PySpark 4")
@pytest.mark.parametrize("emit", ["on_update", "on_window_close"])
def test_a_view_of_windows_over_a_group_by_equals_spark_batch_sql(spark, tmp_path, emit):
    """A view file's GROUP BY query runs through the job (validated, then two operators), its table
    keyed by the GROUP BY key, equal to Spark's batch SQL over every row. On window close each day is
    appended once as the watermark closes it (the last day, within the delay of the newest row, not
    yet); the job's --final ends the input, and the last day comes out too."""
    from overwindow.pipeline.job import run_view

    closing = emit == "on_window_close"
    view = _view(tmp_path, DAILY.format("source"), emit=emit, delay="3 hours", row_key=False)
    assert view.key == ["day"]
    if closing:  # in time order, 4 hours apart over twelve days: no row is late
        rows = [
            dict(r, ts=f"2024-01-{1 + r['id'] // 6:02d}T{r['id'] % 6 * 4:02d}:00:00") for r in _rows(70, 8)
        ]
    else:  # the second file's rows among the first's days
        rows = [dict(r, ts=f"2024-01-{1 + r['id'] % 12:02d}T{r['id'] % 24:02d}:00:00") for r in _rows(70, 7)]
    _write(tmp_path, "0.json", rows[:40])
    _write(tmp_path, "1.json", rows[40:])
    for i, name in enumerate(("0.json", "1.json")):
        os.utime(tmp_path / "events" / name, (time.time() + i, time.time() + i))
    columns = ["day", "total", "n", "avg7"]
    want = [(str(r["day"]), *(r[c] for c in columns[1:])) for r in _batch(spark, tmp_path, DAILY)]
    key = "spark.sql.streaming.stateStore.providerClass"
    before = spark.conf.get(key, None)
    try:
        assert run_view(view, once=True, quiet=True, spark=spark) == 0
        if closing:
            got = [(str(r[0]), *r[1:]) for r in _table(tmp_path, columns)]
            assert 0 < len(got) < len(want)
            _same(got, [w for w in want if w[0] in {g[0] for g in got}])
            assert run_view(view, once=True, quiet=True, spark=spark, final=True) == 0
    finally:
        spark.conf.unset(key) if before is None else spark.conf.set(key, before)
    _same([(str(r[0]), *r[1:]) for r in _table(tmp_path, columns)], want)


UDFS = """
import pandas as pd
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import DoubleType


@pandas_udf(DoubleType())
def wavg(v: pd.Series, w: pd.Series) -> float:
    return float((v * w).sum() / w.sum()) if w.sum() else None
"""
BY_NAME = (
    "SELECT id, k, ov_wavg(x, CAST(id AS DOUBLE)) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) AS w "
    "FROM {} WHERE x IS NOT NULL"
)


def test_a_view_calls_a_pandas_udf_of_its_own_by_name_as_spark_batch_sql(spark, tmp_path):
    """``[view] functions = { ov_wavg = "ow_view_udfs:wavg" }`` in a trusted view: the module beside
    the view file is imported, its pandas_udf called by name in the query; the table equals Spark's
    batch SQL of the query with the function registered by that name."""
    (tmp_path / "ow_view_udfs.py").write_text(UDFS)
    extra = 'trusted = true\nfunctions = { ov_wavg = "ow_view_udfs:wavg" }'
    view = _view(tmp_path, BY_NAME.format("source"), extra=extra)
    _write(tmp_path, "0.json", _rows(40, 3))
    _write(tmp_path, "1.json", _rows(30, 4, first_id=40))
    query, _ = start_view(spark, view, once=True, quiet=True)
    query.awaitTermination()
    columns = ["id", "k", "w"]
    want = [tuple(r[c] for c in columns) for r in _batch(spark, tmp_path, BY_NAME)]
    _same(_table(tmp_path, columns), want)
