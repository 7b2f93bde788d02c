"""What Spark's Python workers need: the running interpreter on local masters (a script run as a user
runs it, with a ``python3`` on PATH that lacks overwindow), and the package shipped as a zip where the
workers' Python lacks it (importable from the zip alone). The
standalone cluster run with such workers is in test_cluster.py."""

import os
import subprocess
import sys
import textwrap
import zipfile

import pyarrow.parquet as pq
import pytest
from replay_support import CALLS, expected, write_view

from overwindow.spark import executors


def test_the_zip_holds_every_source_file_of_the_shipped_packages(tmp_path):
    import overwindow

    path = executors.package_zip(str(tmp_path))
    assert executors.package_zip(str(tmp_path)) == path  # same content, same name
    names = set(zipfile.ZipFile(path).namelist())
    root = os.path.dirname(overwindow.__file__)
    on_disk = {
        os.path.join("overwindow", os.path.relpath(os.path.join(folder, n), root))
        for folder, dirs, files in os.walk(root)
        if "__pycache__" not in folder
        for n in files
        if not n.endswith(".pyc")
    }
    assert on_disk <= names and "overwindow/data/plant_daily.csv" in names
    assert any(n.startswith("sqlglot/") for n in names) and "sortedcontainers/__init__.py" in names
    assert not any(n.endswith(".pyc") or "__pycache__" in n for n in names)


def test_a_python_without_overwindow_runs_it_from_the_zip(tmp_path, bare_python):
    path = executors.package_zip(str(tmp_path))
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {path!r})
        import pandas as pd, overwindow
        assert overwindow.__file__.startswith({path!r}), overwindow.__file__
        out = overwindow.evaluate(pd.DataFrame({{"t": [1, 2, 3], "x": [1.0, 2.0, 4.0]}}),
                                  "sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s")
        print(out["s"].tolist())
    """)
    done = subprocess.run([bare_python, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[1.0,", "3.0,", "6.0]"]  # 1, 1+2, 2+4


def test_python_m_prints_the_zip_for_spark_submit_py_files():
    done = subprocess.run(
        [sys.executable, "-m", "overwindow.spark.executors"], capture_output=True, text=True, check=True
    )
    assert zipfile.is_zipfile(done.stdout.strip())


def test_a_script_run_as_users_run_it_uses_this_python_for_its_workers(tmp_path, no_spark, bare_python):
    # `python3` on PATH is a Python without overwindow, PYSPARK_PYTHON is unset: PySpark's default
    # would start the workers with that `python3` (ModuleNotFoundError inside Spark's workers).
    view, rows = write_view(tmp_path, "on_window_close")
    shims = tmp_path / "path"
    shims.mkdir()
    (shims / "python3").symlink_to(bare_python)
    (tmp_path / "script.py").write_text(
        textwrap.dedent(f"""
        import overwindow
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
                 .getOrCreate())
        events = (spark.readStream.schema("k INT, id BIGINT, ts TIMESTAMP, x DOUBLE")
                  .json({str(tmp_path / "events")!r}).withWatermark("ts", "5 seconds"))
        spec = overwindow.OverWindow(*{CALLS!r}, emit="on_window_close", rowKey="id")
        query = (events.groupBy("k").overWindow(spec).writeStream.format("parquet")
                 .option("path", "out").option("checkpointLocation", "chk")
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        """)
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(PATH=f"{shims}{os.pathsep}{env['PATH']}", PYTHONWARNINGS="ignore")
    done = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = {r["id"]: (r["s"], r["p"]) for r in pq.read_table(tmp_path / "out").to_pylist()}
    assert got == expected(rows, "on_window_close")


def test_ship_refuses_spark_connect():
    # a Connect session object without a server: the refusal comes before anything is sent
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    with pytest.raises(NotImplementedError, match="install overwindow in the Python"):
        executors.ship(ConnectSession.__new__(ConnectSession))


def test_a_local_session_on_sparks_200_shuffle_partitions_is_warned(spark, tmp_path):
    """Issue 40, item 19: the README's Python example left Spark's 200 partitions (a query on 400
    rows was at stage 155/200 after 8 minutes); building a window query on them warns."""
    import warnings

    import overwindow

    events = spark.readStream.schema("k INT, ts TIMESTAMP, x DOUBLE").json(str(tmp_path))
    spec = overwindow.OverWindow("lag(x) OVER (ORDER BY ts) AS p", emit="on_update")
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "200")
        with pytest.warns(UserWarning, match="shuffle.partitions is Spark's default 200 on a local"):
            events.groupBy("k").overWindow(spec)
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            events.groupBy("k").overWindow(spec)
        assert not [w for w in said if "shuffle.partitions" in str(w.message)]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
