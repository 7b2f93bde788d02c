"""Rows handed back to Spark as Arrow streams (overwindow.spark.handback), without Spark: what the
``mapInArrow`` after an operator reads of its frames (the frames' column as PySpark's pandas
conversion makes it Arrow) is the operator's table, value for value. Oracle: the table itself, cast
by Arrow to the schema Spark reads; random tables with NULL, NaN, +-inf, -0.0, 38-digit DECIMAL,
times before 1970, nested values."""

from __future__ import annotations

import decimal
import math

import numpy as np
import pyarrow as pa
import pytest
from handback_support import handed_back
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overwindow.spark.handback import BATCH_BYTES, RECORDS, ROWS, ROWS_A_ROW, STREAM_BYTES, Handback

FLOATS = [None, float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.5, -2.25e300, 5e-324]
DECIMALS = [
    None,
    decimal.Decimal("-" + "9" * 28 + ".0123456789"),
    decimal.Decimal("0E-10"),
    decimal.Decimal("1.5"),
]


def _table(rng, n: int) -> pa.Table:
    pick = lambda values: [values[i] for i in rng.integers(0, len(values), n)]  # noqa: E731
    ts = rng.integers(-(10**17), 10**17, n)
    return pa.table(
        {
            "k": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64), mask=rng.random(n) < 0.2),
            "x": pa.array(pick(FLOATS), pa.float64()),
            "d": pa.array(pick(DECIMALS), pa.decimal128(38, 10)),
            "s": pa.array(pick([None, "", "é", "a" * 40])),
            "ts": pa.array(ts, pa.timestamp("us"), mask=rng.random(n) < 0.1),  # naive, as the machines'
            "day": pa.array(rng.integers(-700_000, 700_000, n).astype(np.int32), pa.date32()),
            "span": pa.array(rng.integers(-(10**15), 10**15, n), pa.duration("us")),
            "xs": pa.array(
                [None if rng.random() < 0.2 else pick(FLOATS)[: int(rng.integers(0, 4))] for _ in range(n)],
                pa.list_(pa.float64()),
            ),
            "nothing": pa.nulls(n),
        }
    )


SPARK = pa.schema(  # the schema Spark reads for these columns (TIMESTAMP: UTC instants)
    [
        ("k", pa.int64()),
        ("x", pa.float64()),
        ("d", pa.decimal128(38, 10)),
        ("s", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("day", pa.date32()),
        ("span", pa.duration("us")),
        ("xs", pa.list_(pa.float64())),
        ("nothing", pa.null()),
    ]
)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300), rows=st.sampled_from([None, 1, 7, 64, 65, 200]))
def test_spark_reads_back_the_table_value_for_value(seed, n, rows):
    """Every value as it was (NaN apart from NULL, -0.0's sign, BIGINT whole, naive times as the
    same UTC instants), in streams of at most ``rows`` rows, each a frame row per ``ROWS_A_ROW``."""
    table = _table(np.random.default_rng(seed), n)
    frames = list(Handback(SPARK, rows).frames(table))
    back = handed_back(frames)
    if not n:
        assert back is None and not frames
        return
    sizes = [b.num_rows for b in back.to_batches()]
    assert sum(sizes) == n and max(sizes) <= (rows or n)
    assert [len(f) for f in frames] == [math.ceil(size / ROWS_A_ROW) for size in sizes]  # narrow rows
    assert [f[ROWS].notna().tolist() for f in frames] == [[True] + [False] * (len(f) - 1) for f in frames]
    assert back.schema == SPARK
    for name in table.column_names:
        got, want = back.column(name), table.column(name)
        if name == "ts":
            assert got.cast(pa.int64()).equals(want.cast(pa.int64())), name
        else:  # repr: NaN equal to NaN, -0.0 apart from 0.0
            assert repr(got.to_pylist()) == repr(want.to_pylist()), name


def test_a_value_spark_cannot_hold_in_its_type_is_refused_not_changed():
    """A cast that would change a value (a BIGINT past INT) fails the call, as PySpark's own safe
    conversion of a pandas frame fails it: never a wrapped or NULL value."""
    with pytest.raises(pa.ArrowInvalid):
        list(Handback(pa.schema([("n", pa.int32())])).frames(pa.table({"n": [2**40]})))


def _pyspark_batches(frames, records: int) -> list[list]:
    """The frames of ``frames`` as PySpark's applyInPandasWithState sends them: a batch ends once
    its frames' rows pass ``records`` (checked after each frame; pyspark/worker.py)."""
    batches, current, count = [], [], 0
    for f in frames:
        current.append(f)
        count += len(f)
        if count > records:
            batches.append(current)
            current, count = [], 0
    return batches + ([current] if current else [])


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 2_000),
    width=st.sampled_from([0, 50, 700, 3_500, 60_000]),
    rows=st.sampled_from([None, 20, 5_000]),
)
def test_an_output_batch_holds_a_bounded_number_of_rows_and_bytes_however_wide_the_rows(seed, n, width, rows):
    """Each frame row stands for at most ``ROWS_A_ROW`` rows and ``row_bytes`` bytes of its
    stream, and for no fewer than the frame needs; so a batch PySpark sends, flushed by frame rows,
    holds at most ``ROWS_A_ROW`` rows and ``row_bytes`` bytes a row of ``2 * rows`` (Spark's
    records) beside the stream that passed the count. Before, a frame row stood for 64 rows
    however wide, and a call's streams went as one frame: 640,000 rows of 3.4 KB in one batch of a
    binary column that holds 2 GiB."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, width + 1, n)
    table = pa.table({"k": np.arange(n), "s": ["x" * int(m) for m in lengths]})
    back = Handback(table.schema, rows)
    frames = list(back.frames(table))
    streams = [f[ROWS].iloc[0] for f in frames]
    for f, stream in zip(frames, streams):
        held = pa.ipc.open_stream(stream).read_all().num_rows
        need = len(f)
        assert held <= ROWS_A_ROW * need and len(stream) <= back.row_bytes * need
        assert need == 1 or held > ROWS_A_ROW * (need - 1) or len(stream) > back.row_bytes * (need - 1)
        assert len(stream) <= STREAM_BYTES + 4096 or held == 1
    records = 2 * rows if rows else RECORDS
    for batch in _pyspark_batches(frames, records):
        nbytes = sum(len(f[ROWS].iloc[0]) for f in batch)
        assert nbytes <= records * back.row_bytes + len(batch[-1][ROWS].iloc[0])
        assert nbytes <= BATCH_BYTES + STREAM_BYTES + 4096
    assert handed_back(frames).equals(table)


def test_a_stream_holds_at_most_stream_bytes_of_rows():
    """Rows of 20 MB go back in streams of one (a lone row larger than ``STREAM_BYTES`` goes alone)."""
    table = pa.table({"s": ["y" * (20 << 20), "z" * (20 << 20), "", "w" * (40 << 20)]})
    frames = list(Handback(table.schema, 5_000).frames(table))
    assert [pa.ipc.open_stream(f[ROWS].iloc[0]).read_all().num_rows for f in frames] == [1, 1, 1, 1]
    assert handed_back(frames).equals(table)
