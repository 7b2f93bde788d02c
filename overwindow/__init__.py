"""overwindow: SQL window functions (OVER) in batch over pandas/Arrow, and incrementally on Spark
Structured Streaming.

>>> import pandas as pd, overwindow
>>> overwindow.evaluate(pd.DataFrame({"t": [1, 2, 3], "x": [1.0, 2.0, 4.0]}),
...                     "avg(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS a")["a"].tolist()
[1.0, 1.5, 3.0]

The names below load on first use (PEP 562's module ``__getattr__``): a process that imports one of
overwindow's modules alone does not import the rest. PySpark starts three such processes for
each Kafka query (the Kafka source's, ``overwindow.pipeline.kafka``), each importing it in 0.4 s of
CPU here where the whole package takes 1.2 s. ``import overwindow`` still adds ``overWindow`` to
PySpark's DataFrames where PySpark is installed (``overwindow.spark.methods``).
"""

import importlib as _importlib
import typing as _typing

# public name -> (its module, its name there): what ``__getattr__`` imports
_NAMES = {
    "Aggregate": ("overwindow.udaf", "Aggregate"),
    "Bound": ("overwindow.logical", "Bound"),
    "Exclude": ("overwindow.logical", "Exclude"),
    "Expr": ("overwindow.logical", "Expr"),
    "Frame": ("overwindow.logical", "Frame"),
    "FrameUnit": ("overwindow.logical", "FrameUnit"),
    "Interval": ("overwindow.logical", "Interval"),
    "OverWindow": ("overwindow.spec", "OverWindow"),
    "SortKey": ("overwindow.logical", "SortKey"),
    "WindowCall": ("overwindow.logical", "WindowCall"),
    "WindowExpression": ("overwindow.logical", "WindowExpression"),
    "WindowRuntimeError": ("overwindow.errors", "WindowRuntimeError"),
    "WindowSpecError": ("overwindow.errors", "WindowSpecError"),
    "evaluate": ("overwindow.evaluator", "evaluate"),
    "net_changes": ("overwindow.streaming.changelog", "net_changes"),
    "parse_window": ("overwindow.logical", "parse_window"),
    "register_aggregate": ("overwindow.udaf", "register_aggregate"),
    "select": ("overwindow.spark.select", "select"),
    "sessionWindow": ("overwindow.spark.column_sql", "session_window"),
    "ship": ("overwindow.spark.executors", "ship"),
    "sql": ("overwindow.spark.select", "sql"),
}
__all__ = [
    "Aggregate",
    "Bound",
    "Exclude",
    "Expr",
    "Frame",
    "FrameUnit",
    "Interval",
    "OverWindow",
    "SortKey",
    "WindowCall",
    "WindowExpression",
    "WindowRuntimeError",
    "WindowSpecError",
    "evaluate",
    "net_changes",
    "parse_window",
    "register_aggregate",
    "select",
    "sessionWindow",
    "ship",
    "sql",
]

# the same names for type checkers and editors, never imported here (tests/test_init.py: the three
# lists agree)
if _typing.TYPE_CHECKING:
    from overwindow.errors import WindowRuntimeError, WindowSpecError
    from overwindow.evaluator import evaluate
    from overwindow.logical import (
        Bound,
        Exclude,
        Expr,
        Frame,
        FrameUnit,
        Interval,
        SortKey,
        WindowCall,
        WindowExpression,
        parse_window,
    )
    from overwindow.spark.column_sql import session_window as sessionWindow
    from overwindow.spark.executors import ship
    from overwindow.spark.select import select, sql
    from overwindow.spec import OverWindow
    from overwindow.streaming.changelog import net_changes
    from overwindow.udaf import Aggregate, register_aggregate


def __getattr__(name: str):
    """A public name's value, its module imported the first time the name is asked for; then a
    plain attribute. O(1) after the import."""
    if name not in _NAMES:
        raise AttributeError(f"module 'overwindow' has no attribute {name!r}")
    module, attribute = _NAMES[name]
    value = getattr(_importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_NAMES})


try:  # adds GroupedData.overWindow / DataFrame.overWindow when PySpark is importable
    import pyspark  # noqa: F401
except ImportError:  # the batch evaluator works without it (PySpark is the extra overwindow[spark])
    pass
else:
    from overwindow.spark.methods import register as _register_spark

    _register_spark()
