"""overwindow: SQL window functions (OVER) in batch over pandas/Arrow, and incrementally on Spark
Structured Streaming.

>>> import pandas as pd, overwindow
>>> overwindow.evaluate(pd.DataFrame({"t": [1, 2, 3], "x": [1.0, 2.0, 4.0]}),
...                     "avg(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS a")["a"].tolist()
[1.0, 1.5, 3.0]

The names below load on first use (PEP 562's module ``__getattr__``): a process that imports one of
overwindow's modules alone does not import the rest. PySpark starts several such processes for
each Kafka query (the Kafka source's, ``overwindow.pipeline.kafka``), each importing it in 0.4 s of
CPU here where the whole package takes 1.2 s. ``import overwindow`` still adds ``overWindow`` to
PySpark's DataFrames where PySpark is installed (``overwindow.spark.methods``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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
__all__ = sorted(_NAMES)

# the same names for type checkers and editors (tests/test_init.py: the same), never imported here
if TYPE_CHECKING:
    from overwindow.errors import WindowRuntimeError, WindowSpecError  # noqa: F401
    from overwindow.evaluator import evaluate  # noqa: F401
    from overwindow.logical import (  # noqa: F401
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
    from overwindow.spark.column_sql import session_window as sessionWindow  # noqa: F401
    from overwindow.spark.executors import ship  # noqa: F401
    from overwindow.spark.select import select, sql  # noqa: F401
    from overwindow.spec import OverWindow  # noqa: F401
    from overwindow.streaming.changelog import net_changes  # noqa: F401
    from overwindow.udaf import Aggregate, register_aggregate  # noqa: F401


def __getattr__(name: str):
    """A public name's value, its module imported the first time the name is asked for; then a
    plain attribute. O(1) after the import."""
    if name not in _NAMES:
        raise AttributeError(f"module 'overwindow' has no attribute {name!r}")
    module, attribute = _NAMES[name]
    value = getattr(importlib.import_module(module), attribute)
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
