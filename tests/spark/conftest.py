"""Fixtures of the Spark tests: the RocksDB state store for one test; a Python like a cluster
worker's (PySpark, pandas, pyarrow, numpy, but not overwindow)."""

import os
import subprocess
import sys
import sysconfig

import pytest

from overwindow.spark.adapter import use_rocksdb

HIDDEN = ("overwindow", "__editable__", "sqlglot", "sortedcontainers")  # and their dist-info folders


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory):
    """A venv of this interpreter's version whose site-packages links every package installed here
    but overwindow and its pure-Python dependencies (sqlglot, sortedcontainers): the Python of a
    worker on which only Spark's own Python needs are installed. Returns a launcher of it that
    notes each start in a line of the file ``started`` in the venv's folder."""
    root = tmp_path_factory.mktemp("bare-python")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next(root.glob("lib/python*/site-packages"))
    ours = sysconfig.get_paths()["purelib"]
    for entry in os.listdir(ours):
        if not entry.lower().startswith(HIDDEN):
            (site / entry).symlink_to(os.path.join(ours, entry))
    python = root / "bin" / "worker-python"
    python.write_text(f'#!/bin/sh\necho "$$" >> "{root}/started"\nexec "{root}/bin/python" "$@"\n')
    python.chmod(0o755)
    python = str(python)
    subprocess.run([python, "-c", "import pyspark, pandas, pyarrow, numpy"], check=True)
    for module in ("overwindow", "sqlglot", "sortedcontainers"):
        missing = subprocess.run([python, "-c", f"import {module}"], capture_output=True, cwd=root)
        assert missing.returncode != 0, f"{module} is importable in the bare Python"
    return python


@pytest.fixture
def rocksdb(spark):
    """The RocksDB state store for one test (transformWithStateInPandas needs it)."""
    keys = [
        "spark.sql.streaming.stateStore.providerClass",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
    ]
    before = [spark.conf.get(k, None) for k in keys]
    use_rocksdb(spark)
    yield
    for k, v in zip(keys, before):
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


@pytest.fixture
def chained(spark):
    """Spark's check of chained stateful operators off for one test (overwindow.spark.fanout)."""
    from overwindow.spark.fanout import CHECK

    before = spark.conf.get(CHECK, None)
    spark.conf.set(CHECK, "false")
    yield
    spark.conf.unset(CHECK) if before is None else spark.conf.set(CHECK, before)
