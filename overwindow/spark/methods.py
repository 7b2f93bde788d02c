"""The methods ``import overwindow`` adds to PySpark's classes: ``GroupedData.overWindow`` and
``DataFrame.overWindow``, on classic Spark at once and on Spark Connect once Connect is imported.

They stand for the adapter (overwindow.spark.adapter) and import it on their first call, not when
they are added: the adapter brings pandas, the batch evaluator and the state machines (0.8 s of
CPU here), which a process that imports one of overwindow's modules alone does not need (the Kafka
source's, in PySpark's three data-source processes of a Kafka query: 0.4 s each to import it
against 1.2 s with the adapter).

>>> from pyspark.sql.group import GroupedData
>>> del GroupedData.overWindow
>>> register()
>>> GroupedData.overWindow is over_window
True
"""

from __future__ import annotations

from overwindow.spark.on_import import after_import


def over_window(grouped, spec, keep=None, append: bool = False):
    """``df.groupBy(keys).overWindow(spec)``: ``spec``'s windows over a streaming DataFrame's groups,
    as a streaming DataFrame (``overwindow.spark.adapter.over_window``, which ``keep`` and ``append``
    are for). O(1) beyond it: the adapter is imported once."""
    from overwindow.spark import adapter

    return adapter.over_window(grouped, spec, keep, append)


def whole_stream(df, spec, keep=None, append: bool = False):
    """``df.overWindow(spec)`` without groupBy: the whole stream as one partition
    (``overwindow.spark.adapter.whole_stream``). O(1) beyond it."""
    from overwindow.spark import adapter

    return adapter.whole_stream(df, spec, keep, append)


def register() -> None:
    """Add ``overWindow`` to classic Spark's ``GroupedData`` and ``DataFrame``, and to Spark
    Connect's once its DataFrame module is imported (``on_import.after_import``): importing Connect
    here would import grpc and protobuf into every Python worker of every query. O(1)."""
    from pyspark.sql import DataFrame
    from pyspark.sql.group import GroupedData

    _add_methods(GroupedData, DataFrame)
    after_import("pyspark.sql.connect.dataframe", _register_connect)


def _register_connect(module) -> None:
    """``register`` for Spark Connect, given its imported ``pyspark.sql.connect.dataframe``."""
    _add_methods(module.GroupedData, module.DataFrame)


def _add_methods(grouped_cls, df_cls) -> None:
    grouped_cls.overWindow = over_window
    df_cls.overWindow = whole_stream
