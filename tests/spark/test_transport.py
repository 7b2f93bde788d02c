"""The state's compressed 7-bit clean form for applyInPandasWithState (overwindow.spark.transport),
without Spark: any bytes come back exactly, Spark sees no byte of 0x80 or more, a state's repeats
make it smaller, and the states of checkpoints written before (raw, or 7-bit clean without
compression) read as they are. Oracle: the bytes given, and the pickle Spark's JVM writes for a
binary value (pickle protocol 2, a latin-1 string), whose size the form keeps to one byte per
byte."""

import pickle

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.spark.transport import TAG, from_spark, to_spark
from overwindow.streaming.state import OnUpdateMeta, decode, encode


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=2000) | st.integers(0, 5000).map(lambda n: np.random.default_rng(n).bytes(n)))
def test_any_bytes_come_back_and_spark_sees_seven_bits(data):
    clean = to_spark(data)
    assert clean.startswith(TAG) and max(clean) < 0x80
    assert from_spark(clean) == data
    assert from_spark(bytearray(clean)) == data  # what Spark's pickle hands the worker
    # as Spark pickles it, the clean form is its own size again, one byte per byte
    assert len(pickle.dumps(bytearray(clean), 2)) < len(clean) + 80


def test_a_state_with_repeats_travels_smaller():
    rows = pa.table({"k": np.repeat(np.arange(1000), 10), "t": np.arange(10_000) * 1000})
    raw = encode({"rows": rows}, "on_update", OnUpdateMeta())
    assert len(to_spark(raw)) < len(raw) / 4


_TABLE = pa.table({"x": [1.5, -2.0, None], "k": ["a", "b\u00e9", None]})
# to_spark(encode({"rows": _TABLE}, "on_update", OnUpdateMeta(late_rows=3))) as the release before
# wrote it (7-bit clean, not compressed): checkpoints started then hold it
_SEVEN_BIT_BEFORE = bytes.fromhex(
    "4f57377f16050000000a0000007b2276657273696f6e223a20322c20226b696e64223a20226f6e5f757064617465222c"
    "20227461626c6573223a205b22726f7773225d2c20226d657461223a207b22657669637465645f726f7773223a20302c"
    "2022657669637465645f67726f757073223a20302c2022686f72697a6f6e223a206e756c6c2c20226c6174655f726f77"
    "73223a20337d7d00020000000000007f7f7f7f600000001000000000000a000e000600050008000a0000000001040010"
    "00000000000a000c000000040008000a0000004400000004000000010000000c00000008000c00040008000800000010"
    "000000040000000100000031000000100000006f76657277696e646f772e737461746500000000020000004000000004"
    "000000587f7f7f0000010510000000180000000400000000000000010000006b00000004000400040000001000140008"
    "00060007000c000000100010000000000001031000000018000000040000000000000001000000780006000800060006"
    "000000000002007f7f7f7f4800000014000000000000000c0016000600050008000c000c000000000304001800000040"
    "0000000000000000000a0018000c00040008000a0000006c000000100000000300000000000000000000000500000000"
    "000000000000000100000000000000080000000000000018000000000000002000000000000000010000000000000028"
    "000000000000001000000000000000380000000000000004000000000000000000000002000000030000000000000001"
    "00000000000000030000000000000001000000000000000300000000000000000000000000783f000000000000004000"
    "0000000000000003000000000000000000000001000000040000000400000061624329000000007f7f7f7f0000000000"
    "000000000000000000000000000000000003600000000000000000000000000000003c00000000000000000000000360"
    "00000000000000000000000000000000000000000000000000000804000000004340400002000000010000000006"
)


def test_states_written_before_read_as_they_are():
    """Checkpoints started before hold the state bytes raw (they start with their header's length)
    or 7-bit clean without compression."""
    raw = encode({"rows": _TABLE}, "on_update", OnUpdateMeta(late_rows=3))
    assert not raw.startswith(TAG)
    assert from_spark(bytearray(raw)) == raw
    for before in (raw, _SEVEN_BIT_BEFORE):
        tables, meta = decode(from_spark(bytearray(before)), "on_update", OnUpdateMeta)
        assert tables["rows"].equals(_TABLE) and meta.late_rows == 3
    assert from_spark(to_spark(raw)) == raw
