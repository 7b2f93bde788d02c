"""Importing overwindow adds overWindow to classic Spark's DataFrames at once and to Spark Connect's
once Connect is imported, in either order, without importing Spark Connect (grpc, protobuf) itself:
every Python worker of a query imports overwindow. In fresh interpreters (this one may have imported
Connect already); no Spark starts."""

import subprocess
import sys

CHECK = """
import sys
{first}
import overwindow
assert ("pyspark.sql.connect.dataframe" in sys.modules) == {connect_first}, "connect imported"
assert not {{"grpc", "google.protobuf"}} & set(sys.modules) or {connect_first}, "grpc imported"
from pyspark.sql import DataFrame
from pyspark.sql.group import GroupedData
from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
from pyspark.sql.connect.group import GroupedData as ConnectGroupedData
from overwindow.spark.methods import over_window, whole_stream
assert DataFrame.overWindow is ConnectDataFrame.overWindow is whole_stream
assert GroupedData.overWindow is ConnectGroupedData.overWindow is over_window
print("ok")
"""


def test_connect_gets_over_window_when_imported_before_or_after_overwindow():
    for first, connect_first in (("", False), ("import pyspark.sql.connect.dataframe", True)):
        code = CHECK.format(first=first, connect_first=connect_first)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == "ok", (first, done.stderr[-2000:])
