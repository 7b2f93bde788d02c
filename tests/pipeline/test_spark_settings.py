"""Spark memory and other settings from the view's [spark] section and OVERWINDOW_SPARK_CONF reach
the session the job starts (its JVM's heap is the driver memory asked for): a view can raise the
1 GB default that a large micro-batch ran out of."""

import os
import subprocess
import sys
import textwrap

SCRIPT = r"""
import sys
from overwindow.pipeline.session import local_spark, spark_settings
from overwindow.pipeline.view import load_view
spark = local_spark(settings=spark_settings(load_view(sys.argv[1])))
heap = spark._jvm.java.lang.Runtime.getRuntime().maxMemory()
memory = spark.sparkContext.getConf().get("spark.driver.memory")
# Spark's check whether a stopped query's error is an interruption (StreamExecution.PROXY_ERROR),
# on a Py4J error as long as one with a Python traceback and Java stack traces
proxy_error = spark._jvm.java.util.regex.Pattern.compile(
    "py4j.protocol.Py4JJavaError: An error occurred while calling((.|\\r\\n|\\r|\\n)*)"
    "(java.lang.InterruptedException|java.io.InterruptedIOException)"
)
error = "py4j.protocol.Py4JJavaError: An error occurred while calling o1.x.\n"
error += "\tat a.B.c(B.java:1)\n" * 1500
found = proxy_error.matcher(error + "java.lang.InterruptedException").find()
print(memory, heap, spark.conf.get("spark.sql.shuffle.partitions"), len(error), found)
spark.stop()
"""


def test_view_and_environment_set_spark_memory(tmp_path, no_spark):
    view = tmp_path / "view.toml"
    view.write_text(
        textwrap.dedent("""
        [source]
        format = "files"
        path = "events"
        schema = "k STRING, t BIGINT, x DOUBLE"

        [view]
        calls = ["sum(x) OVER (ORDER BY t) AS s"]
        emit = "on_update"

        [sink]
        kind = "console"
        checkpoint = "chk"

        [spark]
        "spark.driver.memory" = "1500m"
    """)
    )
    env = dict(os.environ, OVERWINDOW_SPARK_CONF="spark.driver.memory=600m spark.sql.shuffle.partitions=3")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(view)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    memory, heap, partitions, length, found = out.stdout.split()
    assert memory == "1500m" and partitions == "3"  # the view's over the environment's; the rest kept
    assert 1300 * 2**20 < int(heap) <= 1500 * 2**20  # the JVM's -Xmx (less a survivor space)
    # a thread's default stack overflows on some 3,000 characters (a StackOverflowError on Ctrl-C)
    assert int(length) > 30_000 and found == "True"
