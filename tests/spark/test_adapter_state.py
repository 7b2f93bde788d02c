"""The adapter's state path, without Spark (a stand-in for Spark's GroupState records what the
function sets): at the end of input a key whose rows wait for later rows sets its timeout at
END_OF_INPUT_MS and a watermark past it emits every row it holds; a key left holding nothing has its
state removed; a key past maxRowsPerKey fails naming the bound and the key."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from handback_support import frame, handed_back

import overwindow
from overwindow.spark.adapter import END_OF_INPUT_MS, Runner, visible
from overwindow.spark.handback import Handback
from overwindow.spec import OverWindow
from overwindow.streaming.contract import RowBoundError


class _State:
    """What ``applyInPandasWithState`` hands the function for one key: the watermark, the stored
    state (``get`` is a property, as in PySpark) and the timeout it is given."""

    def __init__(self, watermark_ms: int, value: bytes | None):
        self.watermark_ms, self.value, self.timeout, self.removed = watermark_ms, value, None, False

    def getCurrentWatermarkMs(self):
        return self.watermark_ms

    @property
    def exists(self):
        return self.value is not None

    @property
    def get(self):
        return (self.value,)

    def update(self, row):
        self.value = row[0]

    def setTimeoutTimestamp(self, ms):
        self.timeout = ms

    def remove(self):
        self.value, self.removed = None, True


def test_a_watermark_past_end_of_input_emits_the_rows_waiting_for_later_rows():
    spec = OverWindow(
        "lead(x) OVER (ORDER BY ts) AS nx",
        "sum(x) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING) AS s",
        "row_number() OVER (ORDER BY ts) AS rn",
    )
    schema = pa.schema([("ts", pa.timestamp("us")), ("x", pa.float64())])
    run = Runner(spec, schema, watermarked=True)
    times = pd.to_datetime(["2024-01-01 00:00:01", "2024-01-01 00:00:02", "2024-01-01 00:00:04"])
    rows = pd.DataFrame({"ts": times, "x": [1.0, 2.0, 4.0]})
    last_ms = int(times[-1].value // 1_000_000)
    state, out = None, []
    for watermark_ms, frames in ((0, [rows]), (last_ms + 1000, []), (END_OF_INPUT_MS + 1, [])):
        gs = _State(watermark_ms, state)
        out += list(run(("k",), iter(frames), gs))
        state = gs.value
        if watermark_ms == last_ms + 1000:  # released: the last two rows wait for rows after them
            assert handed_back(out).num_rows == 1 and gs.timeout == END_OF_INPUT_MS
    got = frame(out)
    want = overwindow.evaluate(pa.Table.from_pandas(rows, schema=schema), *spec.expressions)
    pd.testing.assert_frame_equal(got, want.to_pandas(), check_dtype=False)


def test_a_key_left_holding_nothing_has_its_state_removed():
    """Emit on update: once every row of a key is deleted its state is removed, not written empty."""
    spec = OverWindow("sum(x) OVER (ORDER BY t) AS s", emit="on_update", rowKey="id", opColumn="op")
    schema = pa.schema([("id", pa.int64()), ("t", pa.int64()), ("x", pa.float64()), ("op", pa.string())])
    run = Runner(spec, schema, watermarked=False)
    gs = _State(0, None)
    list(run(("k",), iter([pd.DataFrame({"id": [1, 2], "t": [1, 2], "x": [1.0, 2.0], "op": "insert"})]), gs))
    assert gs.exists and not gs.removed
    out = list(run(("k",), iter([pd.DataFrame({"id": [1, 2], "t": [1, 2], "x": [1.0, 2.0], "op": "d"})]), gs))
    assert gs.removed and not gs.exists
    assert frame(out)["_change"].tolist() == ["delete", "delete"]


def test_a_key_past_the_row_bound_fails_naming_the_bound_and_the_key():
    spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", emit="on_update", maxRowsPerKey=2)
    schema = pa.schema([("t", pa.int64()), ("x", pa.float64())])
    run = Runner(spec, schema, watermarked=False)
    with pytest.raises(
        RowBoundError, match=r"\('sensor-7',\) holds 3 rows in state, more than maxRowsPerKey=2"
    ):
        list(
            run(("sensor-7",), iter([pd.DataFrame({"t": [1, 2, 3], "x": [1.0, 2.0, 3.0]})]), _State(0, None))
        )


def test_a_bucket_names_a_computed_keys_late_rows_as_spark_names_the_key(caplog, spark):
    """On key buckets a computed groupBy key is a hidden column of the machine's input
    (``with_key_columns``); the warning for rows dropped as late names the key as Spark names it in
    ``groupBy(...).count()``, not by the hidden column. Oracle for the name: Spark's own column."""
    import pyspark.sql.functions as F

    from overwindow.spark.counts import WINDOWS, Stage
    from overwindow.spark.grouping import HIDDEN_KEY, with_key_columns

    df = spark.createDataFrame([(1.5, 1, 1.0)], "k DOUBLE, t BIGINT, x DOUBLE")
    key = F.col("k") * 2.0
    _, keys, shown = with_key_columns(df, df.groupBy(key), df.columns)
    spark_name = df.groupBy(key).count().columns[0]
    assert keys == (f"{HIDDEN_KEY}0",) and shown == {keys[0]: spark_name}

    spec = OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s", emit="on_window_close", keyBuckets=2)
    schema = pa.schema([("k", pa.float64()), ("t", pa.int64()), ("x", pa.float64()), (keys[0], pa.float64())])
    run = Runner(spec, schema, watermarked=True, keys=keys, stage=Stage(WINDOWS.words, shown))
    first = pd.DataFrame({"k": [1.5, 2.5], "t": [100, 100], "x": [1.0, 2.0], keys[0]: [3.0, 5.0]})
    gs = _State(50, None)
    list(run((np.int64(1),), iter([first]), gs))
    gs.watermark_ms = 60  # the row at t=3 is behind the watermark the bucket had passed: late
    later = pd.DataFrame({"k": [2.5], "t": [3], "x": [1.0], keys[0]: [5.0]})
    with caplog.at_level("WARNING", logger="overwindow"):
        list(run((np.int64(1),), iter([later]), gs))
    (message,) = [r.getMessage() for r in caplog.records if "late" in r.getMessage()]
    assert f"key {spark_name}=5.0" in message and HIDDEN_KEY not in message, message


def test_a_keys_output_goes_back_in_arrow_streams_of_at_most_the_rows_given():
    """A key's output is handed back to Spark as Arrow streams of at most ``Handback.rows`` rows,
    which Spark reads back in batches of that size; together its rows as the batch evaluator gives
    them."""
    spec = OverWindow("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS s", emit="on_update", rowKey="id")
    schema = pa.schema([("id", pa.int64()), ("t", pa.int64()), ("x", pa.float64())])
    x = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    rows = pd.DataFrame({"id": range(7), "t": [5, 1, 7, 2, 6, 3, 4], "x": x})
    run = Runner(spec, schema, watermarked=False)
    run = Runner(spec, schema, watermarked=False, back=Handback(visible(run.machine.output_schema), rows=3))
    frames = list(run(("k",), iter([rows]), _State(0, None)))
    assert [b.num_rows for b in handed_back(frames).to_batches()] == [3, 3, 1]
    got = frame(frames).sort_values("id").reset_index(drop=True).drop(columns="_change")
    want = overwindow.evaluate(pa.Table.from_pandas(rows, schema=schema), *spec.expressions).to_pandas()
    pd.testing.assert_frame_equal(got, want.sort_values("id").reset_index(drop=True), check_dtype=False)
