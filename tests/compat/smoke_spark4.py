"""Smoke tests for PySpark 4.x only (scripts/compat names this file for 4.x rows, with
tests/spark/test_spark_connect.py): emit on update with the chunked state layout, which runs on
transformWithStateInPandas (new in 4.0, its Python API changed between 4.0 and 4.3)."""

from smoke import kill_and_restart


def test_the_chunked_layout_survives_a_kill_and_restart(tmp_path, no_spark):
    kill_and_restart(tmp_path, "on_update", layout="chunked")
