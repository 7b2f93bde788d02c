"""What differs between the PySpark versions overwindow supports (3.5 and 4.0 to 4.3), in one place.

On PySpark 3.5 ``overWindow`` runs both emit modes with the whole state layout on
``applyInPandasWithState`` (classic Spark). What needs an API that came with 4.0 is refused by
:func:`require` when the query is built, naming the version it needs: the chunked state layout
(``transformWithStateInPandas``), the Python Kafka reader (the Python data source API) and
``overWindow`` on Spark Connect; on Spark Connect, what runs on ``transformWithStateInPandas``
needs 4.1 (:func:`require_transform_with_state`). Where 3.5 has the same thing under another name,
the shim lives here (:func:`to_arrow`, :func:`collect_as_arrow`, :func:`to_arrow_schema`). The
docs/deployment.md, "Supported versions", lists what each version was tested with (``scripts/compat``).

>>> kafka_connector("3.5.9", scala="2.12")
'org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.9'
"""

from __future__ import annotations

import functools
import inspect
import os
import re

import pyarrow as pa

from overwindow.errors import WindowSpecError

SPARK_4 = (4, 0)
# Spark Connect's GroupedData has transformWithStateInPandas from PySpark 4.1 on (4.0: classic only)
CONNECT_TRANSFORM_WITH_STATE = (4, 1)


class SparkVersionError(WindowSpecError):
    """A feature the installed PySpark lacks, e.g. ``stateLayout='chunked' (Spark's
    transformWithStateInPandas) needs PySpark 4.0 or later; this is PySpark 3.5.9``."""


def version_text() -> str:
    import pyspark

    return pyspark.__version__


@functools.lru_cache(maxsize=1)
def version() -> tuple[int, int]:
    """(major, minor) of the installed PySpark, e.g. (3, 5)."""
    major, minor = re.match(r"(\d+)\.(\d+)", version_text()).groups()
    return int(major), int(minor)


def require(feature: str, since: tuple[int, int] = SPARK_4, instead: str = "") -> None:
    """Refuse ``feature`` (words a user knows it by) when the installed PySpark predates ``since``."""
    if version() < since:
        raise SparkVersionError(
            f"{feature} needs PySpark {since[0]}.{since[1]} or later; this is PySpark {version_text()}"
            + (f". {instead}" if instead else "")
        )


def require_transform_with_state(df, feature: str) -> None:
    """Refuse ``feature``, which runs on Spark's ``transformWithStateInPandas``, where ``df`` (a
    DataFrame or GroupedData) has none: before PySpark 4.0, and on Spark Connect before 4.1 (4.0's
    Connect GroupedData lacks the method: the query would fail with an AttributeError)."""
    require(f"{feature} (Spark's transformWithStateInPandas)")
    if is_connect(df):
        require(
            f"{feature} on Spark Connect (Spark's transformWithStateInPandas of a Connect DataFrame)",
            CONNECT_TRANSFORM_WITH_STATE,
            instead="On PySpark 4.0 run it on classic Spark",
        )


def require_python_kafka_reader() -> None:
    """Refuse overwindow's Python Kafka reader on a PySpark without the Python data source API
    (3.5), naming Spark's own connector for this version instead."""
    require(
        "overwindow's Python Kafka reader (PySpark's Python data source API)",
        instead='Use Spark\'s Kafka connector: reader = "spark" with '
        f"OVERWINDOW_SPARK_PACKAGES={kafka_connector(version_text())}",
    )


def is_connect(df) -> bool:
    """Whether ``df`` is a Spark Connect DataFrame (or GroupedData)."""
    return type(df).__module__.startswith("pyspark.sql.connect")


def functions(df):
    """The ``pyspark.sql.functions`` module that builds Columns for ``df`` (Spark Connect's own
    for a Connect DataFrame)."""
    if is_connect(df):
        from pyspark.sql.connect import functions as F
    else:
        from pyspark.sql import functions as F
    return F


def grouping_columns(grouped) -> list:
    """The expressions ``grouped`` (a GroupedData) groups by, as Columns of its DataFrame. Classic
    Spark keeps them in the JVM only, as Catalyst expressions: each is wrapped in a Column there
    (``ExpressionUtils.column`` from 4.0, ``Column``'s own constructor in 3.5). O(keys)."""
    if is_connect(grouped._df):
        return list(grouped._grouping_cols)
    exprs = grouped._jgd.groupingExprs()
    jvm = grouped._df.sparkSession._jvm
    if version() >= SPARK_4:
        from pyspark.sql.classic.column import Column

        wrap = jvm.org.apache.spark.sql.classic.ExpressionUtils.column
    else:
        from pyspark.sql.column import Column

        wrap = jvm.org.apache.spark.sql.Column
    return [Column(wrap(exprs.apply(i))) for i in range(exprs.size())]


def to_arrow(df) -> pa.Table:
    """``df.toArrow()`` (PySpark 4.0+), else :func:`collect_as_arrow`. O(rows)."""
    return df.toArrow() if hasattr(df, "toArrow") else collect_as_arrow(df)


def collect_as_arrow(df) -> pa.Table:
    """What ``toArrow`` gives, on PySpark 3.5 (classic): the Arrow batches ``toPandas`` collects
    (``_collect_as_arrow``, internal), cast to Spark's Arrow schema (timestamps in UTC). O(rows)."""
    schema = to_arrow_schema(df.schema)
    batches = df._collect_as_arrow()
    return pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()


def to_arrow_schema(struct) -> pa.Schema:
    """Spark's Arrow schema for a StructType, timestamps in UTC (3.5 has no ``timezone`` argument
    and always gives UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema as spark_to_arrow_schema

    if "timezone" in inspect.signature(spark_to_arrow_schema).parameters:
        return spark_to_arrow_schema(struct, timezone="UTC")
    return spark_to_arrow_schema(struct)


def kafka_connector(spark_version: str, scala: str | None = None) -> str:
    """Maven coordinates of Spark's Kafka connector for a Spark version; the Scala version defaults
    to the one of the jars this PySpark ships (2.12 in the 3.5 wheels, 2.13 in 4.x)."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala or scala_version()}:{spark_version}"


CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
# Spark's checkpoint manager on Hadoop's FileSystem API, in the package of 3.5 and the one Spark 4
# moved it to
FILESYSTEM_CHECKPOINTS = tuple(
    f"org.apache.spark.sql.execution.streaming.{package}FileSystemBasedCheckpointFileManager"
    for package in ("", "checkpointing.")
)


def filesystem_checkpoints(spark) -> str:
    """The class name of Spark's ``FileSystemBasedCheckpointFileManager`` in the driver's JVM (its
    package differs between versions), for ``CHECKPOINT_MANAGER``; a lookup of at most two classes."""
    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in FILESYSTEM_CHECKPOINTS:
        try:
            jvm.java.lang.Class.forName(name, False, loader)
        except Py4JJavaError:  # a ClassNotFoundException: the other package
            continue
        return name
    raise RuntimeError(f"none of {', '.join(FILESYSTEM_CHECKPOINTS)} is in this Spark")


def use_filesystem_checkpoints(spark) -> None:
    """Queries ``spark`` starts from now on commit their checkpoint files through Hadoop's
    FileSystem (``filesystem_checkpoints``). Spark's default renames each file through Hadoop's
    FileContext, which on a local disk (Hadoop without its native library, as PySpark's wheels ship
    it) starts a `readlink` process per rename: some 45 processes a micro-batch (offsets, commits,
    each state store's files, a file sink's log). Through FileSystem a rename is one rename(2), as
    atomic. Measured: docs/benchmarks/streaming.md, "Checkpoints on a local disk"."""
    spark.conf.set(CHECKPOINT_MANAGER, filesystem_checkpoints(spark))


def scala_version() -> str:
    """The Scala version of the installed PySpark's jars (2.13, as Spark 4 builds, if none are
    found: a platform's own layout)."""
    import pyspark

    homes = (os.path.dirname(pyspark.__file__), os.environ.get("SPARK_HOME", ""))
    folders = [os.path.join(home, "jars") for home in homes if home]
    jars = [j for folder in folders if folder and os.path.isdir(folder) for j in os.listdir(folder)]
    found = [m.group(1) for m in map(re.compile(r"spark-core_(\d+\.\d+)-").match, jars) if m]
    return found[0] if found else "2.13"
