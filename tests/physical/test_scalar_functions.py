"""The functions on strings and dates and the rounding ones (physical/scalar_functions.py) where
Spark's behaviour is its own (probed on Spark 4.3); against Spark itself: tests/spark/test_parity.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from overwindow import WindowRuntimeError
from overwindow.logical.expr import Expr
from overwindow.physical.expressions import evaluate_expr


def test_a_substring_position_past_int_fails_the_row_as_spark_s_cast_does():
    """Spark casts a BIGINT position to INT and fails past its range (CAST_OVERFLOW, probed on
    Spark 4.3); it was read as a position past the end."""
    t = pa.table({"s": ["abc"], "p": pa.array([3_000_000_000], pa.int64())})
    with pytest.raises(WindowRuntimeError, match="INT"):
        evaluate_expr(Expr.of("substr(s, p)"), t)
    assert evaluate_expr(Expr.of("substr(s, p - 2999999998)"), t).to_pylist() == ["bc"]
