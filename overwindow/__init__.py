"""overwindow: SQL window functions (OVER) in batch over pandas/Arrow, and incrementally on Spark
Structured Streaming.

>>> import pandas as pd, overwindow
>>> overwindow.evaluate(pd.DataFrame({"t": [1, 2, 3], "x": [1.0, 2.0, 4.0]}),
...                     "avg(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS a")["a"].tolist()
[1.0, 1.5, 3.0]
"""

from overwindow.errors import WindowRuntimeError, WindowSpecError
from overwindow.evaluate import evaluate
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

try:  # adds GroupedData.overWindow / DataFrame.overWindow when PySpark is importable
    import pyspark  # noqa: F401
except ImportError:  # the batch evaluator works without it (PySpark is the extra overwindow[spark])
    pass
else:
    from overwindow.spark.adapter import register as _register_spark

    _register_spark()

__all__ = [
    "Aggregate",
    "Bound",
    "OverWindow",
    "Exclude",
    "Expr",
    "Frame",
    "FrameUnit",
    "Interval",
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
