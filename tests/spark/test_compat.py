"""The version gates and 3.5 shims of overwindow/spark/compat.py, on the PySpark of this venv. On 3.5
itself they run in scripts/compat (tests/compat/smoke_spark35.py)."""

import datetime as dt
import decimal

import pytest

from overwindow.spark import compat


def test_the_shim_collects_what_to_arrow_gives(spark):
    rows = [
        (
            1,
            "a",
            dt.datetime(2024, 1, 1, 12, 30),
            dt.date(1960, 2, 29),
            decimal.Decimal("12345678901234.56"),
            1.5,
        ),
        (None, None, None, None, None, float("nan")),
    ]
    schema = "i BIGINT, s STRING, ts TIMESTAMP, d DATE, m DECIMAL(16, 2), x DOUBLE"
    df = spark.createDataFrame(rows, schema)
    for frame in (df, df.limit(0)):
        want = frame.toArrow()  # Spark's own, the oracle
        got = compat.collect_as_arrow(frame)
        assert got.schema == want.schema
        assert str(got.to_pylist()) == str(want.to_pylist())  # NaN prints alike (it equals nothing)


def test_require_names_the_version_needed_and_the_one_installed(monkeypatch):
    compat.require("anything of 4.0")  # this venv's PySpark is 4.x
    monkeypatch.setattr(compat, "version_text", lambda: "3.5.9")
    compat.version.cache_clear()
    try:
        with pytest.raises(compat.SparkVersionError) as e:
            compat.require("stateLayout='chunked'", instead="Use the whole layout.")
    finally:
        compat.version.cache_clear()
    assert str(e.value) == (
        "stateLayout='chunked' needs PySpark 4.0 or later; this is PySpark 3.5.9. Use the whole layout."
    )


def test_transform_with_state_on_connect_is_refused_before_4_1(monkeypatch):
    """Spark Connect's GroupedData has transformWithStateInPandas from PySpark 4.1 on (4.0's has
    none, and the query failed with an AttributeError): the gate agrees with the installed PySpark,
    and on 4.0 refuses Connect alone, naming both versions."""
    from pyspark.sql.connect.group import GroupedData

    has_it = hasattr(GroupedData, "transformWithStateInPandas")
    assert has_it == (compat.version() >= compat.CONNECT_TRANSFORM_WITH_STATE)
    connect = type("GroupedData", (), {"__module__": "pyspark.sql.connect.group"})()
    classic = type("GroupedData", (), {"__module__": "pyspark.sql.group"})()
    monkeypatch.setattr(compat, "version_text", lambda: "4.0.5")
    compat.version.cache_clear()
    try:
        compat.require_transform_with_state(classic, "stateLayout='chunked'")
        with pytest.raises(compat.SparkVersionError) as e:
            compat.require_transform_with_state(connect, "stateLayout='chunked'")
    finally:
        compat.version.cache_clear()
    assert str(e.value) == (
        "stateLayout='chunked' on Spark Connect (Spark's transformWithStateInPandas of a Connect "
        "DataFrame) needs PySpark 4.1 or later; this is PySpark 4.0.5. On PySpark 4.0 run it on classic Spark"
    )


def test_the_kafka_connector_carries_the_scala_version_of_the_jars():
    import pyspark

    assert compat.scala_version() == "2.13"  # every PySpark 4 wheel is built for Scala 2.13
    assert compat.kafka_connector(pyspark.__version__).endswith(f"_2.13:{pyspark.__version__}")


def test_the_filesystem_checkpoint_manager_named_is_the_one_in_this_sparks_jar(spark):
    import glob
    import os
    import zipfile

    import pyspark

    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-sql_*.jar"))
    assert jars, "this PySpark ships its spark-sql jar"
    with zipfile.ZipFile(jars[0]) as jar:  # the jar's own listing, the oracle
        found = [n for n in jar.namelist() if n.endswith("/FileSystemBasedCheckpointFileManager.class")]
    assert [compat.filesystem_checkpoints(spark).replace(".", "/") + ".class"] == found
