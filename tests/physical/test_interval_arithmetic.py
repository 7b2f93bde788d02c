"""Date, time and interval arithmetic (physical/interval_arithmetic.py) where Spark's behaviour is
its own (measured in Spark 4); against Spark itself: tests/spark/test_parity.py."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from overwindow import WindowSpecError, evaluate


def test_date_plus_days_wraps_as_spark_does():
    """Spark's date_add adds in Java ints, unchecked even in ANSI mode: measured in Spark 4,
    datediff(DATE '2024-01-01' + 2147483647, DATE '1970-01-01') is -2147463926, and
    datediff(DATE '9999-12-31' + 1, DATE '1970-01-01') is 2932897."""
    t = pa.table({"t": [1, 2], "d": pa.array([dt.date(2024, 1, 1), dt.date(9999, 12, 31)], pa.date32())})
    out = evaluate(
        t, "lag(d + 2147483647, 0) OVER (ORDER BY t) AS a", "lead(d + 1, 0) OVER (ORDER BY t) AS b"
    )
    assert out["a"].type == pa.date32() and out["a"].cast(pa.int32()).to_pylist()[0] == -2147463926
    assert out["b"].cast(pa.int32()).to_pylist()[1] == 2932897
    with pytest.raises(WindowSpecError, match="must be an INT, SMALLINT or TINYINT, not BIGINT"):
        evaluate(t, "lag(d + CAST(1 AS BIGINT)) OVER (ORDER BY t) AS r")
