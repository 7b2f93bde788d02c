"""The smoke set every supported PySpark version runs (``scripts/compat``: a venv per version with
overwindow installed from its wheel; CI runs the oldest and the newest version): the batch evaluator
against this Spark's own window functions, and both emit modes as the job runs them on a file
stream, killed between micro-batches and restarted, ending with the view the batch evaluator gives.
What differs by version: smoke_spark35.py (what 3.5 refuses) and smoke_spark4.py (the chunked
layout). pytest collects these files only when they are named (scripts/compat names them)."""

import signal
import sys

import numpy as np
import pandas as pd
import pytest
from replay_support import assert_view_is_exact, run_job, write_view

import overwindow

WINDOW = "PARTITION BY k ORDER BY t, id"
CALLS = [
    f"lag(x) OVER ({WINDOW}) AS lag_x",
    f"sum(x) OVER ({WINDOW} ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS sum3",
    f"max(x) OVER ({WINDOW} ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS max3",
    "avg(x) OVER (PARTITION BY k ORDER BY t RANGE BETWEEN 5 PRECEDING AND CURRENT ROW) AS avg5",
    "rank() OVER (PARTITION BY k ORDER BY t) AS rnk",
    "count(x) OVER (PARTITION BY k) AS n",
]


def test_the_installed_package_is_under_test():
    assert overwindow.__file__.startswith(sys.prefix), overwindow.__file__  # not the checkout


def test_batch_evaluator_equals_this_sparks_window_functions(spark):
    rng = np.random.default_rng(35)
    n = 300
    x = rng.normal(0, 100, n)
    x[rng.random(n) < 0.1] = np.nan  # NULL, as pandas and Spark's Arrow conversion read it
    data = pd.DataFrame({"id": np.arange(n), "k": rng.integers(0, 4, n), "t": rng.integers(0, 40, n), "x": x})
    spark.createDataFrame(data).createOrReplaceTempView("smoke")
    want = spark.sql(f"SELECT id, {', '.join(CALLS)} FROM smoke").toPandas().set_index("id").sort_index()
    got = overwindow.evaluate(data, *CALLS).set_index("id").sort_index()
    for column in want.columns:
        expected = want[column].to_numpy(dtype=float)
        np.testing.assert_allclose(got[column].to_numpy(dtype=float), expected, rtol=1e-12, err_msg=column)


def kill_and_restart(tmp_path, emit, layout="whole"):
    """The job on six files, SIGKILLed after its second micro-batch, then run to the end: the view
    equals the batch evaluator over all input (no row lost, none twice)."""
    view, rows = write_view(tmp_path, emit, layout=layout)
    assert run_job(view, kill_after_line=2) == -signal.SIGKILL
    assert run_job(view) == 0
    assert_view_is_exact(tmp_path, rows, emit, "sqlite")


@pytest.mark.parametrize("emit", ["on_window_close", "on_update"])
def test_a_killed_and_restarted_job_leaves_the_exact_view(tmp_path, no_spark, emit):
    kill_and_restart(tmp_path, emit)


def test_select_of_pyspark_window_columns_equals_this_sparks_select(spark, tmp_path):
    """overwindow.select reads this PySpark's Columns (3.5: Catalyst expressions, 4.x: ColumnNode):
    on a stream they give what this Spark's batch select of the same Columns gives, for the rows
    the final watermark (00:00:34) has closed."""
    import json

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    src = tmp_path / "src"
    src.mkdir()
    rows = [
        {"k": i % 3, "ts": f"2024-01-01T00:00:{i:02d}", "id": i, "x": float(i * 7 % 11)} for i in range(40)
    ]
    (src / "a.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    schema = "k INT, ts TIMESTAMP, id BIGINT, x DOUBLE"
    w = Window.partitionBy("k").orderBy("ts")
    columns = [
        "id",
        F.col("k"),
        F.lag("x").over(w).alias("p"),
        F.avg("x").over(w.rowsBetween(-2, 0)),
        F.row_number().over(w),
        (F.col("x") - F.lag("x", 2, 0).over(w)).alias("d"),
        F.first("x", ignorenulls=True).over(w.rowsBetween(-1, 0)).alias("f"),
        "sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 1 PRECEDING) AS s",
    ]
    events = spark.readStream.schema(schema).json(str(src)).withWatermark("ts", "5 seconds")
    out = overwindow.select(events, *columns, rowKey="id")
    q = out.writeStream.format("memory").queryName("smoke_select").trigger(availableNow=True).start()
    q.awaitTermination()
    batch_columns = [F.expr(c) if isinstance(c, str) and " OVER " in c else c for c in columns]
    batch = spark.read.schema(schema).json(str(src)).select(*batch_columns)
    assert out.dtypes == batch.dtypes
    want = sorted(tuple(r) for r in batch.collect() if r["id"] < 35)
    assert sorted(tuple(r) for r in spark.table("smoke_select").collect()) == want
