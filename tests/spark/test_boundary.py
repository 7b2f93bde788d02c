"""The conversion of the pandas frames Spark's workers build into Arrow (overwindow.spark.boundary),
without Spark. Oracle: pyarrow's own pandas conversion (``pa.Table.from_pandas``) of the same frames,
on the path through pandas internals and on the public fallback alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overwindow.spark import boundary
from overwindow.spark.boundary import to_arrow

SCHEMA = pa.schema(
    [
        ("k", pa.int32()),
        ("ts", pa.timestamp("us")),
        ("s", pa.string()),
        ("x", pa.float64()),
        ("b", pa.bool_()),
        ("d", pa.date32()),
    ]
)


@pytest.fixture(params=[True, False], ids=["pandas-internals", "public-fallback"])
def internals(request, monkeypatch):
    """Every test runs twice: through pandas' internals and through the public API only."""
    monkeypatch.setattr(boundary, "PANDAS_INTERNALS", request.param)
    return request.param


def spark_frame(table: pa.Table, order: list[str]) -> pd.DataFrame:
    """A frame as PySpark's applyInPandasWithState worker builds it: one Series per column (timestamps
    as datetime64[ns]), joined by ``pd.concat(axis=1)``, columns in ``order`` (the DataFrame's, which
    may hold columns the machine does not read, such as the whole-stream key)."""
    series = []
    for name in order:
        s = table.column(name).to_pandas().rename(name)
        series.append(s.astype("datetime64[ns]") if name == "ts" else s)
    return pd.concat(series, axis=1)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 30), extra=st.booleans())
def test_to_arrow_reads_every_column_as_from_pandas_does(internals, seed, n, extra):
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.2
    table = pa.table(
        {
            "k": pa.array(
                rng.integers(-5, 5, n), pa.int32(), mask=rng.random(n) < 0.2
            ),  # pandas: float64 with NaN
            "ts": pa.array(rng.integers(0, 10**15, n), pa.timestamp("us"), mask=nulls),
            "s": pa.array([f"v{i}" for i in rng.integers(0, 9, n)], mask=rng.random(n) < 0.2),
            "x": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.2),
            "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.2),
            "d": pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.date32()),
        }
    )
    if extra:
        table = table.append_column("__overwindow_all", pa.array(np.zeros(n, dtype=np.int32)))
    order = list(rng.permutation(table.column_names))
    frame = spark_frame(table, order)
    got = to_arrow(frame, SCHEMA)
    want = pa.Table.from_pandas(frame[SCHEMA.names], schema=SCHEMA, preserve_index=False)
    assert got.schema.equals(SCHEMA)
    assert got.equals(want)


def test_to_arrow_names_a_missing_column(internals):
    frame = pd.concat([pd.Series([1], name="k", dtype="int32")], axis=1)
    with pytest.raises(KeyError, match="ts"):
        to_arrow(frame, SCHEMA)


@pytest.mark.parametrize(
    "zone, utc",
    [
        ("UTC", True),
        ("Etc/UTC", True),
        ("GMT", True),
        ("+00:00", True),
        ("UTC+0", True),
        ("+05:30", False),
        ("GMT-05:00", False),
        ("America/New_York", False),  # daylight saving
        ("Europe/London", False),  # GMT in winter, BST in summer
        ("Asia/Tokyo", False),
    ],
)
def test_a_zone_is_utc_only_if_its_offset_is_always_zero(zone, utc):
    """UTC and its spellings are UTC; offsets and the IANA database's regions (London included,
    which keeps GMT only in winter) are not."""
    assert boundary.utc_always(zone) is utc
