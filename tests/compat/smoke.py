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
