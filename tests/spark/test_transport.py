"""The state's 7-bit clean form for applyInPandasWithState (overwindow.spark.transport), without
Spark: any bytes come back exactly, Spark sees no byte of 0x80 or more, and the raw state bytes of
checkpoints written before read as they are. Oracle: the bytes given, and the pickle Spark's JVM
writes for a binary value (pickle protocol 2, a latin-1 string), whose size the form keeps to
one byte per byte."""

import pickle

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.spark.transport import TAG, from_spark, to_spark
from overwindow.streaming.state import OnUpdateMeta, encode


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=2000) | st.integers(0, 5000).map(lambda n: np.random.default_rng(n).bytes(n)))
def test_any_bytes_come_back_and_spark_sees_seven_bits(data):
    clean = to_spark(data)
    assert clean.startswith(TAG) and max(clean) < 0x80
    assert from_spark(clean) == data
    assert from_spark(bytearray(clean)) == data  # what Spark's pickle hands the worker
    # as Spark pickles it, the clean form is its own size again, one byte per byte
    assert len(pickle.dumps(bytearray(clean), 2)) < len(clean) + 80


def test_state_written_before_reads_as_it_is():
    """Checkpoints started before hold the state bytes raw: they start with their header's
    length, never the tag."""
    raw = encode({"rows": pa.table({"x": [1, 2]})}, "on_update", OnUpdateMeta(late_rows=3))
    assert not raw.startswith(TAG)
    assert from_spark(bytearray(raw)) == raw
    assert from_spark(to_spark(raw)) == raw
