"""Shared fixtures. One SparkSession per test session (local[2], no UI, few shuffle partitions),
created only when a test asks for it; workers run this interpreter."""

import os
import sys
import warnings

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)


def _new_session(warehouse):
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("overwindow-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")
        .config("spark.sql.streaming.minBatchesToRetain", "5")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "2g")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


@pytest.fixture(scope="session")
def _spark_holder(tmp_path_factory):
    holder = {"warehouse": tmp_path_factory.mktemp("spark-warehouse"), "session": None}
    yield holder
    if holder["session"] is not None:
        holder["session"].stop()


@pytest.fixture
def spark(_spark_holder):
    """The shared local SparkSession, (re)started on demand."""
    session = _spark_holder["session"]
    if session is None or session.sparkContext._jsc is None:
        session = _spark_holder["session"] = _new_session(_spark_holder["warehouse"])
    return session


@pytest.fixture
def no_spark(_spark_holder):
    """Stops the shared session, for a test that runs its own Spark in a subprocess (one Spark at a time)."""
    if _spark_holder["session"] is not None:
        _spark_holder["session"].stop()
        _spark_holder["session"] = None
