"""The Spark session a job runs on: the settings it takes (``OVERWINDOW_SPARK_CONF`` and a view's
``[spark]``, ``spark_settings``) and the session itself (``local_spark``), set up the way overwindow
runs best (its docstring lists how); a job of several views runs on one. The job calls it as
``overwindow.pipeline.job.local_spark``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

from overwindow.pipeline import jvm_stderr
from overwindow.pipeline.view import View
from overwindow.spark import compat, executors
from overwindow.spark.adapter import WORKER_WARNINGS


def spark_settings(view: View | None = None) -> dict:
    """Spark settings for the session the job starts: ``OVERWINDOW_SPARK_CONF`` (``key=value`` pairs
    separated by spaces, for every view run here), then the view's ``[spark]`` section over them.

    >>> os.environ["OVERWINDOW_SPARK_CONF"] = "spark.driver.memory=2g spark.sql.shuffle.partitions=4"
    >>> spark_settings(View("v.toml", {}, None, [], [], "on_update", None, None, {}, "chk",
    ...                     spark={"spark.driver.memory": "6g"}))
    {'spark.driver.memory': '6g', 'spark.sql.shuffle.partitions': '4'}
    >>> del os.environ["OVERWINDOW_SPARK_CONF"]
    """
    settings = {}
    for item in os.environ.get("OVERWINDOW_SPARK_CONF", "").split():
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("spark."):
            raise ValueError(
                f"OVERWINDOW_SPARK_CONF: {item!r} is not a Spark setting; write key=value pairs separated "
                "by spaces, e.g. OVERWINDOW_SPARK_CONF='spark.driver.memory=4g spark.executor.memory=4g'"
            )
        settings[key] = value
    return {**settings, **(view.spark if view is not None else {})}


def local_spark(app: str = "overwindow", settings: dict | None = None, debug: bool = False):
    """The active SparkSession, or one set up the way overwindow runs best, with ``settings``
    (``spark_settings``) over its defaults: on ``local[2]`` (Python workers run this interpreter
    unless PYSPARK_PYTHON says otherwise), or on the master ``OVERWINDOW_MASTER`` names, whose
    executors get the package shipped (``executors.ship``, and ``executors.on_driver_path`` for the
    Python Spark starts beside the driver); no UI, no console progress bars (they
    would cut into the progress lines), and Spark's own log off unless ``debug`` (a failure is
    reported by the job in one line; ``--debug`` shows Spark's account) and the JVM's chatter on
    stderr left out unless ``debug`` (``jvm_stderr``); a ``PYSPARK_PYTHON`` that
    cannot run the workers is refused before Spark starts (``executors.check_worker_python``,
    WorkerPythonError). Settings that only a new
    session takes (memory, master) are ignored, with a warning, when a session is active."""
    from pyspark.sql import SparkSession

    settings = settings or {}
    active = SparkSession.getActiveSession()
    if active is not None:
        for key, value in settings.items():
            if active.conf.isModifiable(key):
                active.conf.set(key, value)
            elif active.conf.get(key, None) != value:
                print(f"overwindow: {key}={value} needs a new Spark session; ignored", file=sys.stderr)
        return active
    master = os.environ.get("OVERWINDOW_MASTER", "local[2]")
    if executors.is_local(master):
        executors.check_worker_python(master)  # said now, not after the first micro-batch
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    if os.environ.get(
        "OVERWINDOW_SPARK_PACKAGES"
    ):  # e.g. Spark's Kafka connector, fetched from Maven Central
        builder = builder.config("spark.jars.packages", os.environ["OVERWINDOW_SPARK_PACKAGES"])
    builder = (
        builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.sql.streaming.minBatchesToRetain", "10")
        .config(*WORKER_WARNINGS)
        # Spark tells a stopped query's error by a backtracking regex (StreamExecution.PROXY_ERROR)
        # that overflows a thread's default stack on a Py4J error of some 3,000 characters (Ctrl-C
        # during a foreachBatch write brings one, with a Python traceback): the stream thread then
        # dies with a StackOverflowError on stderr. 32 MB of stack reach past 90,000 characters
        .config("spark.driver.defaultJavaOptions", "-Xss32m")
    )
    for key, value in settings.items():
        builder = builder.config(key, value)
    if not executors.is_local(master):
        executors.on_driver_path()  # before the JVM starts: it passes PYTHONPATH on
    with contextlib.nullcontext() if debug else jvm_stderr.filtered_for_children():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN" if debug else "OFF")
    if executors.is_local(master) and compat.CHECKPOINT_MANAGER not in settings:
        # checkpoints on a local disk: one rename(2) per file, not a process; the FileSystem
        # manager's check-then-rename has no second writer to race (job_lock)
        compat.use_filesystem_checkpoints(spark)
    if not debug:  # py4j logs each broken call (a stopped query's callbacks) with its traceback
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
    if not executors.is_local(master):
        executors.ship(spark)
    return spark
