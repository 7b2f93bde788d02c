"""A Spark Connect Column of a grouped-aggregate pandas_udf is read from what the client holds (its
function and declared type, which Connect ships to its server pickled): the call joins overwindow's
catalog under the UDF's name, over its arguments; another kind of Python UDF stays refused by name.
No Spark session: the Connect expressions are built as PySpark's client builds them."""

import pandas as pd
from pyspark.sql.connect.expressions import ColumnReference, CommonInlineUserDefinedFunction, PythonUDF
from pyspark.sql.types import DoubleType

from overwindow.logical.functions import lookup
from overwindow.spark import columns as C
from overwindow.spark.pandas_udf import GROUPED_AGG

SCALAR = 200  # PySpark's PythonEvalType.SQL_SCALAR_PANDAS_UDF


def _call(name, eval_type, function, *arguments):
    udf = PythonUDF(DoubleType(), eval_type, function, "3.11")
    return CommonInlineUserDefinedFunction(name, udf, False, [ColumnReference(a) for a in arguments])


def test_a_connect_grouped_aggregate_pandas_udf_joins_the_catalog_under_its_name():
    def weighted(v: pd.Series, w: pd.Series) -> float:
        return float((v * w).sum())

    node = C._connect(_call("cn_weighted", GROUPED_AGG, weighted, "x", "n"))
    assert node.kind == "function" and node.name == "cn_weighted"
    assert [a.name for a in node.args] == [("x",), ("n",)]
    info = lookup("cn_weighted")
    assert info.kind_words == "the pandas_udf" and len(info.args) == 2


def test_another_python_udf_on_connect_stays_refused_by_name():
    node = C._connect(_call("cn_twice", SCALAR, lambda v: v * 2, "x"))
    assert node.kind == "opaque" and node.text == "the Python UDF cn_twice"
