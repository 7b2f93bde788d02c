"""Smoke tests for PySpark 3.5 only (scripts/compat names this file for 3.5 rows): what needs a 4.x
API is refused when the query is built, with a message naming the version it needs."""

import os
import subprocess
import sys
import types

import pytest

from overwindow import OverWindow
from overwindow.spark.adapter import over_window
from overwindow.spark.compat import SparkVersionError

SPEC = dict(emit="on_update", rowKey="id")


def test_the_chunked_layout_is_refused_naming_the_version(spark, tmp_path):
    events = (
        spark.readStream.schema("k INT, ts TIMESTAMP, id BIGINT, x DOUBLE")
        .json(str(tmp_path))
        .withWatermark("ts", "5 seconds")
    )
    spec = OverWindow("lag(x) OVER (ORDER BY ts) AS p", stateLayout="chunked", **SPEC)
    with pytest.raises(SparkVersionError, match=r"transformWithStateInPandas\) needs PySpark 4\.0 or later"):
        events.groupBy("k").overWindow(spec)


def test_the_python_kafka_reader_is_refused_naming_the_version_and_the_connector(tmp_path):
    (tmp_path / "view.toml").write_text(
        '[source]\nformat = "kafka"\nbootstrap_servers = "127.0.0.1:9"\ntopic = "t"\n'
        'schema = "k INT, ts TIMESTAMP, id BIGINT, x DOUBLE"\n'
        '[view]\npartition_by = ["k"]\ncalls = ["lag(x) OVER (ORDER BY ts) AS p"]\nemit = "on_update"\n'
        'row_key = ["id"]\n[sink]\nkind = "sqlite"\npath = "v.sqlite"\ntable = "v"\ncheckpoint = "chk"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "overwindow", "run", str(tmp_path / "view.toml"), "--once"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Python Kafka reader (PySpark's Python data source API) needs PySpark 4.0 or later" in done.stderr
    assert "OVERWINDOW_SPARK_PACKAGES=org.apache.spark:spark-sql-kafka-0-10_2.12:3.5." in done.stderr


def test_over_window_on_spark_connect_is_refused_naming_the_version():
    # No Spark Connect server of 3.5 can start here (its jar is not in the pip package and comes
    # from Maven Central), so the DataFrame is a Connect DataFrame object without a session: the
    # refusal comes before anything is asked of a server.
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    grouped = types.SimpleNamespace(_df=ConnectDataFrame.__new__(ConnectDataFrame))
    spec = OverWindow("lag(x) OVER (ORDER BY ts) AS p", **SPEC)
    with pytest.raises(SparkVersionError, match=r"overWindow on Spark Connect needs PySpark 4\.0 or later"):
        over_window(grouped, spec)
